//! Python tools: the SDK's own unit tests (guest-sdk/python/tests), and
//! `tests/python/seed_tools.py`, written like the seed page's examples with `from piton
//! import ...`, built by piton's Python builder (componentize-py from target/peers)
//! and checked to behave as the page says, through the host, the CLI and `piton
//! serve`; and sources the page says are wrong, refused at build naming the function.

use std::path::Path;
use std::process::Command;

use piton_host::build::{BuildError, Toolchains};
use piton_host::config::Config;
use piton_host::loader::{Loaded, Loader};
use piton_host::plugins::PluginsAt;
use piton_host::{Content, Hints, ToolError};
use serde_json::{Value, json};

use super::{built, try_built};
use crate::peers::{
    Target, call_result, listed, only_text, peers, piton_bin, repo_root, sdk_client,
};
use crate::support::*;

mod http;

const SEED: &str = "tests/python/seed_tools.py";

/// The seed-page component copied into a fresh plugins folder, with `piton.toml`
/// holding `config` (none when empty).
fn seed_folder(config: &str) -> tempfile::TempDir {
    let folder = plugins_folder(&[("seed.wasm", built(SEED).to_str().expect("utf-8 path"))]);
    if !config.is_empty() {
        std::fs::write(folder.path().join("piton.toml"), config).expect("write piton.toml");
    }
    folder
}

async fn load(folder: &Path) -> Loaded {
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(folder.into()));
    let config = folder.join("piton.toml");
    let loader = if config.is_file() {
        loader.with_config_file(config)
    } else {
        loader.with_config(Config::default())
    };
    let loaded = loader.load().await.expect("the folder reads");
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    loaded
}

/// A folder holding `a.txt` ("hello from a"), and its path as TOML text.
fn data() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.txt"), "hello from a").expect("write a.txt");
    let toml = format!("{:?}", dir.path().display().to_string());
    (dir, toml)
}

/// `tool` may `mode` the folder `at` (TOML text) as the guest's `/`.
fn grant(tool: &str, at: &str, mode: &str) -> String {
    format!("[tools.{tool}]\nmounts = [{{ host = {at}, guest = \"/\", mode = \"{mode}\" }}]\n")
}

#[test]
fn the_sdk_unit_tests_pass() {
    let out = Command::new(peers().python())
        .args(["-m", "unittest", "discover", "-s"])
        .arg(repo_root().join("guest-sdk/python/tests"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python runs");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("\nOK"), "{report}");
}

#[tokio::test]
async fn every_module_level_tool_is_listed_with_its_schema_description_and_hints() {
    let folder = seed_folder("");
    let loaded = load(folder.path()).await;
    assert_eq!(
        loaded.registry.names(),
        [
            "bash",
            "fetch_file",
            "fetch_url",
            "post_text",
            "post_text_read_only",
            "read_file",
            "results",
            "save_note",
            "shapes",
            "webhook"
        ]
    );
    let read_file = loaded.registry.get("read_file").expect("listed");
    assert_eq!(read_file.spec().description, "Read a file's contents");
    assert_eq!(
        read_file.spec().input_schema,
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path relative to the repository root"}},
            "required": ["path"],
            "additionalProperties": false,
        })
    );
    assert_eq!(read_file.hints(), Hints::read_only().open_world(false));
    // Left out, a hint assumes the worst.
    let webhook = loaded.registry.get("webhook").expect("listed");
    assert!(webhook.hints().is_destructive() && !webhook.hints().is_read_only());
    let shapes = loaded
        .registry
        .get("shapes")
        .expect("listed")
        .spec()
        .input_schema
        .clone();
    assert_eq!(
        shapes["properties"]["color"],
        json!({"$ref": "#/$defs/Color", "description": "Their color."})
    );
    assert_eq!(shapes["$defs"]["Point"]["required"], json!(["x"]));
    assert_eq!(shapes["required"], json!(["points", "color"]));
}

#[tokio::test]
async fn read_file_reads_a_granted_folder_as_written_on_the_page() {
    let (dir, at) = data();
    let folder = seed_folder(&grant("read_file", &at, "read"));
    let registry = load(folder.path()).await.registry;
    assert_eq!(
        call_ok(&registry, "read_file", json!({"path": "a.txt"})).await,
        ["hello from a"]
    );
    let error = call_error(&registry, "read_file", json!({"path": 3})).await;
    assert!(
        matches!(&error, ToolError::Input(m) if m.contains("path")),
        "{error:?}"
    );
    // An exception the tool does not handle stops the run, with Python's words.
    let stop = call_stops(&registry, "read_file", json!({"path": "missing.txt"})).await;
    assert!(stop.contains("FileNotFoundError"), "{stop}");
    drop(dir);
}

#[tokio::test]
async fn exception_handler_makes_the_exceptions_its_hint_names_error_results() {
    let (_dir, at) = data();
    let folder = seed_folder(&grant("fetch_file", &at, "read"));
    let registry = load(folder.path()).await.registry;
    assert_eq!(
        call_ok(&registry, "fetch_file", json!({"path": "a.txt"})).await,
        ["hello from a"]
    );
    let error = call_error(&registry, "fetch_file", json!({"path": "missing.txt"})).await;
    assert_eq!(
        error,
        ToolError::Failed("cannot read it: No such file or directory".into())
    );
}

#[tokio::test]
async fn a_toolboxs_tools_get_separate_grants() {
    let (_dir, at) = data();
    let folder = seed_folder(&grant("read_file", &at, "read"));
    let registry = load(folder.path()).await.registry;
    assert_eq!(
        call_ok(&registry, "read_file", json!({"path": "a.txt"})).await,
        ["hello from a"]
    );
    // fetch_file is in the same component, but was granted nothing: no file is there.
    let error = call_error(&registry, "fetch_file", json!({"path": "a.txt"})).await;
    assert_eq!(
        error,
        ToolError::Failed("cannot read it: No such file or directory".into())
    );
}

#[tokio::test]
async fn a_read_only_python_tool_cannot_write_into_a_write_granted_mount() {
    let (dir, at) = data();
    let folder = seed_folder(&grant("save_note", &at, "write"));
    let registry = load(folder.path()).await.registry;
    let stop = call_stops(
        &registry,
        "save_note",
        json!({"path": "b.txt", "text": "x"}),
    )
    .await;
    assert!(stop.contains("PermissionError"), "{stop}");
    assert!(!dir.path().join("b.txt").exists(), "nothing was written");
}

#[tokio::test]
async fn hints_for_narrows_one_call_as_the_pages_bash_example() {
    let folder = seed_folder("");
    let registry = load(folder.path()).await.registry;
    let hints = |args: Value| {
        let registry = &registry;
        async move {
            let args = args.as_object().expect("an object").clone();
            registry.hints_for("bash", &args).await.expect("asks")
        }
    };
    assert!(hints(json!({"command": "ls"})).await.is_read_only());
    let own = registry.get("bash").expect("listed").hints();
    assert!(!own.is_read_only());
    assert_eq!(hints(json!({"command": "rm -rf /"})).await, own);
    assert_eq!(hints(json!({"command": 3})).await, own);
}

#[tokio::test]
async fn return_values_become_content_as_the_page_says() {
    let folder = seed_folder("");
    let registry = load(folder.path()).await.registry;
    let call = |kind: &str| registry.call("results", json!({"kind": kind}));
    assert_eq!(call("none").await.expect("runs"), Ok(vec![]));
    assert_eq!(
        call_ok(&registry, "results", json!({"kind": "plain"})).await,
        ["plain"]
    );
    let png = |c: &Content| matches!(c, Content::Image { mime_type, data } if mime_type == "image/png" && data.starts_with(b"\x89PNG"));
    let image = call("image").await.expect("runs").expect("content");
    assert!(matches!(image.as_slice(), [c] if png(c)), "{image:?}");
    let mixed = call("mixed").await.expect("runs").expect("content");
    assert!(
        matches!(mixed.as_slice(), [Content::Text { text }, i, Content::Json { json }]
            if text == "Page loaded" && png(i) && *json == json!({"k": 1})),
        "{mixed:?}"
    );
    let list = call("list").await.expect("runs").expect("content");
    assert!(
        matches!(list.as_slice(), [Content::Json { json }] if *json == json!(["a", "b"])),
        "{list:?}"
    );
    // A value that cannot become JSON is a TypeError, which stops the run.
    let stop = call_stops(&registry, "results", json!({"kind": "set"})).await;
    assert!(
        stop.contains("TypeError: tool 'results' returned a set, which cannot become JSON"),
        "{stop}"
    );
    let stop = call_stops(&registry, "results", json!({"kind": "crash"})).await;
    assert!(stop.contains("ValueError: a bug in the tool"), "{stop}");
    assert!(
        stop.contains("seed_tools.py"),
        "the traceback names the file: {stop}"
    );
    let error = call_error(&registry, "results", json!({"kind": "input"})).await;
    assert_eq!(error, ToolError::Input("kind is not right".into()));
    // Arguments are checked against the type hints.
    let shapes = json!({"points": [{"x": 1}, {"x": 2.5, "y": 1}], "color": "green"});
    let out = registry
        .call("shapes", json!({"points": [{"x": "1"}], "color": "red"}))
        .await;
    assert!(matches!(out, Ok(Err(ToolError::Input(_)))), "{out:?}");
    let out = registry
        .call("shapes", shapes)
        .await
        .expect("runs")
        .expect("content");
    assert!(
        matches!(out.as_slice(), [Content::Json { json }] if json["sum_x"] == json!(3.5) && json["color"] == "green" && json["mode"] == "fast"),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_tool_subclass_runs_and_signals_with_exceptions() {
    let folder = seed_folder("");
    let registry = load(folder.path()).await.registry;
    let tool = registry.get("webhook").expect("listed");
    assert_eq!(tool.spec().input_schema["required"], json!(["title"]));
    let out = call_ok(&registry, "webhook", json!({"title": "t"})).await;
    let posted: Value = serde_json::from_str(&out[0]).expect("JSON");
    assert_eq!(
        posted,
        json!({"url": "https://example.invalid/hook", "posted": {"title": "t"}})
    );
    let error = call_error(&registry, "webhook", json!({"title": "fail"})).await;
    assert_eq!(error, ToolError::Failed("HTTP 500".into()));
}

#[test]
fn sources_the_page_calls_wrong_are_refused_at_build_naming_the_function_and_why() {
    let cases = [
        (
            "tests/python/bad/untyped.py",
            &["untyped.py:4: TypeError: read_file: parameter 'path' needs a type hint"][..],
        ),
        (
            "tests/python/bad/state.py",
            &[
                "state.py:4: TypeError: remember: parameter 'state' is a State",
                "sandboxed",
            ][..],
        ),
        (
            "tests/python/bad/pydantic_model.py",
            &[
                "pydantic_model.py:1: cannot import 'pydantic' in the sandbox",
                "native code",
                "dataclass or a TypedDict",
            ][..],
        ),
    ];
    for (source, parts) in cases {
        let error = try_built(source).expect_err("refused");
        assert!(!error.contains('\n'), "one line: {error}");
        for part in parts {
            assert!(error.contains(part), "{source}: {part:?} in {error}");
        }
    }
}

#[test]
fn a_python_without_componentize_py_is_told_the_install_command() {
    let toolchains = Toolchains {
        python: Some("/nonexistent/python3".into()),
        ..Toolchains::default()
    };
    let out = tempfile::tempdir().expect("temp dir");
    let error = piton_host::build::build(
        &repo_root().join(SEED),
        Some(&out.path().join("x.wasm")),
        &toolchains,
    )
    .expect_err("no python");
    assert!(matches!(error, BuildError::Missing { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("/nonexistent/python3 -m pip install componentize-py==0.25.1"),
        "{error}"
    );
}

#[test]
fn the_cli_calls_python_tools_and_piton_build_reports_a_bad_source() {
    let (_dir, at) = data();
    let folder = seed_folder(&grant("read_file", &at, "read"));
    let out = run(piton()
        .args(["call", "--plugins"])
        .arg(folder.path())
        .args(["read_file", r#"{"path":"a.txt"}"#]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello from a\n");
    let out = run(piton()
        .args(["call", "--plugins"])
        .arg(folder.path())
        .args(["results", r#"{"kind":"input"}"#]));
    assert_eq!(out.status.code(), Some(1), "an input error exits 1");
    assert_eq!(stderr(&out).trim(), "(input error: kind is not right)");

    let out = run(piton()
        .env("PITON_PYTHON", peers().python())
        .arg("build")
        .arg(repo_root().join("tests/python/bad/untyped.py"))
        .arg("-o")
        .arg(folder.path().join("bad.wasm")));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("parameter 'path' needs a type hint"),
        "{}",
        stderr(&out)
    );
    assert!(!folder.path().join("bad.wasm").exists());
}

#[test]
fn piton_serve_lists_and_calls_python_tools_for_the_official_mcp_client() {
    let (_dir, at) = data();
    let folder = seed_folder(&grant("read_file", &at, "read"));
    let command = [
        piton_bin().as_ref(),
        "serve".as_ref(),
        "--plugins".as_ref(),
        folder.path().as_os_str(),
    ];
    let report = sdk_client(
        Target::Stdio(&command),
        "auto",
        &[
            ("read_file", json!({"path": "a.txt"})),
            ("results", json!({"kind": "input"})),
        ],
    );
    let read_file = listed(&report, "read_file");
    assert_eq!(read_file["description"], "Read a file's contents");
    assert_eq!(read_file["annotations"]["readOnlyHint"], true);
    assert_eq!(only_text(call_result(&report, 0)), "hello from a");
    let refused = call_result(&report, 1);
    assert_eq!(refused["isError"], true, "{refused:#}");
    assert_eq!(only_text(refused), "(input error: kind is not right)");
}

#[tokio::test]
async fn the_notes_example_narrows_its_hints_and_the_sandbox_holds_it_to_them() {
    let notes = tempfile::tempdir().expect("temp dir");
    std::fs::write(notes.path().join("one.txt"), "first").expect("write a note");
    let at = format!("{:?}", notes.path().display().to_string());
    let folder = plugins_folder(&[(
        "notes.wasm",
        built("plugins/notes-py").to_str().expect("utf-8 path"),
    )]);
    let mut config = String::new();
    for (tool, mode) in [
        ("list_notes", "read"),
        ("read_note", "read"),
        ("add_note", "write"),
        ("delete_note", "write"),
    ] {
        config += &format!(
            "[tools.{tool}]\nmounts = [{{ host = {at}, guest = \"/notes\", mode = \"{mode}\" }}]\n"
        );
    }
    std::fs::write(folder.path().join("piton.toml"), config).expect("write piton.toml");
    let registry = load(folder.path()).await.registry;
    assert_eq!(
        registry.names(),
        ["add_note", "delete_note", "list_notes", "read_note"]
    );
    let read_note = registry.get("read_note").expect("listed").spec().clone();
    assert_eq!(read_note.description, "Read one note.");
    assert_eq!(
        read_note.input_schema["properties"]["name"]["description"],
        "The note's name, as list_notes shows it."
    );

    let list = registry.call("list_notes", json!({})).await.expect("runs");
    assert_eq!(
        list,
        Ok(vec![Content::Json {
            json: json!(["one"])
        }])
    );
    assert_eq!(
        call_error(&registry, "read_note", json!({"name": "two"})).await,
        ToolError::Failed("no note named 'two'".into())
    );
    let error = call_error(&registry, "read_note", json!({"name": "../x"})).await;
    assert!(
        matches!(&error, ToolError::Input(m) if m.contains("'../x'")),
        "{error:?}"
    );

    // Without overwrite the call is not destructive: the folder is mounted add-only,
    // so the tool's own write_text cannot replace a note, whatever its code does.
    let add = |args: Value| {
        let args = args.as_object().expect("an object").clone();
        let registry = &registry;
        async move { registry.hints_for("add_note", &args).await.expect("asks") }
    };
    assert!(
        !add(json!({"name": "one", "text": "x"}))
            .await
            .is_destructive()
    );
    assert!(
        add(json!({"name": "one", "text": "x", "overwrite": true}))
            .await
            .is_destructive()
    );
    assert_eq!(
        call_ok(
            &registry,
            "add_note",
            json!({"name": "two", "text": "second"})
        )
        .await,
        ["saved two"]
    );
    assert_eq!(
        call_error(
            &registry,
            "add_note",
            json!({"name": "one", "text": "replaced"})
        )
        .await,
        ToolError::Failed("that note exists: pass overwrite=true to replace it".into())
    );
    let read = |name: &str| std::fs::read_to_string(notes.path().join(format!("{name}.txt")));
    assert_eq!(read("one").expect("one"), "first");
    assert_eq!(read("two").expect("two"), "second");
    let args = json!({"name": "one", "text": "replaced", "overwrite": true});
    assert_eq!(call_ok(&registry, "add_note", args).await, ["saved one"]);
    assert_eq!(read("one").expect("one"), "replaced");

    // A dry run is read-only: it could not delete even if it tried.
    let dry = json!({"name": "two", "dry_run": true});
    let hints = registry
        .hints_for("delete_note", dry.as_object().expect("an object"))
        .await
        .expect("asks");
    assert!(hints.is_read_only());
    assert_eq!(
        call_ok(&registry, "delete_note", dry).await,
        ["would delete two"]
    );
    assert!(notes.path().join("two.txt").exists());
    assert_eq!(
        call_ok(&registry, "delete_note", json!({"name": "two"})).await,
        ["deleted two"]
    );
    assert!(!notes.path().join("two.txt").exists());
}
