//! Loading components: what loads, and the errors for what does not.

use std::path::Path;

use piton_host::config::Config;
use piton_host::loader::Loader;
use piton_host::plugins::PluginsAt;
use piton_host::wasm::LoadFrom;
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
    assert_eq!(tool.hints(), Hints::read_only().open_world(false));
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
        .load(LoadFrom::File(guests::HOSTILE_NOT_A_TOOL.into()), None)
        .await
        .unwrap_err();
    assert!(matches!(error.kind, LoadErrorKind::Contract(_)), "{error}");
    let message = error.to_string();
    assert!(message.contains("hostile-not-a-tool.wasm"), "{message}");
    assert!(message.contains("not a piton tool"), "{message}");
}

#[tokio::test]
async fn bytes_that_are_not_wasm_do_not_load() {
    let error = runtime()
        .load(
            LoadFrom::Bytes(ToolSource::Bundled("junk".into()), b"\0asm junk".to_vec()),
            None,
        )
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
    let error = Loader::new(
        runtime().clone(),
        PluginsAt::Folder("/no/such/folder".into()),
    )
    .with_config(Config::default())
    .load()
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("/no/such/folder"), "{message}");
    assert!(message.contains("--plugins DIR"), "{message}");
}

#[tokio::test]
async fn the_bundled_examples_all_load() {
    let loaded = Loader::new(runtime().clone(), PluginsAt::Bundled)
        .with_config(Config::default())
        .load()
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
    let loaded = Loader::new(runtime().clone(), PluginsAt::Folder(folder.path().into()))
        .with_config(Config::default())
        .load()
        .await
        .unwrap();
    // Two files declaring word_count: neither is served (see the squat tests).
    assert_eq!(loaded.registry.names(), ["counter"]);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].contains("1.wasm: tool `word_count` is also declared by")
            && errors[0].contains("2.wasm"),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("2.wasm: tool `word_count` is also declared by")
            && errors[1].contains("1.wasm"),
        "{errors:?}"
    );
    assert!(
        errors[2].contains("3.wasm: a wasi:cli command"),
        "{errors:?}"
    );
}

/// The load error of `bytes` saved as `name` in a plugins folder of its own, as the
/// CLI prints it (the folder's path left out).
async fn load_error_of(name: &str, bytes: &[u8]) -> String {
    let folder = tempfile::tempdir().expect("temp dir");
    std::fs::write(folder.path().join(name), bytes).expect("write the file");
    only_error(folder.path()).await
}

async fn only_error(folder: &Path) -> String {
    let loaded = Loader::new(runtime().clone(), PluginsAt::Folder(folder.into()))
        .with_config(Config::default())
        .load()
        .await
        .expect("the folder reads");
    assert_eq!(loaded.errors.len(), 1, "{:?}", loaded.errors);
    let message = loaded.errors[0].to_string();
    assert!(!message.contains('\n'), "one line: {message}");
    message.replace(&format!("{}/", folder.display()), "")
}

/// `word_count` with every `from` in its bytes (names, of equal length) made `to`.
fn word_count_renamed(from: &str, to: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(examples::WORD_COUNT).expect("word_count is built");
    assert!(rename(&mut bytes, from, to) > 0, "{from} is in word_count");
    bytes
}

#[tokio::test]
async fn a_file_that_is_not_wasm_is_one_line_saying_so() {
    assert_eq!(
        load_error_of("notes.wasm", b"not wasm at all").await,
        "notes.wasm: not WebAssembly (no \\0asm header at its start); remove it from the \
         plugins folder, or build the tool for wasm32-wasip2"
    );
    assert_eq!(
        load_error_of("empty.wasm", b"").await,
        "empty.wasm: an empty file; remove it from the plugins folder, or build the tool \
         for wasm32-wasip2"
    );
}

#[tokio::test]
async fn a_core_module_is_one_line_saying_to_make_a_component() {
    assert_eq!(
        load_error_of("core.wasm", b"\0asm\x01\0\0\0").await,
        "core.wasm: a core WebAssembly module, not a component; build the tool for \
         wasm32-wasip2, or wrap the module with `wasm-tools component new`"
    );
}

#[tokio::test]
async fn a_truncated_component_is_one_line_saying_so() {
    let bytes = std::fs::read(examples::WORD_COUNT).unwrap();
    let half = &bytes[..bytes.len() / 2];
    assert_eq!(
        load_error_of("cut.wasm", half).await,
        format!(
            "cut.wasm: a truncated component (it ends early, at {} bytes); copy or build \
             it again",
            half.len()
        )
    );
}

#[tokio::test]
async fn a_wasi_command_is_one_line_saying_it_is_not_a_tool() {
    let bytes = std::fs::read(guests::HOSTILE_NOT_A_TOOL).unwrap();
    assert_eq!(
        load_error_of("cmd.wasm", &bytes).await,
        "cmd.wasm: a wasi:cli command (it exports wasi:cli/run), not a piton tool; write \
         the tool as a library (crate-type cdylib) with piton-guest-sdk's #[tool] and \
         build it for wasm32-wasip2"
    );
}

#[tokio::test]
async fn a_folder_named_dot_wasm_is_one_line_saying_so() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir(folder.path().join("x.wasm")).unwrap();
    assert_eq!(
        only_error(folder.path()).await,
        "x.wasm: a folder, not a component file; rename it or move it out of the plugins \
         folder"
    );
}

#[tokio::test]
async fn a_component_without_the_tool_interface_is_one_line_naming_its_exports() {
    let bytes = word_count_renamed("piton:tool/tool@0.1.2", "acme:misc/other@0.1.1");
    assert_eq!(
        load_error_of("other.wasm", &bytes).await,
        "other.wasm: a component that does not export piton:tool/tool@0.1.2 (it exports \
         acme:misc/other@0.1.1); write the tool with piton-guest-sdk's #[tool]"
    );
}

#[tokio::test]
async fn a_tool_of_another_piton_tool_version_is_one_line_naming_both() {
    let bytes = word_count_renamed("piton:tool/tool@0.1.2", "piton:tool/tool@0.9.1");
    assert_eq!(
        load_error_of("new.wasm", &bytes).await,
        "new.wasm: a tool for piton:tool/tool@0.9.1, but this piton loads \
         piton:tool/tool@0.1.2; build it with a piton-guest-sdk for piton:tool 0.1.2, or \
         use a piton that loads 0.9.1"
    );
}

/// A piton.toml in its own folder whose `[mcp.inner]` runs `piton serve` on `folder`,
/// with `extra` lines added to the section.
fn config_serving(folder: &Path, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = format!(
        "[mcp.inner]\ncommand = {:?}\nargs = [\"serve\", \"--plugins\", {:?}]\nenv = {{ PITON_CACHE_DIR = {:?} }}\n{extra}",
        env!("CARGO_BIN_EXE_piton"),
        folder.display().to_string(),
        cache_dir().display().to_string(),
    );
    std::fs::write(dir.path().join("piton.toml"), text).expect("write piton.toml");
    dir
}

#[tokio::test]
async fn a_reload_keeps_an_unchanged_upstream_server_and_its_connection() {
    let served = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    let empty = tempfile::tempdir().expect("temp dir");
    let config = config_serving(served.path(), "");
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(empty.path().into()))
        .with_config_file(config.path().join("piton.toml"));
    let first = loader.load().await.expect("loads");
    assert_eq!(
        call_ok(
            &first.registry,
            "inner__word_count",
            serde_json::json!({"text": "a b"})
        )
        .await,
        ["2"]
    );

    // Loaded again with the section unchanged: the same server, already listed
    // over the connection made above, so its tools are known without connecting.
    let again = loader.load().await.expect("loads again");
    assert_eq!(again.registry.names(), ["inner__word_count"]);

    // A changed section is a new server: nothing is known until it connects.
    std::fs::write(
        config.path().join("piton.toml"),
        std::fs::read_to_string(config.path().join("piton.toml")).expect("read")
            + "timeout = \"30s\"\n",
    )
    .expect("change piton.toml");
    let changed = loader.load().await.expect("loads the changed file");
    assert!(
        changed.registry.names().is_empty(),
        "{:?}",
        changed.registry.names()
    );
    assert_eq!(
        call_ok(
            &changed.registry,
            "inner__word_count",
            serde_json::json!({"text": "a b c"})
        )
        .await,
        ["3"]
    );
    loader.close().await;
}

#[test]
fn a_first_start_shows_its_compiles_on_a_terminal_and_nothing_when_piped() {
    let folder = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    let list = [
        "list".as_ref(),
        "--plugins".as_ref(),
        folder.path().as_os_str(),
    ];
    // Captured stderr, an empty cache: the compile happens, and nothing says so.
    let cache = tempfile::tempdir().expect("temp dir");
    let out = run(piton().args(list).env("PITON_CACHE_DIR", cache.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    // On a terminal, with another empty cache: the compile is shown, then summed up.
    let cache = tempfile::tempdir().expect("temp dir");
    let env = [("PITON_CACHE_DIR", cache.path().as_os_str())];
    let shown = stdout(&run_in_terminal_with(&list, &env));
    assert!(shown.contains("compiled 1 plugin in "), "{shown}");
    assert!(shown.contains("word_count"), "{shown}");
    // The next start takes it from the cache and shows nothing of the kind.
    let shown = stdout(&run_in_terminal_with(&list, &env));
    assert!(!shown.contains("compil"), "{shown}");
    assert!(shown.contains("word_count"), "{shown}");
}
