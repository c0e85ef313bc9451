//! JavaScript tools, built from source by piton's builder with componentize-js: the
//! SDK's unit tests under Node; the example plugins/text-js called through the host's
//! registry, `piton call` and `piton serve`; each way a call ends (content, input
//! error, error result, a trap for an uncaught exception); hints the sandbox enforces
//! on `fetch`; the `piton new` template's own test and build; and sources the build
//! refuses with a message naming the file.

use std::path::{Path, PathBuf};
use std::process::Command;

use piton_host::grants::Grants;
use piton_host::wasm::LoadFrom;
use piton_host::{Limits, Registry, ToolError};
use serde_json::{Value, json};

use super::{built, toolchains, try_built};
use crate::net::{Server, ip};
use crate::peers::{
    Target, call_result, listed, listed_names, only_text, piton_bin, repo_root, sdk_client,
};
use crate::support::*;

/// The example's tools, by name, in the order a toolbox declares them.
const TEXT_TOOLS: [&str; 5] = [
    "fill_template",
    "http_request",
    "slugify",
    "text_stats",
    "word_count",
];

/// Node 22 from target/peers.
fn node() -> PathBuf {
    toolchains()
        .node
        .expect("the tests' toolchains name a node")
}

/// A registry of every tool of the component `wasm`, each with `grants`.
async fn registry_of_box(wasm: &Path, grants: Grants) -> Registry {
    let mut registry = Registry::new();
    let tools = runtime()
        .load(LoadFrom::File(wasm.into()), None)
        .await
        .unwrap_or_else(|e| panic!("{} loads: {e}", wasm.display()));
    for tool in tools {
        registry
            .add(with_settings(tool, grants.clone(), Limits::default()))
            .expect("no duplicate names");
    }
    registry
}

#[test]
fn the_sdk_unit_tests_pass_under_node() {
    let out = Command::new(node())
        .arg("--test")
        .current_dir(repo_root().join("guest-sdk/js"))
        .output()
        .expect("node runs");
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "node --test failed:\n{text}");
    let passed: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(passed >= 12, "the SDK's tests ran: {text}");
}

#[tokio::test]
async fn the_example_builds_and_its_tools_answer_through_the_registry() {
    let wasm = built("plugins/text-js");
    let registry = registry_of_box(&wasm, Grants::default()).await;
    assert_eq!(registry.names(), TEXT_TOOLS);

    let word_count = registry.get("word_count").expect("listed");
    assert_eq!(word_count.spec().description, "Count the words in a text.");
    assert_eq!(word_count.spec().input_schema["required"], json!(["text"]));
    assert!(word_count.hints().is_read_only());
    assert!(!word_count.hints().is_open_world());
    let http = registry.get("http_request").expect("listed");
    assert!(!http.hints().is_read_only(), "{:?}", http.hints());
    assert!(http.hints().is_destructive() && http.hints().is_open_world());

    assert_eq!(
        call_ok(&registry, "word_count", json!({"text": "a b  c"})).await,
        ["3"]
    );
    assert_eq!(
        call_ok(
            &registry,
            "slugify",
            json!({"text": "Hello, World!", "separator": "_"})
        )
        .await,
        ["hello_world"]
    );
    let stats = call_ok(&registry, "text_stats", json!({"text": "one two\nthree"})).await;
    let stats: Value = serde_json::from_str(&stats[0]).expect("JSON");
    assert_eq!(
        stats,
        json!({"characters": 13, "words": 3, "lines": 2, "longest": "three"})
    );

    // Input errors from the schema, and an error result from the tool.
    let error = call_error(&registry, "slugify", json!({"text": 3})).await;
    assert!(
        matches!(&error, ToolError::Input(m) if m.contains("text") && m.contains("string")),
        "{error:?}"
    );
    let error = call_error(&registry, "slugify", json!({"text": "x", "separator": "+"})).await;
    assert!(
        matches!(&error, ToolError::Input(m) if m.contains("separator")),
        "{error:?}"
    );
    let error = call_error(
        &registry,
        "fill_template",
        json!({"template": "Dear {{name}}, {{day}}", "values": {"day": "Monday"}}),
    )
    .await;
    assert_eq!(error, ToolError::Failed("no value for name".to_owned()));
    assert_eq!(
        call_ok(
            &registry,
            "fill_template",
            json!({"template": "Dear {{name}}", "values": {"name": "Ada"}})
        )
        .await,
        ["Dear Ada"]
    );
}

#[test]
fn the_example_is_listed_and_called_by_the_cli() {
    let wasm = built("plugins/text-js");
    let folder = plugins_folder(&[("text-js.wasm", wasm.to_str().expect("a UTF-8 path"))]);
    let out = run(piton()
        .args(["list", "--json", "--plugins"])
        .arg(folder.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let text = listed.to_string();
    for name in TEXT_TOOLS {
        assert!(
            text.contains(&format!("\"{name}\"")),
            "{name} in {listed:#}"
        );
    }

    let out = run(piton()
        .args(["call", "--plugins"])
        .arg(folder.path())
        .args(["word_count", r#"{"text":"one two three four"}"#]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "4\n");

    let out = run(piton()
        .args(["call", "--plugins"])
        .arg(folder.path())
        .args(["slugify", r#"{"text":3}"#]));
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("(input error: ") && said.contains("text") && said.contains("string"),
        "{said}"
    );
}

#[test]
fn the_example_answers_an_mcp_client_through_piton_serve() {
    let wasm = built("plugins/text-js");
    let folder = plugins_folder(&[("text-js.wasm", wasm.to_str().expect("a UTF-8 path"))]);
    let command = [
        std::ffi::OsStr::new(piton_bin()),
        std::ffi::OsStr::new("serve"),
        std::ffi::OsStr::new("--approve"),
        std::ffi::OsStr::new("never"),
        std::ffi::OsStr::new("--plugins"),
        folder.path().as_os_str(),
    ];
    let report = sdk_client(
        Target::Stdio(&command),
        "auto",
        &[
            ("word_count", json!({"text": "a b c"})),
            ("slugify", json!({"text": 3})),
            ("fill_template", json!({"template": "{{x}}", "values": {}})),
        ],
    );
    assert_eq!(listed_names(&report), TEXT_TOOLS, "{report:#}");
    let word_count = listed(&report, "word_count");
    assert_eq!(word_count["description"], "Count the words in a text.");
    assert_eq!(
        word_count["annotations"],
        json!({
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false,
        })
    );
    let counted = call_result(&report, 0);
    assert_eq!(counted["isError"], false, "{counted:#}");
    assert_eq!(only_text(counted), "3");
    let refused = call_result(&report, 1);
    assert_eq!(refused["isError"], true, "{refused:#}");
    let text = only_text(refused);
    assert!(
        text.starts_with("(input error: ") && text.contains("text") && text.contains("string"),
        "{text}"
    );
    let failed = call_result(&report, 2);
    assert_eq!(failed["isError"], true, "{failed:#}");
    assert_eq!(only_text(failed), "no value for x");
}

#[tokio::test]
async fn each_way_a_call_ends_reaches_the_host() {
    let wasm = built("tests/lang/js/outcomes.js");
    let registry = registry_of_box(&wasm, Grants::default()).await;
    let how = |how: &str| json!({ "how": how });

    assert_eq!(
        call_ok(&registry, "outcome", how("text")).await,
        ["plain text"]
    );
    assert_eq!(call_ok(&registry, "outcome", how("async")).await, ["later"]);
    let done = registry.call("outcome", how("done")).await.expect("runs");
    assert_eq!(done.expect("content").len(), 0, "undefined is (done)");
    let json_text = call_ok(&registry, "outcome", how("json")).await;
    assert_eq!(
        serde_json::from_str::<Value>(&json_text[0]).expect("JSON"),
        json!({"list": [1, 2], "nested": {"ok": true}})
    );
    let image = registry
        .call("outcome", how("image"))
        .await
        .expect("runs")
        .expect("content");
    assert_eq!(image.len(), 2, "{image:?}");
    assert!(
        matches!(&image[1], piton_host::Content::Image { mime_type, .. } if mime_type == "image/png"),
        "{image:?}"
    );

    assert_eq!(
        call_error(&registry, "outcome", how("failed")).await,
        ToolError::Failed("the thing failed".to_owned())
    );
    assert_eq!(
        call_error(&registry, "outcome", how("input")).await,
        ToolError::Input("how is not acceptable".to_owned())
    );
    // Arguments that do not fit the schema are refused (by the host, before the SDK).
    let error = call_error(&registry, "outcome", json!({"how": 1})).await;
    assert!(
        matches!(&error, ToolError::Input(m) if m.contains("how")),
        "{error:?}"
    );

    // A bug, a thrown non-Error, a value JSON cannot hold and a rejected promise
    // stop the run.
    // Each is reported as the exception, with where in the tool it was thrown.
    for (bad, says) in [
        ("bug", "can't access property \"property\" of null"),
        (
            "string",
            "tool outcome threw a string (\"a bare string\"), not an Error",
        ),
        ("bigint", "a BigInt, which cannot become JSON"),
        ("rejected", "RangeError: a rejected promise"),
    ] {
        let message = call_stops(&registry, "outcome", how(bad)).await;
        assert!(
            message.contains("tool `outcome` trapped") && message.contains(says),
            "{bad}: {message}"
        );
    }
    let message = call_stops(&registry, "outcome", how("bug")).await;
    assert!(message.contains("outcome@outcomes.js:"), "{message}");
    // The instance after a trap is gone; the next call gets a fresh one.
    assert_eq!(
        call_ok(&registry, "outcome", how("text")).await,
        ["plain text"]
    );
}

#[tokio::test]
async fn a_read_only_js_tool_can_send_safe_methods_only() {
    let wasm = built("tests/lang/js/outcomes.js");
    // Started after the build: the test server answers for 60 s only.
    let server = Server::ok("fine");
    let url = server.url("/thing");
    let grants = Grants {
        network: vec![ip(server.port)],
        ..Grants::default()
    };
    let registry = registry_of_box(&wasm, grants).await;
    let request = |method: &str, safe: bool| json!({"url": url, "method": method, "safe": safe});

    // Declared read-only: a POST is refused by the sandbox, before the server.
    let error = call_error(&registry, "read_only_send", request("POST", false)).await;
    assert!(
        matches!(&error, ToolError::Failed(m) if m.starts_with("POST refused")),
        "{error:?}"
    );
    assert!(server.untouched(), "{:?}", server.requests(0));
    assert_eq!(
        call_ok(&registry, "read_only_send", request("GET", false)).await,
        ["HTTP 200 fine"]
    );

    // Narrowed by hintsFor to read-only: the same refusal; not narrowed: sent.
    let error = call_error(&registry, "send", request("POST", true)).await;
    assert!(
        matches!(&error, ToolError::Failed(m) if m.starts_with("POST refused")),
        "{error:?}"
    );
    assert_eq!(
        call_ok(&registry, "send", request("POST", false)).await,
        ["HTTP 200 fine"]
    );
    let methods: Vec<String> = server
        .requests(2)
        .iter()
        .map(|s| s.head.split(' ').next().unwrap_or("").to_owned())
        .collect();
    assert_eq!(methods, ["GET", "POST"]);
}

#[test]
fn bad_sources_fail_the_build_naming_the_file_and_the_problem() {
    let cases = [
        ("syntax_error.js", "SyntaxError", "syntax_error.js:3"),
        (
            "bad_name.js",
            "a tool's name must match [A-Za-z0-9_-]{1,64}, not \"two words\"",
            "at bad_name.js:5",
        ),
        (
            "contradiction.js",
            "readOnly: true contradicts destructive: true",
            "at contradiction.js:3",
        ),
        ("no_tools.js", "no_tools.js exports no tool", ""),
    ];
    for (file, problem, place) in cases {
        let path = format!("tests/lang/js/{file}");
        let message = try_built(&path).expect_err(file);
        assert!(
            message.contains(&path) && message.contains(problem) && message.contains(place),
            "{file}: {message}"
        );
        assert!(
            !message.contains("componentize.js:") && !message.contains("piton.js:"),
            "{file}: Node's and the SDK's frames are left out: {message}"
        );
    }
}

#[test]
fn a_missing_componentize_js_names_the_command_that_installs_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let toolchains = piton_host::build::Toolchains {
        componentize_js: Some(dir.path().join("componentize-js")),
        ..toolchains()
    };
    let error = piton_host::build::build(
        &repo_root().join("plugins/text-js"),
        Some(&dir.path().join("out.wasm")),
        &toolchains,
    )
    .expect_err("no componentize-js there");
    let text = error.to_string();
    assert!(
        text.contains(
            "install it with: npm install -g @bytecodealliance/componentize-js@0.23.0 \
             @bytecodealliance/preview2-shim@0.25.0"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_new_project_passes_its_own_test_and_builds_into_a_tool() {
    let project = tempfile::tempdir().expect("temp dir");
    let dir = project.path().join("tally-words");
    let made = piton_host::build::new::new_project(piton_host::build::Lang::Js, &dir)
        .expect("piton new makes a JS project");
    assert_eq!(made.tool, "tally_words");
    // The SDK comes with it, for the project's tests under Node.
    assert!(
        made.files.iter().any(|f| f == "piton.js"),
        "{:?}",
        made.files
    );
    let sdk = std::fs::read_to_string(dir.join("piton.js")).expect("piton.js");
    assert_eq!(sdk, piton_host::build::js::SDK);

    let out = Command::new(node())
        .arg("--test")
        .current_dir(&dir)
        .output()
        .expect("node runs");
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "the template's test:\n{said}");
    assert!(said.contains("# pass 3"), "{said}");

    let wasm = dir.join("tally-words.wasm");
    let built = piton_host::build::build(&dir, None, &toolchains()).expect("the project builds");
    assert_eq!(built.wasm, wasm);
    let registry = registry_of_box(&wasm, Grants::default()).await;
    assert_eq!(registry.names(), ["tally_words"]);
    assert_eq!(
        call_ok(&registry, "tally_words", json!({"text": "one two three"})).await,
        ["3"]
    );
}
