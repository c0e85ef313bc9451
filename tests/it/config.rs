//! piton.toml through the CLI: grants, limits, on_trap, overrides, and errors.

use std::path::Path;

use piton_host::loader::Loader;
use piton_host::plugins::PluginsAt;
use piton_tests::{guests, plugins as examples};

use crate::support::*;

/// Writes `text` as piton.toml in `dir` and returns its path.
fn config(dir: &Path, text: &str) -> std::path::PathBuf {
    let file = dir.join("piton.toml");
    std::fs::write(&file, text).expect("write piton.toml");
    file
}

#[test]
fn a_mount_lets_read_file_read_and_inspect_shows_it_read_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/x"), "hello from the host").unwrap();
    let file = config(
        dir.path(),
        r#"[tools.read_file]
        mounts = [{ host = "./data", guest = "/data", mode = "write" }]"#,
    );
    let out = run(piton()
        .args(["call", "read_file", r#"{"path":"/data/x"}"#, "--config"])
        .arg(&file));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello from the host\n");

    let out = run(piton()
        .args(["inspect", "read_file", "--config"])
        .arg(&file));
    let text = stdout(&out);
    assert!(text.contains("files:     /data = "), "{text}");
    assert!(
        text.contains("(ReadOnly; granted Write)"),
        "a read-only tool gets read-only mounts: {text}"
    );
    assert!(text.contains("network:   none"), "{text}");
}

#[test]
fn piton_toml_beside_the_plugins_is_found() {
    let folder = plugins_folder(&[("env.wasm", guests::HOSTILE_READ_ENV)]);
    config(folder.path(), "[tools.read_env]\nenv = { LANG = \"C\" }\n");
    let out = run(piton()
        .args(["call", "read_env", "{}", "--plugins"])
        .arg(folder.path())
        .env("PITON_TEST_SECRET", "hunter2"));
    assert!(out.status.success(), "{}", stderr(&out));
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen["env"],
        serde_json::json!([["LANG", "C"]]),
        "only the granted variable"
    );
}

#[test]
fn limits_and_on_trap_come_from_the_file() {
    let folder = plugins_folder(&[
        ("spin.wasm", guests::HOSTILE_SPIN),
        ("panic.wasm", guests::HOSTILE_PANIC),
    ]);
    config(
        folder.path(),
        "[tools.spin]\ntimeout = \"300ms\"\n[tools.panic]\non_trap = \"error\"\n",
    );
    let out = run(piton()
        .args(["call", "spin", "{}", "--plugins"])
        .arg(folder.path()));
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("exceeded its deadline of 300ms"),
        "{}",
        stderr(&out)
    );

    let out = run(piton()
        .args(["call", "panic", "{}", "--plugins"])
        .arg(folder.path()));
    assert_eq!(out.status.code(), Some(1), "a trap became an error result");
    assert!(
        stderr(&out).contains("the guest panicked on purpose"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn overrides_rename_and_narrow_but_never_widen() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(
        dir.path(),
        "[tools.word_count]\nname = \"wc\"\ndescription = \"Words.\"\nparallel = false\n",
    );
    let out = run(piton()
        .args(["call", "wc", r#"{"text":"a b"}"#, "--config"])
        .arg(&file));
    assert_eq!(stdout(&out), "2\n", "{}", stderr(&out));
    let out = run(piton().args(["list", "--json", "--config"]).arg(&file));
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let wc = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "wc")
        .unwrap();
    assert_eq!(wc["description"], "Words.");
    assert_eq!(wc["parallel"], false);

    let file = config(dir.path(), "[tools.word_count]\nopen_world = true\n");
    let out = run(piton().args(["list", "--config"]).arg(&file));
    let err = stderr(&out);
    assert!(
        err.contains("piton.toml [tools.word_count]: open_world = true would widen"),
        "{err}"
    );
    assert!(
        !stdout(&out).contains("word_count"),
        "a tool whose settings fail is not loaded"
    );
}

#[test]
fn a_bad_file_is_a_usage_error_naming_file_key_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(
        dir.path(),
        "[tools.read_file]\nmounts = [{ host = \"./missing\", guest = \"/data\", mode = \"read\" }]\n",
    );
    let out = run(piton().args(["list", "--config"]).arg(&file));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("piton.toml: tools.read_file.mounts[0].host:"),
        "{err}"
    );
    assert!(err.contains("create the folder or fix the path"), "{err}");
}

#[test]
fn a_section_for_no_tool_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), "[tools.no_such_tool]\ntimeout = \"1s\"\n");
    let out = run(piton().args(["list", "--config"]).arg(&file));
    assert!(out.status.success());
    assert!(stderr(&out).contains("[tools.no_such_tool] but no tool is called no_such_tool"));
}

#[test]
fn the_runtime_table_caps_each_tools_memory_and_a_bad_value_names_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(
        dir.path(),
        "[runtime]\nmax_memory = \"32MiB\"\nmax_instances = 4\n\
         [tools.word_count]\nmemory = \"16MiB\"\n",
    );
    let out = run(piton().args(["list", "--config"]).arg(&file));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("word_count"), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "its memory limit of 64 MiB is over piton.toml's [runtime] max_memory of 32 MiB, \
             the most any tool may have; lower [tools.read_file] memory or raise max_memory"
        ),
        "{err}"
    );
    assert!(
        !err.contains("[runtime] takes effect"),
        "the CLI made its runtime from this table: {err}"
    );

    let file = config(dir.path(), "[runtime]\nmax_instances = 0\n");
    let out = run(piton().args(["list", "--config"]).arg(&file));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("piton.toml: runtime.max_instances: 0 is out of range: give 1 to 1024"),
        "{err}"
    );
}

#[tokio::test]
async fn a_runtime_table_changed_after_the_start_is_a_warning_until_a_restart() {
    let folder = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    let file = config(folder.path(), "[runtime]\nmax_instances = 8\n");
    let loader = Loader::from_flags(Some(folder.path().into()), Some(file.clone()))
        .expect("the runtime starts");
    assert_eq!(loader.runtime().config().max_instances, 8);
    assert_eq!(loader.runtime().config().queued(), 32, "four per instance");
    assert!(loader.load().await.unwrap().warnings.is_empty());

    config(
        folder.path(),
        "[runtime]\nmax_instances = 4\nmax_queued = 100\n",
    );
    assert_eq!(
        loader.load().await.unwrap().warnings,
        [
            "piton.toml [runtime] takes effect when piton starts, not at a reload: \
          max_instances = 4 (running with 8), max_queued = 100 (running with 32); \
          restart piton to apply it"
        ]
    );
    // A table removed since the start is a change too: back to the defaults.
    config(folder.path(), "");
    assert_eq!(
        loader.load().await.unwrap().warnings,
        [
            "piton.toml [runtime] takes effect when piton starts, not at a reload: \
          max_instances = 64 (running with 8), max_queued = 256 (running with 32); \
          restart piton to apply it"
        ]
    );

    // A program's own runtime: only what the table sets is compared with it.
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(folder.path().into()));
    assert!(loader.load().await.unwrap().warnings.is_empty());
    config(folder.path(), "[runtime]\nmax_memory = \"1GiB\"\n");
    assert_eq!(
        loader.load().await.unwrap().warnings,
        [
            "piton.toml [runtime] takes effect when piton starts, not at a reload: \
          max_memory = 1 GiB (running with 4 GiB); restart piton to apply it"
        ]
    );
    config(folder.path(), "[runtime]\nmade_ahead = 0\n");
    assert_eq!(
        loader.load().await.unwrap().warnings,
        [
            "piton.toml [runtime] takes effect when piton starts, not at a reload: \
          made_ahead = 0 (running with 8); restart piton to apply it"
        ]
    );
}
