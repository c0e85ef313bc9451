//! `piton call run_python '{"code": "…"}'`: a program tried by hand, on the bundled
//! tools, with nothing in piton.toml; other tools' calls keep code mode out.

use crate::support::{piton, run, stderr, stdout};

#[test]
fn piton_call_run_python_runs_a_program_over_the_bundled_tools() {
    let program = r#"{"code": "n = word_count(text='a b c')\nprint('counted', n)\n[n, n * 2]"}"#;
    let out = run(piton().args(["call", "run_python", program]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[\n  3,\n  6\n]\nprinted:\ncounted 3\n\n");
    // An error result exits 1, as any tool's does, naming the line.
    let out = run(piton().args(["call", "run_python", r#"{"code": "x = 1\nx +"}"#]));
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("the program does not parse (line 2)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_code_mode_run_python_is_not_among_the_tools() {
    let out = run(piton().args(["list", "--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("run_python"), "{}", stdout(&out));
}
