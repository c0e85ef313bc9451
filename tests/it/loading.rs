//! Loading components: what loads, and the errors for what does not.

use std::path::Path;

use piton_host::config::Config;
use piton_host::plugins::{self, PluginsAt};
use piton_host::{Hints, LoadErrorKind, ToolSource};
use piton_tests::{guests, plugins as examples};

use crate::support::*;

#[tokio::test]
async fn a_component_reads_its_spec_and_hints_at_load() {
    let tool = load(examples::WORD_COUNT).await;
    use piton_host::Tool as _;
    let spec = tool.spec();
    assert_eq!(spec.name, "word_count");
    assert_eq!(spec.description, "Count the words in a text.");
    assert!(spec.parallel);
    assert_eq!(spec.input_schema["type"], "object");
    assert_eq!(spec.input_schema["properties"]["text"]["type"], "string");
    assert_eq!(
        spec.input_schema["properties"]["text"]["description"],
        "The text to count"
    );
    assert_eq!(tool.hints(), Hints::read_only(false));
    assert_eq!(tool.source(), ToolSource::File(examples::WORD_COUNT.into()));
    assert!(
        tool.info().imports.iter().any(|i| i.starts_with("wasi:")),
        "{:?}",
        tool.info().imports
    );
}

#[tokio::test]
async fn a_command_component_is_not_a_tool() {
    let error = runtime()
        .load_file(Path::new(guests::HOSTILE_NOT_A_TOOL))
        .await
        .unwrap_err();
    assert!(matches!(error.kind, LoadErrorKind::Contract(_)), "{error}");
    let message = error.to_string();
    assert!(message.contains("hostile-not-a-tool.wasm"), "{message}");
    assert!(message.contains("piton:tool"), "{message}");
}

#[tokio::test]
async fn bytes_that_are_not_wasm_do_not_load() {
    let error = runtime()
        .load(ToolSource::Bundled("junk".into()), b"\0asm junk".to_vec())
        .await
        .unwrap_err();
    assert!(matches!(error.kind, LoadErrorKind::Compile(_)), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("bundled:junk: not a loadable WebAssembly component"),
        "{error}"
    );
}

#[tokio::test]
async fn a_missing_plugins_folder_says_how_to_fix_it() {
    let error = plugins::load(
        runtime(),
        &PluginsAt::Folder("/no/such/folder".into()),
        &Config::default(),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("/no/such/folder"), "{message}");
    assert!(message.contains("--plugins DIR"), "{message}");
}

#[tokio::test]
async fn the_bundled_examples_all_load() {
    let loaded = plugins::load(runtime(), &PluginsAt::Bundled, &Config::default())
        .await
        .unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert_eq!(
        loaded.registry.names(),
        [
            "checkerboard",
            "fetch_url",
            "files",
            "read_file",
            "word_count"
        ]
    );
}

#[tokio::test]
async fn a_folder_loads_every_good_plugin_and_reports_the_bad() {
    let folder = plugins_folder(&[
        ("1.wasm", examples::WORD_COUNT),
        ("2.wasm", examples::WORD_COUNT),
        ("3.wasm", guests::HOSTILE_NOT_A_TOOL),
        ("4.wasm", guests::HOSTILE_COUNTER),
    ]);
    std::fs::write(folder.path().join("notes.txt"), "not a plugin, ignored").unwrap();
    let loaded = plugins::load(
        runtime(),
        &PluginsAt::Folder(folder.path().into()),
        &Config::default(),
    )
    .await
    .unwrap();
    assert_eq!(loaded.registry.names(), ["counter", "word_count"]);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("2.wasm: tool `word_count` is also defined by")
            && errors[0].contains("1.wasm"),
        "{errors:?}"
    );
    assert!(errors[1].contains("3.wasm: does not fit"), "{errors:?}");
}
