//! An upstream server's own questions: the Python SDK server's `greet` tool
//! (tests/peers/py_server.py) asks its client a name with `elicitation/create`;
//! `piton serve` passes the question to the person who made the call (the Python
//! SDK client, over stdio and Streamable HTTP) with the server's name on it, and
//! their answer back; a client that cannot be asked gets the question declined.

use std::ffi::OsStr;

use piton_tests::plugins;
use serde_json::{Value, json};

use super::{
    HttpServer, Target, call_result, only_text, peers, peers_file, piton_bin, sdk_client_with,
};

use crate::support::plugins_folder;

/// A plugins folder with word_count and the Python server as `[mcp.py]`.
fn folder() -> tempfile::TempDir {
    let dir = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let config = format!(
        "[mcp.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout = \"120s\"\n",
        peers().python().display().to_string(),
        peers_file("py_server.py").display().to_string(),
    );
    std::fs::write(dir.path().join("piton.toml"), config).expect("piton.toml written");
    dir
}

/// `piton serve --approve never` over stdio and over HTTP, each given to `check`
/// with its name.
fn each_target(dir: &tempfile::TempDir, mut check: impl FnMut(Target<'_>, &str)) {
    let stdio = [
        OsStr::new(piton_bin()),
        OsStr::new("serve"),
        OsStr::new("--approve"),
        OsStr::new("never"),
        OsStr::new("--plugins"),
        dir.path().as_os_str(),
    ];
    check(Target::Stdio(&stdio), "stdio");
    // HttpServer::start serves with --approve never.
    let server = HttpServer::start(dir.path());
    check(Target::Url(&server.url), "http");
}

fn asked(report: &Value) -> &[Value] {
    report["asked"].as_array().map_or(&[], Vec::as_slice)
}

fn greet(times: u32) -> (&'static str, Value) {
    ("py__greet", json!({"times": times}))
}

const QUESTION: &str = "MCP server `py` asks: What is your name?";

#[test]
fn an_upstream_question_reaches_the_caller_with_its_name_and_the_answer_goes_back() {
    let dir = folder();
    each_target(&dir, |target, how| {
        let report = sdk_client_with(
            target,
            "legacy",
            &[greet(1), greet(1), greet(1)],
            &[
                "--elicit-content",
                r#"{"name": "Ada"}"#,
                "--elicit",
                "decline",
                "--elicit",
                "cancel",
            ],
        );
        let texts: Vec<&str> = (0..3).map(|i| only_text(call_result(&report, i))).collect();
        assert_eq!(
            texts,
            ["hello Ada", "declined", "cancelled"],
            "{how}: {report:#}"
        );
        let asked = asked(&report);
        assert_eq!(asked.len(), 3, "{how}: {report:#}");
        for question in asked {
            assert_eq!(question["message"], QUESTION, "{how}");
            assert_eq!(
                question["requested_schema"]["required"],
                json!(["name"]),
                "{how}"
            );
            assert_eq!(
                question["requested_schema"]["properties"]["name"]["type"], "string",
                "{how}"
            );
        }
    });
}

#[test]
fn a_caller_that_cannot_be_asked_gets_the_upstream_question_declined() {
    let dir = folder();
    each_target(&dir, |target, how| {
        // No elicitation declared.
        let report = sdk_client_with(target, "legacy", &[greet(1)], &[]);
        assert_eq!(only_text(call_result(&report, 0)), "declined", "{how}");
    });
    each_target(&dir, |target, how| {
        // 2026-07-28 has no session to ask in: the question is not passed on.
        let report = sdk_client_with(
            target,
            "2026-07-28",
            &[greet(1)],
            &["--elicit-content", r#"{"name": "Ada"}"#],
        );
        assert_eq!(only_text(call_result(&report, 0)), "declined", "{how}");
        assert!(asked(&report).is_empty(), "{how}: {report:#}");
    });
}

#[test]
fn an_upstream_may_ask_four_questions_per_call_and_no_more() {
    let dir = folder();
    let content = r#"{"name": "Ada"}"#;
    let options: Vec<&str> = (0..6).flat_map(|_| ["--elicit-content", content]).collect();
    each_target(&dir, |target, how| {
        let report = sdk_client_with(target, "legacy", &[greet(6)], &options);
        assert_eq!(
            only_text(call_result(&report, 0)),
            "hello Ada; hello Ada; hello Ada; hello Ada; declined; declined",
            "{how}"
        );
        assert_eq!(asked(&report).len(), 4, "{how}: {report:#}");
    });
}
