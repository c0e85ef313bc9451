//! `piton new` + `piton build` + `piton check` + `piton call`, for every language:
//! the round trip a tool author makes, through the real binary, with the template's
//! own test run as its README says.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use super::{built, toolchains};
use crate::support::{piton, run, stderr, stdout};

/// `piton` with the test toolchains in its environment.
fn piton_with_toolchains(rust_target: &Path) -> Command {
    let mut cmd = piton();
    with_toolchains(&mut cmd, rust_target);
    cmd
}

/// Puts the test toolchains, the tests' compile cache and `PITON` (the binary under
/// test, which the templates' tests run) into `cmd`'s environment.
fn with_toolchains(cmd: &mut Command, rust_target: &Path) {
    let t = toolchains();
    for (var, value) in [
        ("PITON_PYTHON", &t.python),
        ("PITON_COMPONENTIZE_JS", &t.componentize_js),
        ("PITON_NODE", &t.node),
        ("PITON_TSC", &t.tsc),
        ("PITON_ESBUILD", &t.esbuild),
        ("PITON_GO", &t.go),
    ] {
        if let Some(value) = value {
            cmd.env(var, value);
        }
    }
    cmd.env("CARGO_TARGET_DIR", rust_target)
        .env("PITON", env!("CARGO_BIN_EXE_piton"))
        .env("PITON_CACHE_DIR", crate::support::cache_dir());
}

/// Where Rust projects made by the tests build: kept between runs.
fn rust_target() -> PathBuf {
    super::target_dir().join("lang-rust")
}

/// Makes a `lang` project called word-count, runs its own test with `test` (in the
/// project folder), builds it, checks it and calls `word_count` through a plugins
/// folder holding only it.
fn round_trip(lang: &str, test: Option<&[&str]>) {
    let root = tempfile::tempdir().expect("a temp folder");
    let dir = root.path().join("word-count");
    let made = run(piton().args(["new", "--lang", lang]).arg(&dir));
    assert!(
        made.status.success(),
        "piton new --lang {lang}: {}",
        stderr(&made)
    );
    assert!(stdout(&made).contains("word_count"), "{}", stdout(&made));

    if let Some([program, args @ ..]) = test {
        let mut command = Command::new(program);
        command.args(args).current_dir(&dir);
        with_toolchains(&mut command, &rust_target());
        let out = run(&mut command);
        assert!(
            out.status.success(),
            "the {lang} template's test failed: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }

    let built = run(piton_with_toolchains(&rust_target()).arg("build").arg(&dir));
    assert!(
        built.status.success(),
        "piton build ({lang}): {}",
        stderr(&built)
    );
    let wasm = PathBuf::from(stdout(&built).trim());
    assert_eq!(wasm, dir.join("word-count.wasm"));
    assert!(wasm.is_file(), "{} was not made", wasm.display());
    let bytes = std::fs::read(&wasm).expect("read the component");
    let section = bytes
        .windows(b"piton:specs".len())
        .position(|w| w == b"piton:specs")
        .unwrap_or_else(|| panic!("piton build ({lang}) wrote no specs into the component"));
    let specs = String::from_utf8_lossy(&bytes[section..]);
    assert!(
        specs.contains(r#""name":"word_count""#) && specs.contains(r#""read_only":true"#),
        "piton build ({lang}) wrote other specs: {specs}"
    );

    let checked = run(piton().arg("check").arg(&wasm));
    assert!(
        checked.status.success(),
        "piton check ({lang}): {}",
        stderr(&checked)
    );
    let report = stdout(&checked);
    assert!(report.contains("tool word_count [read_only"), "{report}");
    assert!(
        report.contains("DENIED"),
        "no import is reported denied: {report}"
    );

    let plugins = root.path().join("plugins");
    std::fs::create_dir(&plugins).expect("plugins folder");
    std::fs::copy(&wasm, plugins.join("word-count.wasm")).expect("copied");
    let called = run(piton()
        .args([
            "call",
            "word_count",
            r#"{"text":"one two three"}"#,
            "--plugins",
        ])
        .arg(&plugins));
    assert!(
        called.status.success(),
        "piton call ({lang}): {}",
        stderr(&called)
    );
    assert_eq!(stdout(&called).trim(), "3");

    let bad = run(piton()
        .args(["call", "word_count", r#"{"text":3}"#, "--plugins"])
        .arg(&plugins));
    assert_eq!(
        bad.status.code(),
        Some(1),
        "an input error is exit 1: {}",
        stderr(&bad)
    );
}

#[test]
fn rust_round_trip() {
    round_trip("rust", Some(&["cargo", "test", "--quiet"]));
}

#[test]
fn python_round_trip() {
    round_trip("python", Some(&["python3", "test_tools.py"]));
}

#[test]
fn js_round_trip() {
    let node = super::toolchains()
        .node
        .expect("the tests' toolchains name a node");
    let node = node.to_str().expect("a UTF-8 path");
    round_trip("js", Some(&[node, "--test"]));
}

#[test]
fn ts_round_trip() {
    let node = super::toolchains()
        .node
        .expect("the tests' toolchains name a node");
    let node = node.to_str().expect("a UTF-8 path");
    round_trip("ts", Some(&[node, "--test"]));
}

#[test]
fn go_round_trip() {
    let go = super::toolchains()
        .go
        .expect("the tests' toolchains name a go");
    let go = go.to_str().expect("a UTF-8 path");
    round_trip("go", Some(&[go, "test", "./..."]));
}

#[test]
fn c_round_trip() {
    round_trip("c", Some(&["sh", "test.sh"]));
}

#[test]
fn build_and_check_explain_what_is_wrong() {
    let root = tempfile::tempdir().expect("a temp folder");
    let nothing = run(piton().arg("build").arg(root.path()));
    assert_eq!(nothing.status.code(), Some(2));
    assert!(
        stderr(&nothing).contains("piton new"),
        "{}",
        stderr(&nothing)
    );

    let text = root.path().join("notes.txt");
    std::fs::write(&text, "hello").expect("written");
    let not_wasm = run(piton().arg("check").arg(&text));
    assert_eq!(not_wasm.status.code(), Some(1));
    assert!(
        stderr(&not_wasm).contains("not WebAssembly"),
        "{}",
        stderr(&not_wasm)
    );

    let made = run(piton()
        .args(["new", "--lang", "rust"])
        .arg(root.path().join("Bad Name")));
    assert_eq!(made.status.code(), Some(2));
    assert!(
        stderr(&made).contains("cannot name a tool project"),
        "{}",
        stderr(&made)
    );
}

#[tokio::test]
async fn the_library_builds_a_rust_crate_of_the_workspace() {
    let wasm = built("plugins/word-count");
    let path = wasm.to_str().expect("a UTF-8 path");
    let registry = crate::support::registry_of(&[path], piton_host::Limits::default()).await;
    let text = crate::support::call_ok(&registry, "word_count", json!({"text": "a b c"})).await;
    assert_eq!(text, ["3"]);
}
