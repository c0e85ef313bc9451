//! C tools (`guest-sdk/c`): the checked-in `wit-bindgen c` bindings match wit/, and
//! the example and the template build with clang + lld + wasi-libc into components
//! that run through the registry, the CLI and `piton serve`.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use piton_host::build::BuildError;
use piton_host::grants::Grants;
use piton_host::wasm::LoadFrom;
use piton_host::{Hints, Limits, Registry, Tool as _, ToolError};
use serde_json::json;

use super::{built, toolchains};
use crate::peers::{Target, call_result, listed, only_text, piton_bin, repo_root, sdk_client};
use crate::support::*;

/// `wit-bindgen c` for the world `plugin` of wit/, as (file name, contents).
fn generated_bindings() -> Vec<(String, Vec<u8>)> {
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve
        .push_dir(repo_root().join("wit"))
        .expect("wit/ parses");
    let world = resolve
        .select_world(&[package], Some("plugin"))
        .expect("wit/ has the world plugin");
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)
        .expect("wit-bindgen c generates the bindings");
    files
        .iter()
        .map(|(name, contents)| (name.to_owned(), contents.to_vec()))
        .collect()
}

/// The checked-in bindings are what `wit-bindgen c` 0.63 makes of wit/ today.
/// `PITON_REGENERATE=1` rewrites them (then review and commit the change).
#[test]
fn the_checked_in_c_bindings_match_wit() {
    let dir = repo_root().join("guest-sdk/c/bindings");
    let generated = generated_bindings();
    let regenerate = std::env::var_os("PITON_REGENERATE").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, contents) in &generated {
        let path = dir.join(name);
        if std::fs::read(&path).ok().as_deref() != Some(contents.as_slice()) {
            if regenerate {
                std::fs::write(&path, contents).expect("the bindings are written");
            } else {
                stale.push(name.clone());
            }
        }
    }
    let mut names: Vec<&str> = generated.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("guest-sdk/c/bindings is a folder")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert!(
        stale.is_empty() && names == on_disk,
        "guest-sdk/c/bindings differs from `wit-bindgen c` of wit/ (stale: {stale:?}; \
         generated {names:?}, checked in {on_disk:?}); regenerate with \
         PITON_REGENERATE=1 cargo test -p piton-host --test it lang::c::the_checked_in"
    );
}

/// The example, built.
fn tally() -> String {
    built("plugins/tally-c").display().to_string()
}

/// The test tool that tries what a buggy C tool would, built.
fn probe() -> String {
    built("tests/c/probe.c").display().to_string()
}

/// A folder holding `notes.txt` ("one two\nthree\n").
fn notes_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.txt"), "one two\nthree\n").expect("write notes");
    dir
}

/// A registry of the component at `path`, granted `/data` for writing.
async fn granted(path: &str, data: &Path) -> Registry {
    let tool = with_settings(load(path).await, write_grant(data), Limits::default());
    let mut registry = Registry::new();
    registry.add(tool).expect("one tool");
    registry
}

#[tokio::test]
async fn the_c_example_declares_its_description_schema_and_hints() {
    let tool = load(&tally()).await;
    let spec = tool.spec();
    assert_eq!(spec.name, "tally");
    assert!(spec.description.starts_with("Count the lines"), "{spec:?}");
    assert_eq!(spec.input_schema["required"], json!(["path"]));
    assert_eq!(
        spec.input_schema["properties"]["append"]["type"], "string",
        "{spec:?}"
    );
    assert_eq!(tool.hints(), Hints::worst().open_world(false));
}

#[tokio::test]
async fn the_c_example_counts_appends_and_reports_input_and_failed_errors() {
    let data = notes_folder();
    let registry = granted(&tally(), data.path()).await;
    let counted = call_ok(&registry, "tally", json!({"path": "/data/notes.txt"})).await;
    assert_eq!(counted, [r#"{"bytes":14,"lines":2,"words":3}"#]);
    let appended = call_ok(
        &registry,
        "tally",
        json!({"path": "/data/notes.txt", "append": "four"}),
    )
    .await;
    assert_eq!(appended, [r#"{"bytes":19,"lines":3,"words":4}"#]);
    assert_eq!(
        std::fs::read_to_string(data.path().join("notes.txt")).expect("notes"),
        "one two\nthree\nfour\n"
    );

    let relative = call_error(&registry, "tally", json!({"path": "notes.txt"})).await;
    assert_eq!(
        relative.to_string(),
        "(input error: path must be an absolute path, such as /data/notes.txt)"
    );
    let two_lines = call_error(
        &registry,
        "tally",
        json!({"path": "/data/notes.txt", "append": "a\nb"}),
    )
    .await;
    assert!(matches!(two_lines, ToolError::Input(_)), "{two_lines:?}");
    let missing = call_error(&registry, "tally", json!({"path": "/data/gone.txt"})).await;
    assert_eq!(
        missing,
        ToolError::Failed("cannot open /data/gone.txt: No such file or directory".to_owned())
    );
}

#[tokio::test]
async fn a_read_only_c_tool_cannot_write_into_a_write_granted_folder() {
    let data = notes_folder();
    let registry = granted(&probe(), data.path()).await;
    // It reads through the grant (wasi-libc's fopen, the preview1 adapter, the host) ...
    let read = call_ok(
        &registry,
        "c_probe",
        json!({"do": "read", "path": "/data/notes.txt"}),
    )
    .await;
    assert_eq!(read, ["one two\nthree\n"]);
    // ... but its hints say read-only, so the folder is read-only for its calls.
    for path in ["/data/new.txt", "/data/notes.txt"] {
        let refused = call_error(&registry, "c_probe", json!({"do": "write", "path": path})).await;
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

#[tokio::test]
async fn the_c_example_narrows_its_hints_for_a_call_without_append() {
    let data = notes_folder();
    let registry = granted(&tally(), data.path()).await;
    let args = |value: serde_json::Value| value.as_object().cloned().expect("an object");
    let reading = registry
        .hints_for("tally", &args(json!({"path": "/data/notes.txt"})))
        .await
        .expect("hints_for answers");
    assert_eq!(reading, Hints::read_only().open_world(false));
    let appending = registry
        .hints_for(
            "tally",
            &args(json!({"path": "/data/notes.txt", "append": "x"})),
        )
        .await
        .expect("hints_for answers");
    assert_eq!(appending, Hints::worst().open_world(false));
}

#[tokio::test]
async fn a_c_trap_stops_the_run_and_the_host_survives() {
    let registry = registry_of(&[&probe()], Limits::default()).await;
    for what in ["abort", "oob"] {
        let stopped = call_stops(&registry, "c_probe", json!({ "do": what })).await;
        assert!(!stopped.is_empty(), "{what}");
    }
    // Taking all memory ends with malloc's NULL at the limit, not a crash.
    let limited = with_settings(
        load(&probe()).await,
        Grants::default(),
        Limits {
            memory: 8 << 20,
            ..Limits::default()
        },
    );
    let mut small = Registry::new();
    small.add(limited).expect("one tool");
    let taken = call_ok(&small, "c_probe", json!({"do": "alloc"})).await;
    let mib: u64 = taken[0]
        .strip_suffix(" MiB")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{taken:?}"));
    assert!((1..8).contains(&mib), "{taken:?}");
    assert_eq!(
        call_ok(&registry, "c_probe", json!({"do": "kinds"})).await,
        ["text", r#"{"a":[1,2]}"#, "[image image/png, 8 bytes]"]
    );
    assert_host_alive().await;
}

#[tokio::test]
async fn a_c_error_drops_the_content_before_it_and_the_reader_decodes_arguments() {
    let registry = registry_of(&[&probe()], Limits::default()).await;
    assert_eq!(
        call_error(&registry, "c_probe", json!({"do": "failed"})).await,
        ToolError::Failed("it failed: 42".to_owned())
    );
    let echoed = call_ok(
        &registry,
        "c_probe",
        json!({"do": "echo", "value": {
            "s": "a\u{e9}\u{1F600}\"\\/\n",
            "i": -12,
            "big": 12345678901234567i64,
            "f": 0.5,
            "t": true,
            "n": null,
            "l": [1, [2], {}],
            "o": {"k": 1},
        }}),
    )
    .await;
    assert_eq!(
        echoed,
        // In the order the host passes them (serde_json's, sorted).
        [
            "big: int 12345678901234568",
            "f: number 0.5",
            "i: int -12",
            "l: array of 3",
            "n: null",
            "o: object of 1",
            "s: string a\u{e9}\u{1F600}\"\\/\n",
            "t: bool true",
        ]
    );
}

/// `piton.toml` granting `data` as `/data` to `tool`, written into `plugins`.
fn grant_in_config(plugins: &Path, tool: &str, data: &Path) {
    let config = format!(
        "[tools.{tool}]\nmounts = [{{ host = {:?}, guest = \"/data\", mode = \"write\" }}]\n",
        data.display().to_string()
    );
    std::fs::write(plugins.join("piton.toml"), config).expect("write piton.toml");
}

#[test]
fn the_c_example_runs_through_the_cli() {
    let data = notes_folder();
    let plugins = plugins_folder(&[("tally.wasm", &tally())]);
    grant_in_config(plugins.path(), "tally", data.path());
    let dir = plugins.path().as_os_str();
    let listed = run(piton().arg("list").arg("--plugins").arg(dir));
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stdout(&listed).contains("Count the lines"),
        "{}",
        stdout(&listed)
    );

    let out = run(piton()
        .args([
            "call",
            "tally",
            r#"{"path":"/data/notes.txt"}"#,
            "--plugins",
        ])
        .arg(dir));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: serde_json::Value =
        serde_json::from_str(&stdout(&out)).expect("call prints the JSON block");
    assert_eq!(printed, json!({"lines": 2, "words": 3, "bytes": 14}));

    let out = run(piton()
        .args(["call", "tally", r#"{"path":"/data/gone.txt"}"#, "--plugins"])
        .arg(dir));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        format!("{}{}", stdout(&out), stderr(&out)).contains("cannot open /data/gone.txt"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn the_c_example_runs_through_piton_serve_for_an_mcp_client() {
    let data = notes_folder();
    let plugins = plugins_folder(&[("tally.wasm", &tally())]);
    grant_in_config(plugins.path(), "tally", data.path());
    let command = [
        OsStr::new(piton_bin()),
        OsStr::new("serve"),
        // tally appends: not read-only, and this client cannot be asked.
        OsStr::new("--approve"),
        OsStr::new("never"),
        OsStr::new("--plugins"),
        plugins.path().as_os_str(),
    ];
    let report = sdk_client(
        Target::Stdio(&command),
        "auto",
        &[
            ("tally", json!({"path": "/data/notes.txt"})),
            ("tally", json!({"path": "notes.txt"})),
            ("tally", json!({"path": "/data/gone.txt"})),
        ],
    );
    let tool = listed(&report, "tally");
    assert!(
        tool["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Count the lines")),
        "{report:#}"
    );
    assert_eq!(tool["inputSchema"]["required"], json!(["path"]));
    assert_eq!(tool["annotations"]["destructiveHint"], true);
    assert_eq!(tool["annotations"]["openWorldHint"], false);
    let counted = call_result(&report, 0);
    assert_eq!(counted["isError"], false, "{counted:#}");
    assert_eq!(only_text(counted), r#"{"bytes":14,"lines":2,"words":3}"#);
    let input = call_result(&report, 1);
    assert_eq!(input["isError"], true, "{input:#}");
    assert!(
        only_text(input).starts_with("(input error: path must be"),
        "{input:#}"
    );
    let failed = call_result(&report, 2);
    assert_eq!(failed["isError"], true, "{failed:#}");
    assert!(
        only_text(failed).starts_with("cannot open /data/gone.txt"),
        "{failed:#}"
    );
}

#[test]
fn a_c_source_clang_refuses_fails_the_build_with_its_file_and_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("tool.c");
    std::fs::write(
        &file,
        "#include \"piton.h\"\n\nstatic int broken(void) { return undeclared_name; }\n",
    )
    .expect("write tool.c");
    let error = piton_host::build::build(
        dir.path(),
        Some(&dir.path().join("out.wasm")),
        &toolchains(),
    )
    .expect_err("the source does not compile");
    let text = error.to_string();
    assert!(
        matches!(error, BuildError::Failed { .. })
            && text.contains("tool.c:3:")
            && text.contains("undeclared_name"),
        "{text}"
    );
    assert!(!dir.path().join("out.wasm").exists());
}

#[tokio::test]
async fn the_c_example_runs_in_256_kib_of_memory() {
    // What guest-sdk/c/README.md states: wasi-libc's stdio buffers for two files fit
    // in 256 KiB; the host's default limit (64 MiB) is far above what C needs.
    let data = notes_folder();
    let tool = with_settings(
        load(&tally()).await,
        write_grant(data.path()),
        Limits {
            memory: 256 << 10,
            ..Limits::default()
        },
    );
    let mut registry = Registry::new();
    registry.add(tool).expect("one tool");
    let appended = call_ok(
        &registry,
        "tally",
        json!({"path": "/data/notes.txt", "append": "four"}),
    )
    .await;
    assert_eq!(appended, [r#"{"bytes":19,"lines":3,"words":4}"#]);
}

#[test]
fn the_c_template_builds_and_passes_its_own_test() {
    let project = tempfile::tempdir().expect("temp dir");
    let template = repo_root().join("guest-sdk/templates/c");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&template).expect("the C template") {
        let path = entry.expect("a template file").path();
        let name = path.file_name().expect("a file name").to_owned();
        let text = std::fs::read_to_string(&path).expect("a text file");
        let text = text
            .replace("__NAME__", "count_words")
            .replace("__PROJECT__", "counter");
        std::fs::write(project.path().join(&name), text).expect("write the project");
        names.push(name.to_string_lossy().into_owned());
    }
    names.sort();
    assert_eq!(names, ["README.md", "test.sh", "tool.c"]);
    // The one command its README gives, with this build's piton.
    let out = run(Command::new("sh")
        .arg("test.sh")
        .current_dir(project.path())
        .env("PITON", piton_bin())
        .env("PITON_CACHE_DIR", cache_dir())
        .env_remove("PITON_PLUGINS")
        .env_remove("PITON_CONFIG"));
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stdout(&out), "ok: count_words works\n");
    assert!(project.path().join("counter.wasm").is_file());
}

#[tokio::test]
async fn c_hints_resolve_as_the_seed_says_and_contradicting_ones_refuse_the_load() {
    // read_only = yes makes destructive no and idempotent yes.
    assert_eq!(
        load(&probe()).await.hints(),
        Hints::read_only().open_world(false)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("tool.c"),
        "#include \"piton.h\"\n\
         static piton_status run(const piton_json *a, piton_result *r) { (void)a; return piton_text(r, \"x\"); }\n\
         PITON_TOOL(.name = \"liar\", .hints = {.read_only = PITON_YES, .destructive = PITON_YES}, .run = run);\n",
    )
    .expect("write tool.c");
    let wasm = dir.path().join("liar.wasm");
    piton_host::build::build(dir.path(), Some(&wasm), &toolchains()).expect("it compiles");
    let refused = runtime()
        .load(LoadFrom::File(wasm.clone()), None)
        .await
        .expect_err("contradicting hints do not load");
    let text = refused.to_string();
    assert!(
        text.contains("read_only = PITON_YES with destructive = PITON_YES"),
        "{text}"
    );
}

#[test]
fn piton_build_names_the_apt_get_command_when_the_c_toolchain_is_missing() {
    let source = repo_root().join("plugins/tally-c");
    let out = tempfile::tempdir().expect("temp dir");
    for (var, value) in [
        ("PITON_CLANG", "/nonexistent/clang"),
        ("PITON_WASI_SYSROOT", "/nonexistent"),
    ] {
        let built = run(piton()
            .arg("build")
            .arg(&source)
            .arg("-o")
            .arg(out.path().join("tally.wasm"))
            .env(var, value));
        let text = stderr(&built);
        assert_eq!(built.status.code(), Some(1), "{var}: {text}");
        assert!(
            text.contains("apt-get install -y clang lld wasi-libc libclang-rt-dev-wasm32"),
            "{var}: {text}"
        );
    }
    assert!(!out.path().join("tally.wasm").exists());
}
