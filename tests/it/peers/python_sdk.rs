//! The official MCP Python SDK (`mcp.Client`) as piton's client, over stdio and
//! Streamable HTTP; and `tests/peers/py_server.py`, the SDK server the upstream tests
//! use, checked to behave as its header says.

use std::ffi::OsStr;

use piton_tests::plugins;
use serde_json::{Value, json};

use super::{
    HttpServer, Target, call_result, listed, listed_names, only_text, peers, peers_file, piton_bin,
    sdk_client, sdk_client_with,
};
use crate::support::plugins_folder;

/// word_count's calls: a good one and one with arguments that do not fit.
fn word_count_calls() -> [(&'static str, Value); 2] {
    [
        ("word_count", json!({"text": "a b c"})),
        ("word_count", json!({"text": 3})),
    ]
}

/// The listing and both calls of [`word_count_calls`], as any client must see them.
fn assert_word_count(report: &Value) {
    assert_eq!(listed_names(report), ["word_count"], "{report:#}");
    let tool = listed(report, "word_count");
    assert_eq!(
        tool["annotations"],
        json!({
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false,
        }),
        "word_count's hints as annotations"
    );
    assert_eq!(tool["description"], "Count the words in a text.");
    assert_eq!(tool["inputSchema"]["required"], json!(["text"]));

    let counted = call_result(report, 0);
    assert_eq!(counted["isError"], false, "{counted:#}");
    assert_eq!(only_text(counted), "3");

    let refused = call_result(report, 1);
    assert_eq!(refused["isError"], true, "{refused:#}");
    let text = only_text(refused);
    assert!(
        text.starts_with("(input error: ") && text.ends_with(')') && text.contains("string"),
        "an input error the model can act on: {text}"
    );
}

/// `piton serve --plugins DIR` as a stdio command line.
fn serve_stdio(plugins: &std::path::Path) -> [&OsStr; 4] {
    [
        OsStr::new(piton_bin()),
        OsStr::new("serve"),
        OsStr::new("--plugins"),
        plugins.as_os_str(),
    ]
}

#[test]
fn sdk_client_discovers_then_lists_and_calls_over_stdio() {
    let dir = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    // The SDK's default mode sends server/discover first and falls back to
    // initialize on an error; either way the session must work.
    let report = sdk_client(
        Target::Stdio(&serve_stdio(dir.path())),
        "auto",
        &word_count_calls(),
    );
    assert!(
        ["2026-07-28", "2025-11-25"].contains(&report["protocol_version"].as_str().unwrap_or("")),
        "{report:#}"
    );
    assert_eq!(report["server_info"]["name"], "piton");
    assert_word_count(&report);
}

#[test]
fn sdk_client_initializes_over_stdio_in_legacy_mode() {
    let dir = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let report = sdk_client(
        Target::Stdio(&serve_stdio(dir.path())),
        "legacy",
        &word_count_calls(),
    );
    assert_eq!(report["protocol_version"], "2025-11-25", "{report:#}");
    assert_word_count(&report);
}

#[test]
fn sdk_client_lists_and_calls_over_streamable_http() {
    let dir = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let server = HttpServer::start(dir.path());
    for mode in ["auto", "legacy"] {
        let report = sdk_client(Target::Url(&server.url), mode, &word_count_calls());
        assert_eq!(report["server_info"]["name"], "piton", "{mode}");
        assert_word_count(&report);
    }
    assert!(
        !server.log().contains("ERROR"),
        "the server logged an error:\n{}",
        server.log()
    );
}

#[test]
fn py_server_serves_the_tools_its_header_documents() {
    let python = peers().python();
    let script = peers_file("py_server.py");
    let command = [python.as_os_str(), script.as_os_str()];
    let report = sdk_client(
        Target::Stdio(&command),
        "auto",
        &[
            ("add", json!({"a": 2, "b": 3})),
            ("shout", json!({"text": "hi"})),
            ("fail", json!({"message": "boom"})),
            ("structured", json!({"a": 2, "b": 3})),
            ("pid", json!({})),
            ("sleep", json!({"seconds": 0.1})),
            ("add", json!({"a": "x"})),
        ],
    );
    assert_eq!(
        listed_names(&report),
        [
            "add",
            "shout",
            "fail",
            "structured",
            "pid",
            "sleep",
            "greet",
            "welcome",
            "lookalike"
        ]
    );
    let read_only = json!({
        "readOnlyHint": true,
        "destructiveHint": false,
        "idempotentHint": true,
        "openWorldHint": false,
    });
    for name in [
        "add",
        "fail",
        "structured",
        "pid",
        "greet",
        "welcome",
        "lookalike",
    ] {
        assert_eq!(listed(&report, name)["annotations"], read_only, "{name}");
    }
    assert!(listed(&report, "shout").get("annotations").is_none());
    assert_eq!(
        listed(&report, "sleep")["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})
    );
    for name in ["add", "shout", "fail", "pid", "sleep", "greet", "welcome"] {
        assert!(
            listed(&report, name).get("outputSchema").is_none(),
            "{name}"
        );
    }
    assert_eq!(
        listed(&report, "structured")["outputSchema"]["required"],
        json!(["sum"])
    );

    assert_eq!(only_text(call_result(&report, 0)), "5");
    assert_eq!(only_text(call_result(&report, 1)), "HI");
    let failed = call_result(&report, 2);
    assert_eq!(failed["isError"], true);
    assert_eq!(only_text(failed), "Error executing tool fail: boom");
    let structured = call_result(&report, 3);
    assert_eq!(structured["content"], json!([]));
    assert_eq!(structured["structuredContent"], json!({"sum": 5}));
    let pid: u32 = only_text(call_result(&report, 4))
        .parse()
        .expect("pid is a number");
    assert!(pid > 1);
    assert_eq!(only_text(call_result(&report, 5)), "slept 0.1");
    assert_eq!(call_result(&report, 6)["isError"], true);
    for index in [0, 1, 3, 4, 5] {
        assert_eq!(
            call_result(&report, index)["isError"],
            false,
            "call {index}"
        );
    }
    for index in [0, 1, 4, 5] {
        let result = call_result(&report, index);
        assert!(result.get("structuredContent").is_none(), "{result:#}");
    }
    // greet asks in a session (2025-11-25).
    let report = sdk_client_with(
        Target::Stdio(&command),
        "legacy",
        &[("greet", json!({"times": 2}))],
        &[
            "--elicit-content",
            r#"{"name": "Ada"}"#,
            "--elicit",
            "decline",
        ],
    );
    assert_eq!(only_text(call_result(&report, 0)), "hello Ada; declined");
    let asked = report["asked"].as_array().expect("questions recorded");
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0]["message"], "What is your name?");
    assert_eq!(asked[0]["requested_schema"]["required"], json!(["name"]));
    assert_eq!(
        asked[0]["requested_schema"]["properties"]["name"]["type"],
        "string"
    );
}
