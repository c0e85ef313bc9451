//! Toolboxes: one component that exports several tools (`toolbox-plugin`), each its
//! own entry with its own hints, piton.toml section and grants; and the single-tool
//! `plugin` world, also as built for piton:tool 0.1.0, still loading.

use std::path::Path;

use piton_host::config::Config;
use piton_host::loader::{Loaded, Loader};
use piton_host::plugins::PluginsAt;
use piton_host::wasm::{LoadFrom, WasmTool};
use piton_host::{Hints, ToolSource};
use piton_tests::{guests, plugins as examples};
use serde_json::json;

use crate::support::*;

/// Loads `folder` with the piton.toml text `config` (none when empty).
async fn load_folder(folder: &Path, config: &str) -> Loaded {
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(folder.into()));
    let loader = if config.is_empty() {
        loader.with_config(Config::default())
    } else {
        let file = folder.join("piton.toml");
        std::fs::write(&file, config).expect("write piton.toml");
        loader.with_config_file(file)
    };
    loader.load().await.expect("the folder reads")
}

/// A folder of two notes, and its path as TOML text.
fn notes() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["a.txt", "b.txt"] {
        std::fs::write(dir.path().join(name), "note").expect("write a note");
    }
    let toml = format!("{:?}", dir.path().display().to_string());
    (dir, toml)
}

#[tokio::test]
async fn a_toolbox_loads_as_one_tool_per_declaration_with_its_own_hints() {
    let folder = plugins_folder(&[("notes.wasm", guests::TOOLBOX_NOTES)]);
    let loaded = load_folder(folder.path(), "").await;
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert_eq!(loaded.registry.names(), ["count", "wipe"]);
    let source = ToolSource::File(folder.path().join("notes.wasm"));
    let count = loaded.registry.get("count").expect("count is listed");
    let wipe = loaded.registry.get("wipe").expect("wipe is listed");
    assert_eq!(count.source(), source);
    assert_eq!(wipe.source(), source);
    assert_eq!(count.spec().description, "Count the notes.");
    assert_eq!(count.hints(), Hints::read_only().open_world(false));
    assert!(wipe.hints().is_destructive(), "{:?}", wipe.hints());
    assert!(!wipe.hints().is_read_only());

    // hints-for is asked with the tool's own name: only wipe narrows.
    let dry = json!({"dry_run": true});
    let dry = dry.as_object().expect("an object");
    assert_eq!(
        loaded.registry.hints_for("wipe", dry).await.expect("asks"),
        Hints::read_only().open_world(false)
    );
    assert_eq!(
        loaded.registry.hints_for("count", dry).await.expect("asks"),
        count.hints()
    );
}

#[tokio::test]
async fn each_tool_of_a_toolbox_has_its_own_section_name_and_grants() {
    let (notes, at) = notes();
    let folder = plugins_folder(&[("notes.wasm", guests::TOOLBOX_NOTES)]);
    // A grant for count only, and a new name for wipe.
    let config = format!(
        "[tools.count]\nmounts = [{{ host = {at}, guest = \"/notes\", mode = \"read\" }}]\n\
         [tools.wipe]\nname = \"notes_wipe\"\n"
    );
    let loaded = load_folder(folder.path(), &config).await;
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert!(
        loaded.unused_config.is_empty(),
        "{:?}",
        loaded.unused_config
    );
    assert_eq!(loaded.registry.names(), ["count", "notes_wipe"]);
    let result = loaded
        .registry
        .call("count", json!({}))
        .await
        .expect("runs");
    assert_eq!(texts(&result), ["2"]);
    let result = loaded
        .registry
        .call("notes_wipe", json!({}))
        .await
        .expect("runs");
    let error = result.expect_err("wipe was granted nothing").to_string();
    assert!(error.contains("cannot read /notes"), "{error}");
    assert!(notes.path().join("a.txt").exists());

    // Now the grant is wipe's alone: wipe runs (by its guest name), count cannot read.
    let config = format!(
        "[tools.wipe]\nmounts = [{{ host = {at}, guest = \"/notes\", mode = \"write\" }}]\n"
    );
    let loaded = load_folder(folder.path(), &config).await;
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let dry = loaded
        .registry
        .call("wipe", json!({"dry_run": true}))
        .await
        .expect("runs");
    assert_eq!(texts(&dry), ["wiped 2"]);
    assert!(
        notes.path().join("a.txt").exists(),
        "a dry run deletes nothing"
    );
    let wiped = loaded.registry.call("wipe", json!({})).await.expect("runs");
    assert_eq!(texts(&wiped), ["wiped 2"]);
    assert!(
        !notes.path().join("a.txt").exists(),
        "wipe deleted the notes"
    );
    let count = loaded
        .registry
        .call("count", json!({}))
        .await
        .expect("runs");
    assert!(count.is_err(), "count has no grant now: {count:?}");
}

#[tokio::test]
async fn a_toolbox_with_two_tools_of_one_name_is_refused_naming_the_file() {
    let folder = plugins_folder(&[
        ("dup.wasm", guests::TOOLBOX_DUP),
        ("word_count.wasm", examples::WORD_COUNT),
    ]);
    let loaded = load_folder(folder.path(), "").await;
    assert_eq!(loaded.registry.names(), ["word_count"]);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    let dup = folder.path().join("dup.wasm");
    assert_eq!(
        errors,
        [format!(
            "{}: a toolbox that declares two tools named `same`; give each tool its own name",
            dup.display()
        )]
    );
}

/// piton:tool 0.1.1 added the toolbox, 0.1.2 code mode's interfaces; a plugin built
/// for 0.1.0 or 0.1.1 exports the same `tool` interface and still loads and runs.
#[tokio::test]
async fn a_plugin_built_for_piton_tool_0_1_0_or_0_1_1_still_loads() {
    for old in ["0", "1"] {
        let mut bytes = std::fs::read(examples::WORD_COUNT).expect("word_count is built");
        for interface in ["piton:tool/tool@0.1.", "piton:tool/types@0.1."] {
            let n = rename(
                &mut bytes,
                &format!("{interface}2"),
                &format!("{interface}{old}"),
            );
            assert!(n > 0, "{interface}2 is in word_count");
        }
        let tool = only(
            runtime()
                .load(
                    LoadFrom::Bytes(ToolSource::Bundled("old".into()), bytes),
                    None,
                )
                .await
                .unwrap_or_else(|e| panic!("a 0.1.{old} plugin loads: {e}")),
        );
        let mut registry = piton_host::Registry::new();
        registry.add(tool).expect("one tool");
        let result = registry
            .call("word_count", json!({"text": "a b c"}))
            .await
            .expect("runs");
        assert_eq!(texts(&result), ["3"], "0.1.{old}");
    }
}

#[test]
fn piton_list_shows_each_tool_of_a_toolbox_with_its_file() {
    let folder = plugins_folder(&[
        ("notes.wasm", guests::TOOLBOX_NOTES),
        ("word_count.wasm", examples::WORD_COUNT),
    ]);
    let out = run(piton()
        .args(["list", "--json", "--plugins"])
        .arg(folder.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let file = folder.path().join("notes.wasm").display().to_string();
    let of = |name: &str| {
        tools
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} is listed: {tools}"))
    };
    assert_eq!(of("count")["source"], file);
    assert_eq!(of("wipe")["source"], file);
    assert_eq!(of("count")["hints"]["read_only"], true);
    assert_eq!(of("wipe")["hints"]["destructive"], true);
    assert_eq!(of("word_count")["hints"]["read_only"], true);

    let out = run(piton()
        .args(["inspect", "wipe", "--plugins"])
        .arg(folder.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("notes.wasm"), "{}", stdout(&out));
}

#[tokio::test]
async fn a_rust_crate_with_several_tools_is_one_toolbox() {
    let folder = plugins_folder(&[("sdk.wasm", guests::TOOLBOX_SDK)]);
    let loaded = load_folder(folder.path(), "").await;
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert_eq!(loaded.registry.names(), ["append", "words"]);
    let words = loaded.registry.get("words").expect("words is listed");
    assert_eq!(words.hints(), Hints::read_only().open_world(false));
    assert_eq!(words.spec().description, "Count the words in a text.");
    let append = loaded.registry.get("append").expect("append is listed");
    assert!(!append.hints().is_read_only() && !append.hints().is_destructive());
    let empty = json!({"line": ""});
    assert_eq!(
        loaded
            .registry
            .hints_for("append", empty.as_object().expect("an object"))
            .await
            .expect("asks"),
        Hints::read_only().open_world(false)
    );
    let result = loaded
        .registry
        .call("words", json!({"text": "a b c"}))
        .await
        .expect("runs");
    assert_eq!(texts(&result), ["3"]);
    let result = loaded
        .registry
        .call("append", json!({"line": "x"}))
        .await
        .expect("runs");
    let error = result.expect_err("append was granted nothing").to_string();
    assert!(error.contains("cannot open /out/log"), "{error}");
}

/// The toolbox-dup guest with its mode bytes renamed to `mode`.
async fn odd_toolbox(mode: &str) -> Result<Vec<WasmTool>, String> {
    let mut bytes = std::fs::read(guests::TOOLBOX_DUP).expect("toolbox-dup is built");
    let from = "piton-test-mode:dup___";
    let to = format!("piton-test-mode:{mode}");
    assert_eq!(
        rename(&mut bytes, from, &to),
        1,
        "{from} is in toolbox-dup once"
    );
    runtime()
        .load(
            LoadFrom::Bytes(ToolSource::Bundled(format!("odd-{mode}")), bytes),
            None,
        )
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_toolbox_of_no_tools_of_too_many_or_that_traps_is_refused_saying_which() {
    let none = odd_toolbox("none__").await.expect_err("no tools");
    assert!(none.contains("declares no tools"), "{none}");
    let many = odd_toolbox("many__").await.expect_err("129 tools");
    assert!(many.contains("129 tools") && many.contains("128"), "{many}");
    let trap = odd_toolbox("trap__").await.expect_err("a trap");
    assert!(trap.contains("tools() traps"), "{trap}");
    // And the guest still loads as it is built, so the rename is what broke it.
    let dup = odd_toolbox("dup___").await.expect_err("two of one name");
    assert!(dup.contains("two tools named `same`"), "{dup}");
}
