//! The `piton` CLI as a process: the README's promises and the exit codes.

use std::io::Write as _;
use std::process::Stdio;

use piton_tests::{guests, plugins};

use crate::support::*;

#[test]
fn list_shows_the_bundled_examples_with_hints_and_source() {
    let out = run(piton().arg("list"));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for name in ["word_count", "read_file", "checkerboard"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {text}"));
        assert!(
            line.contains("read_only, idempotent, closed_world"),
            "{line}"
        );
        assert!(line.contains("bundled:"), "{line}");
    }
    assert!(text.contains("Count the words in a text."), "{text}");
}

#[test]
fn list_json_is_machine_readable() {
    let out = run(piton().args(["list", "--json"]));
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let word_count = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "word_count")
        .unwrap();
    assert_eq!(word_count["hints"]["read_only"], true);
    assert_eq!(word_count["hints"]["open_world"], false);
    assert_eq!(word_count["hints_are"], "enforced");
}

#[test]
fn call_word_count_prints_3() {
    let out = run(piton().args(["call", "word_count", r#"{"text":"a b c"}"#]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "3\n");
}

#[test]
fn call_reads_arguments_from_stdin_with_a_dash() {
    let mut child = piton()
        .args(["call", "word_count", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"text":"one two"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(stdout(&out), "2\n");
}

#[test]
fn read_file_of_etc_passwd_exits_1_and_prints_none_of_it() {
    let out = run(piton().args(["call", "read_file", r#"{"path":"/etc/passwd"}"#]));
    assert_eq!(out.status.code(), Some(1));
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    for line in passwd.lines().filter(|l| !l.is_empty()) {
        assert!(
            !printed.contains(line),
            "printed a line of /etc/passwd: {line}"
        );
    }
    assert!(printed.contains("cannot read /etc/passwd"), "{printed}");
}

#[test]
fn an_unknown_tool_exits_2_and_names_the_known_ones() {
    let out = run(piton().args(["call", "no_such_tool", "{}"]));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown tool `no_such_tool`"), "{err}");
    assert!(err.contains("word_count"), "{err}");
}

#[test]
fn bad_arguments_are_input_errors_that_exit_1() {
    for (args, expected) in [
        (
            "{not json",
            "(input error: the arguments are not valid JSON",
        ),
        (
            "[1, 2]",
            "(input error: the arguments must be a JSON object, not an array)",
        ),
        (
            r#"{"text": 3}"#,
            "(input error: /text: 3 is not of type \"string\")",
        ),
        ("{}", "(input error: \"text\" is a required property)"),
    ] {
        let out = run(piton().args(["call", "word_count", args]));
        assert_eq!(out.status.code(), Some(1), "{args}");
        assert!(stderr(&out).contains(expected), "{args}: {}", stderr(&out));
    }
}

#[test]
fn a_usage_error_exits_2() {
    let out = run(piton().args(["call"]));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_trap_exits_3_and_says_why() {
    let folder = plugins_folder(&[("panic.wasm", guests::HOSTILE_PANIC)]);
    let out = run(piton()
        .args(["call", "panic", "--plugins"])
        .arg(folder.path()));
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(err.contains("tool `panic` trapped"), "{err}");
    assert!(err.contains("the guest panicked on purpose"), "{err}");
}

#[test]
fn an_image_result_is_saved_and_its_path_printed() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(piton()
        .args([
            "call",
            "checkerboard",
            r#"{"size":16,"cells":4}"#,
            "--image-dir",
        ])
        .arg(dir.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let path = text.trim().rsplit(" saved to ").next().unwrap();
    let png = std::fs::read(path).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{text}");
    assert!(text.starts_with("image (image/png,"), "{text}");
}

#[test]
fn inspect_shows_schema_hints_imports_size_and_hash() {
    let out = run(piton().args(["inspect", "word_count"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        "name:        word_count",
        "hints:       read_only, idempotent, closed_world (Enforced)",
        "sha256:",
        "size:",
        "imports:",
        "wasi:",
        "\"text\"",
    ] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
    let out = run(piton().args(["inspect", "word_count", "--json"]));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["component"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(
        report["input_schema"]["required"],
        serde_json::json!(["text"])
    );
}

#[test]
fn the_plugins_folder_comes_from_the_flag_then_the_environment_then_dot_plugins() {
    let folder = plugins_folder(&[("counter.wasm", guests::HOSTILE_COUNTER)]);
    let listed = |cmd: &mut std::process::Command| stdout(&run(cmd));
    let by_flag = listed(piton().args(["list", "--plugins"]).arg(folder.path()));
    assert!(
        by_flag.contains("counter") && !by_flag.contains("word_count"),
        "{by_flag}"
    );
    let by_env = listed(piton().arg("list").env("PITON_PLUGINS", folder.path()));
    assert!(
        by_env.contains("counter") && !by_env.contains("word_count"),
        "{by_env}"
    );

    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(cwd.path().join("plugins")).unwrap();
    std::fs::copy(
        guests::HOSTILE_COUNTER,
        cwd.path().join("plugins/counter.wasm"),
    )
    .unwrap();
    let by_cwd = listed(piton().arg("list").current_dir(cwd.path()));
    assert!(
        by_cwd.contains("counter") && !by_cwd.contains("word_count"),
        "{by_cwd}"
    );
}

#[test]
fn a_bad_plugin_is_reported_by_file_and_the_others_still_load() {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    std::fs::write(folder.path().join("garbage.wasm"), b"not wasm at all").unwrap();
    let out = run(piton().args(["list", "--plugins"]).arg(folder.path()));
    assert!(out.status.success());
    assert!(stdout(&out).contains("word_count"));
    let err = stderr(&out);
    assert!(
        err.contains("garbage.wasm: not WebAssembly (no \\0asm header at its start)"),
        "{err}"
    );
}

#[test]
fn two_tools_with_one_name_are_neither_served_and_each_error_names_the_other_file() {
    let folder = plugins_folder(&[
        ("a.wasm", plugins::WORD_COUNT),
        ("b.wasm", plugins::WORD_COUNT),
    ]);
    let out = run(piton().args(["list", "--plugins"]).arg(folder.path()));
    let err = stderr(&out);
    let (a, b) = (folder.path().join("a.wasm"), folder.path().join("b.wasm"));
    for (this, other) in [(&a, &b), (&b, &a)] {
        let says = format!(
            "{}: tool `word_count` is also declared by {}",
            this.display(),
            other.display()
        );
        assert!(err.contains(&says), "{says} in {err}");
    }
    assert_eq!(stdout(&out).matches("word_count").count(), 0);
}

#[test]
fn a_guest_flooding_stdout_never_reaches_piton_stdout() {
    let folder = plugins_folder(&[("flood.wasm", guests::HOSTILE_FLOOD_STDOUT)]);
    let out = run(piton()
        .args(["call", "flood_stdout", "--plugins"])
        .arg(folder.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "flooded\n");
    assert!(
        !stderr(&out).contains("FORGED"),
        "guest output is logged only with -v"
    );
}

#[test]
fn the_host_environment_never_reaches_a_guest() {
    let folder = plugins_folder(&[("env.wasm", guests::HOSTILE_READ_ENV)]);
    let out = run(piton()
        .args(["call", "read_env", "{}", "--plugins"])
        .arg(folder.path())
        .env("PITON_TEST_SECRET", "hunter2"));
    assert!(out.status.success(), "{}", stderr(&out));
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["env"], serde_json::json!([]));
    assert!(!stdout(&out).contains("hunter2"));
}

#[test]
fn with_verbose_guest_output_is_logged_bounded_and_named_on_stderr() {
    let folder = plugins_folder(&[("flood.wasm", guests::HOSTILE_FLOOD_STDOUT)]);
    let out = run(piton()
        .args(["-v", "call", "flood_stdout", "--plugins"])
        .arg(folder.path()));
    assert_eq!(stdout(&out), "flooded\n");
    let err = stderr(&out);
    let stdout_log = err
        .lines()
        .find(|l| l.contains("FORGED"))
        .unwrap_or_else(|| panic!("the guest's stdout is logged: {err:.300}"));
    assert!(
        stdout_log.contains("tool=\"flood_stdout\""),
        "{stdout_log:.300}"
    );
    assert!(
        stdout_log.contains("stream=\"stdout\""),
        "{stdout_log:.300}"
    );
    assert!(err.contains("more bytes dropped]"), "the rest is dropped");
    // 16 MiB were written to each stream; 64 KiB of each are kept.
    assert!(err.len() < 256 * 1024, "stderr holds {} bytes", err.len());
}

#[test]
fn list_of_a_plugin_with_a_50_mb_description_refuses_it_and_lists_the_others() {
    let folder = plugins_folder(&[
        ("huge.wasm", guests::HOSTILE_HUGE_DESCRIPTION),
        ("word_count.wasm", plugins::WORD_COUNT),
    ]);
    for args in [vec!["list"], vec!["list", "--json"]] {
        let out = run(piton().args(&args).arg("--plugins").arg(folder.path()));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {:.2000}",
            stderr(&out)
        );
        assert!(stdout(&out).contains("word_count"), "{args:?}");
        assert!(!stdout(&out).contains("huge_description"), "{args:?}");
        let err = stderr(&out);
        let line = err
            .lines()
            .find(|l| l.contains("huge.wasm"))
            .unwrap_or_else(|| panic!("{args:?}: the refusal names the file: {err:.2000}"));
        assert!(
            line.contains("64 KiB"),
            "{args:?}: names the limit: {line:.2000}"
        );
        assert!(line.len() < 400, "{args:?}: one short line: {line:.2000}");
    }
    let out = run(piton()
        .args(["inspect", "huge_description", "--plugins"])
        .arg(folder.path()));
    assert_eq!(out.status.code(), Some(2), "{:.2000}", stderr(&out));
}

#[test]
fn a_plugin_with_a_1_mb_input_schema_is_refused_naming_the_limit() {
    let folder = plugins_folder(&[("big.wasm", guests::HOSTILE_BIG_SCHEMA)]);
    let out = run(piton().args(["list", "--plugins"]).arg(folder.path()));
    assert_eq!(out.status.code(), Some(0), "{:.2000}", stderr(&out));
    assert_eq!(stdout(&out), "no tools\n");
    let err = stderr(&out);
    assert!(
        err.contains("big.wasm") && err.contains("256 KiB"),
        "{err:.2000}"
    );
    assert!(err.len() < 600, "{err:.2000}");
}

#[test]
fn list_cuts_a_wide_description_to_the_width() {
    let folder = plugins_folder(&[("escapes.wasm", guests::HOSTILE_ESCAPES)]);
    let out = run(piton().args(["list", "--plugins"]).arg(folder.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for line in text.lines() {
        assert!(
            line.chars().count() <= 160,
            "piped: at most 160 columns: {line}"
        );
    }
    let row = text.lines().find(|l| l.starts_with("escapes")).unwrap();
    assert!(row.contains("…"), "a cut cell ends with …: {row}");
    assert!(
        row.contains("escapes.wasm"),
        "the source column is kept: {row}"
    );

    let out = run_in_terminal(&[
        "list".as_ref(),
        "--plugins".as_ref(),
        folder.path().as_os_str(),
    ]);
    let text = stdout(&out);
    for line in text.lines() {
        assert!(
            line.trim_end_matches('\r').chars().count() <= 120,
            "a terminal 120 columns wide: {line}"
        );
    }
}

/// What the escapes guest returns: OSC 52 (write the clipboard), CSI 2J (clear the
/// screen), a NUL, a tab, a newline and a bell.
const RAW_ESCAPES: &str = "before\x1b]52;c;cHduZWQ=\x07\x1b[2J\0nul\ttab\nline two\x07";
/// The same, as a terminal must show it.
const SHOWN_ESCAPES: &str = "before\\e]52;c;cHduZWQ=\\x07\\e[2J\\x00nul\ttab\r\nline two\\x07";

/// The terminal got the escapes shown, and no ESC or NUL byte.
fn assert_shown_escaped(out: &std::process::Output) {
    let shown = stdout(out);
    assert!(shown.contains(SHOWN_ESCAPES), "{shown:?}");
    // piton's own progress bar (while a component the shared cache lacks compiles)
    // clears its line with ESC [2K; no other ESC may reach the terminal.
    let bytes = shown.replace("\x1b[2K", "");
    assert!(
        !bytes.contains('\x1b') && !bytes.contains('\0'),
        "{shown:?}"
    );
}

#[test]
fn call_on_a_terminal_shows_control_characters_escaped_and_piped_stays_raw() {
    let folder = plugins_folder(&[("escapes.wasm", guests::HOSTILE_ESCAPES)]);
    let out = run_in_terminal(&[
        "call".as_ref(),
        "escapes".as_ref(),
        "--plugins".as_ref(),
        folder.path().as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_shown_escaped(&out);

    let out = run(piton()
        .args(["call", "escapes", "--plugins"])
        .arg(folder.path()));
    assert_eq!(stdout(&out), format!("{RAW_ESCAPES}\n"), "piped: raw");
}

#[test]
fn a_guest_error_on_a_terminal_is_shown_escaped() {
    let folder = plugins_folder(&[("escapes.wasm", guests::HOSTILE_ESCAPES)]);
    let out = run_in_terminal(&[
        "call".as_ref(),
        "escapes".as_ref(),
        r#"{"fail":true}"#.as_ref(),
        "--plugins".as_ref(),
        folder.path().as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_shown_escaped(&out);

    let out = run(piton()
        .args(["call", "escapes", r#"{"fail":true}"#, "--plugins"])
        .arg(folder.path()));
    assert_eq!(stderr(&out), format!("{RAW_ESCAPES}\n"), "piped: raw");
}

#[test]
fn list_and_inspect_on_a_terminal_show_a_description_escaped() {
    let folder = plugins_folder(&[("escapes.wasm", guests::HOSTILE_ESCAPES)]);
    for args in [vec!["list"], vec!["inspect", "escapes"]] {
        let mut args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        args.extend(["--plugins".as_ref(), folder.path().as_os_str()]);
        let out = run_in_terminal(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
        let shown = stdout(&out);
        assert!(shown.contains(r"Escapes\e]52;c;cHduZWQ=\x07"), "{shown:?}");
        assert!(!out.stdout.contains(&0x1b), "{args:?}: {shown:?}");
    }
}

/// The peak resident memory of `piton ARGS`, in KiB (python3's getrusage).
fn peak_rss_kib(args: &[&std::ffi::OsStr]) -> (u64, std::process::Output) {
    const SCRIPT: &str = "import resource, subprocess, sys\n\
        p = subprocess.run(sys.argv[1:], capture_output=True)\n\
        sys.stdout.buffer.write(p.stderr)\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
        sys.exit(p.returncode)";
    let mut cmd = python_running_piton(SCRIPT, args);
    let out = run(&mut cmd);
    let text = stdout(&out);
    let kib = text
        .lines()
        .last()
        .and_then(|line| line.trim().parse().ok())
        .expect("python3 prints the peak RSS last");
    (kib, out)
}

#[test]
fn a_result_of_aliased_strings_is_refused_before_the_host_copies_it() {
    let folder = plugins_folder(&[
        ("alias.wasm", guests::HOSTILE_ALIAS_OUTPUT),
        ("counter.wasm", guests::HOSTILE_COUNTER),
    ]);
    let call = |name: &str| {
        peak_rss_kib(&[
            "call".as_ref(),
            name.as_ref(),
            "--plugins".as_ref(),
            folder.path().as_os_str(),
        ])
    };
    let (baseline, _) = call("counter");
    let (peak, out) = call("alias_output");
    assert_eq!(out.status.code(), Some(3), "a trap: {}", stdout(&out));
    assert!(stdout(&out).contains("alias_output"), "{}", stdout(&out));
    // 120 MiB would be copied; the output limit is 16 MiB.
    assert!(
        peak < baseline + 48 * 1024,
        "peak {peak} KiB, a plain call {baseline} KiB: {}",
        stdout(&out)
    );
}

#[test]
fn a_wasm_tool_in_the_name_space_of_a_configured_server_is_refused_and_the_server_kept() {
    let folder = plugins_folder(&[("counter.wasm", guests::HOSTILE_COUNTER)]);
    std::fs::write(
        folder.path().join("piton.toml"),
        "[tools.counter]\nname = \"x__y\"\n\n[mcp.x]\ncommand = \"piton-test-no-such-server\"\n",
    )
    .unwrap();
    let out = run(piton().args(["list", "--plugins"]).arg(folder.path()));
    let err = stderr(&out);
    let refusal = err
        .lines()
        .find(|l| l.contains("counter.wasm"))
        .unwrap_or_else(|| panic!("the wasm tool is refused: {err}"));
    for part in ["`x__y`", "mcp:x", "[mcp.x]"] {
        assert!(refusal.contains(part), "{part} in {refusal}");
    }
    assert!(!err.contains("MCP server not added"), "{err}");
    assert!(!stdout(&out).contains("x__y"), "{}", stdout(&out));
}
