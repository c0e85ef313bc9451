//! The MCP conformance suite (`@modelcontextprotocol/conformance`, server mode, every
//! suite) against `piton serve --http`, serving the guests in tests/guests/conformance-*
//! under the tool names its scenarios call. The scenarios piton does not serve are
//! listed, each with its reason, in tests/peers/conformance-expected-failures.yml.

use std::collections::BTreeSet;
use std::path::Path;

use piton_tests::guests;
use serde_json::{Value, json};

use super::{
    HttpServer, Target, base64, call_result, listed, only_text, output, peers, peers_file,
    sdk_client,
};
use crate::support::plugins_folder;

/// The bytes test_image_content returns.
const RED_PIXEL: &[u8] = include_bytes!("../../guests/conformance-image-content/red-pixel.png");

/// The conformance guests in a plugins folder.
fn conformance_plugins() -> tempfile::TempDir {
    plugins_folder(&[
        ("test_simple_text.wasm", guests::CONFORMANCE_SIMPLE_TEXT),
        ("test_image_content.wasm", guests::CONFORMANCE_IMAGE_CONTENT),
        (
            "test_error_handling.wasm",
            guests::CONFORMANCE_ERROR_HANDLING,
        ),
        (
            "json_schema_2020_12_tool.wasm",
            guests::CONFORMANCE_JSON_SCHEMA,
        ),
    ])
}

/// The scenarios the baseline file lists under `server:`.
fn expected_failures() -> BTreeSet<String> {
    let path = peers_file("conformance-expected-failures.yml");
    let text = std::fs::read_to_string(&path).expect("the expected failures file");
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|name| name.trim().to_owned())
        .collect()
}

/// Each scenario's checks from the suite's output folder, whose entries are named
/// `server-<scenario>-<timestamp>` with a timestamp like `2026-11-30T06-54-02-720Z`.
fn scenario_checks(out: &Path) -> Vec<(String, Vec<Value>)> {
    const STAMP: usize = "-2026-11-30T06-54-02-720Z".len();
    let mut scenarios = Vec::new();
    for entry in std::fs::read_dir(out).expect("the suite's output folder") {
        let entry = entry.expect("an output entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let scenario = name
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().saturating_sub(STAMP)))
            .unwrap_or_else(|| panic!("an output folder named server-NAME-TIME: {name}"));
        let checks = std::fs::read(entry.path().join("checks.json")).expect("checks.json");
        let checks: Vec<Value> = serde_json::from_slice(&checks).expect("checks.json is JSON");
        scenarios.push((scenario.to_owned(), checks));
    }
    scenarios.sort_by(|a, b| a.0.cmp(&b.0));
    scenarios
}

#[test]
fn conformance_suite_passes_but_for_the_listed_scenarios() {
    let plugins = conformance_plugins();
    let server = HttpServer::start(plugins.path());

    // The suite's own checks are weak (tools-call-simple-text passes on any text
    // block, even "tool not found" with isError): check the served results first.
    let report = sdk_client(
        Target::Url(&server.url),
        "legacy",
        &[
            ("test_simple_text", json!({})),
            ("test_image_content", json!({})),
            ("test_error_handling", json!({})),
            (
                "json_schema_2020_12_tool",
                json!({"name": "n", "address": {"city": "c"}}),
            ),
            ("json_schema_2020_12_tool", json!({"extra": 1})),
        ],
    );
    let text = call_result(&report, 0);
    assert_eq!(text["isError"], false, "{text:#}");
    assert_eq!(
        only_text(text),
        "This is a simple text response for testing."
    );
    assert_eq!(
        call_result(&report, 1)["content"],
        json!([{"type": "image", "data": base64(RED_PIXEL), "mimeType": "image/png"}])
    );
    let error = call_result(&report, 2);
    assert_eq!(error["isError"], true, "{error:#}");
    assert_eq!(
        only_text(error),
        "This tool intentionally returns an error for testing"
    );
    let echoed = call_result(&report, 3);
    assert_eq!(
        echoed["structuredContent"],
        json!({"name": "n", "address": {"city": "c"}}),
        "{echoed:#}"
    );
    assert_eq!(
        call_result(&report, 4)["isError"],
        true,
        "additionalProperties: false is enforced"
    );
    let schema = &listed(&report, "json_schema_2020_12_tool")["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["$defs"]["address"]["properties"]["city"]["type"],
        "string"
    );

    let results = tempfile::tempdir().expect("temp dir");
    let baseline = peers_file("conformance-expected-failures.yml");
    let out = output(
        peers()
            .npm_bin("conformance")
            .args(["server", "--suite", "all", "--url", &server.url])
            .arg("--expected-failures")
            .arg(&baseline)
            .arg("-o")
            .arg(results.path()),
        "the conformance suite (exit 1: a scenario failed that is not in the baseline, or \
         one in the baseline passed)",
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("Baseline check passed"),
        "the suite's summary:\n{summary}"
    );

    // Every scenario ran, and those piton serves passed every check outright.
    let expected = expected_failures();
    let scenarios = scenario_checks(results.path());
    let ran: BTreeSet<&str> = scenarios.iter().map(|(name, _)| name.as_str()).collect();
    for name in &expected {
        assert!(ran.contains(name.as_str()), "{name} ran: {ran:?}");
    }
    for served in [
        "server-initialize",
        "ping",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-error",
        "json-schema-2020-12",
    ] {
        assert!(ran.contains(served), "{served} ran: {ran:?}");
    }
    for (name, checks) in &scenarios {
        if expected.contains(name) {
            continue;
        }
        let statuses: Vec<&str> = checks.iter().filter_map(|c| c["status"].as_str()).collect();
        assert!(
            statuses.contains(&"SUCCESS")
                && statuses.iter().all(|s| ["SUCCESS", "INFO"].contains(s)),
            "{name}: {checks:#?}"
        );
    }
}
