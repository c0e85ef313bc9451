//! The MCP Inspector's CLI (`mcp-inspector --cli`, npm `@modelcontextprotocol/inspector`
//! 2.x) against `piton serve` over stdio, with a temporary HOME for its state.

use std::process::{Command, Output};

use piton_tests::plugins;
use serde_json::{Value, json};

use super::{PEER_RUN, peers, piton_bin, run_within};
use crate::support::{cache_dir, plugins_folder};

/// `mcp-inspector --cli piton serve --plugins DIR ARGS...` with word_count only.
fn inspector(args: &[&str]) -> Output {
    let dir = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let home = tempfile::tempdir().expect("temp HOME");
    let mut cmd: Command = peers().npm_bin("mcp-inspector");
    // The Inspector passes only a few variables to the server: give piton the
    // tests' compile cache explicitly.
    cmd.env("HOME", home.path())
        .arg("--cli")
        .arg("-e")
        .arg(format!("PITON_CACHE_DIR={}", cache_dir().display()))
        .args([piton_bin(), "serve", "--approve", "never", "--plugins"])
        .arg(dir.path())
        .args(args);
    run_within(&mut cmd, PEER_RUN, "mcp-inspector")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the Inspector prints JSON: {e}\nstatus: {}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn inspector_cli_lists_word_count_with_its_hints() {
    let out = inspector(&["--method", "tools/list"]);
    assert!(out.status.success(), "{out:?}");
    let listing = stdout_json(&out);
    let tools = listing["tools"].as_array().expect("a tools array");
    assert_eq!(tools.len(), 1, "{listing:#}");
    assert_eq!(tools[0]["name"], "word_count");
    assert_eq!(
        tools[0]["annotations"],
        json!({
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false,
        })
    );
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["text"]["type"],
        "string"
    );
}

#[test]
fn inspector_cli_calls_word_count() {
    let out = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "word_count",
        "--tool-arg",
        "text=a b c",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout_json(&out),
        json!({"content": [{"type": "text", "text": "3"}], "isError": false})
    );

    // Arguments that do not fit: an error result, which the Inspector exits 5 on.
    let out = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "word_count",
        "--tool-arg",
        "words=a b c",
    ]);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let result = stdout_json(&out);
    assert_eq!(result["isError"], true, "{result:#}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("(input error: "), "{result:#}");
}
