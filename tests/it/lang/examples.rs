//! The Go and TypeScript examples (and the TypeScript test toolbox) beyond what each
//! language's own tests show: the hints the sandbox enforces on their calls, and the
//! examples served over Streamable HTTP to the official Python SDK's client. The
//! components are the ones the other language tests build (`target/lang-built`).

use piton_host::grants::Grants;
use piton_host::wasm::LoadFrom;
use piton_host::{CallContext, Hints, Limits, Registry, ToolError};
use serde_json::{Value, json};

use super::built;
use super::go::{grant_in_config, granted, notes, notes_folder};
use crate::net::{Server, ip};
use crate::peers::{HttpServer, Target, call_result, listed, only_text, sdk_client};
use crate::support::*;

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

/// notes-go's `note` narrows a call without `add` to read-only, and such a call gets
/// the granted folder read-only although piton.toml grants it for writing: the
/// sandbox follows the call's hints, not what the tool then does. Called with those
/// narrowed hints, the tool's own write (an `add`) is refused and the file is left as
/// it was; with the hints `HintsFor` gives a call that adds (the tool's own), the same
/// call writes.
#[tokio::test]
async fn the_go_example_s_narrowed_call_cannot_write_into_its_write_granted_folder() {
    let data = notes_folder();
    let registry = granted(&notes(), data.path()).await;
    let reading = args(json!({"path": "/data/notes.txt"}));
    let adding = args(json!({"path": "/data/notes.txt", "add": "four"}));
    let narrowed = registry
        .hints_for("note", &reading)
        .await
        .expect("hints_for answers");
    assert_eq!(narrowed, Hints::read_only().open_world(false));
    let note = registry.get("note").expect("listed");
    let refused = note
        .call(&CallContext::new(), &adding, narrowed)
        .await
        .expect("no trap");
    assert_eq!(
        refused,
        Err(ToolError::Failed(
            "/data/notes.txt may not be changed by this call".to_owned()
        ))
    );
    let notes_text = || std::fs::read_to_string(data.path().join("notes.txt")).expect("notes");
    assert_eq!(notes_text(), "one two\nthree\n");
    // The narrowed call itself reads as before.
    assert_eq!(
        call_ok(&registry, "note", Value::Object(reading)).await,
        [r#"{"bytes":14,"lines":2,"words":3}"#]
    );
    let own = registry
        .hints_for("note", &adding)
        .await
        .expect("hints_for answers");
    assert_eq!(own, Hints::worst().open_world(false));
    assert_eq!(
        call_ok(&registry, "note", Value::Object(adding)).await,
        [r#"{"bytes":19,"lines":3,"words":4}"#]
    );
    assert_eq!(notes_text(), "one two\nthree\nfour\n");
}

/// A TypeScript tool has no file API (guest-sdk/js/README.md: the engine has no `fs`,
/// and the build bundles nothing but the module and piton.js), so what a read-only
/// hint withholds from its calls is the network's writes: a tool declared read-only,
/// granted a write mount and the server, may send GET but not POST.
#[tokio::test]
async fn a_read_only_ts_tool_sends_safe_methods_only_whatever_its_grants() {
    let wasm = built("tests/lang/ts/outcomes.ts");
    // Started after the build: the test server answers for 60 s only.
    let server = Server::ok("fine");
    let url = server.url("/thing");
    let data = notes_folder();
    let grants = Grants {
        network: vec![ip(server.port)],
        ..write_grant(data.path())
    };
    let mut registry = Registry::new();
    let tools = runtime()
        .load(LoadFrom::File(wasm), None)
        .await
        .expect("the toolbox loads");
    for tool in tools {
        registry
            .add(with_settings(tool, grants.clone(), Limits::default()))
            .expect("no duplicate names");
    }
    assert!(
        registry
            .get("ts_send")
            .expect("listed")
            .hints()
            .is_read_only()
    );
    let send = |method: &str| json!({"url": url, "method": method});
    let refused = call_error(&registry, "ts_send", send("POST")).await;
    assert!(
        matches!(&refused, ToolError::Failed(m) if m.starts_with("POST refused")),
        "{refused:?}"
    );
    assert!(server.untouched(), "{:?}", server.requests(0));
    assert_eq!(
        call_ok(&registry, "ts_send", send("GET")).await,
        ["HTTP 200 fine"]
    );
    let methods: Vec<String> = server
        .requests(1)
        .iter()
        .map(|s| s.head.split(' ').next().unwrap_or("").to_owned())
        .collect();
    assert_eq!(methods, ["GET"]);
}

#[test]
fn the_go_and_ts_examples_answer_the_python_sdk_over_http() {
    let data = notes_folder();
    let ts = built("plugins/text-ts");
    let plugins = plugins_folder(&[
        ("notes-go.wasm", &notes()),
        ("text-ts.wasm", ts.to_str().expect("a UTF-8 path")),
    ]);
    grant_in_config(plugins.path(), data.path());
    let server = HttpServer::start(plugins.path());
    let report = sdk_client(
        Target::Url(&server.url),
        "auto",
        &[
            (
                "read_note",
                json!({"path": "/data/notes.txt", "grep": "thr"}),
            ),
            ("note", json!({"path": "/data/notes.txt", "add": "four"})),
            ("title_case", json!({"text": "a tale of two cities"})),
            ("find_words", json!({"text": "x", "prefix": "q"})),
        ],
    );
    assert_eq!(
        listed(&report, "read_note")["annotations"]["readOnlyHint"],
        true,
        "{report:#}"
    );
    assert_eq!(
        listed(&report, "title_case")["annotations"]["openWorldHint"],
        false,
        "{report:#}"
    );
    assert_eq!(only_text(call_result(&report, 0)), "three", "{report:#}");
    assert_eq!(
        only_text(call_result(&report, 1)),
        r#"{"bytes":19,"lines":3,"words":4}"#,
        "{report:#}"
    );
    assert_eq!(
        std::fs::read_to_string(data.path().join("notes.txt")).expect("notes"),
        "one two\nthree\nfour\n"
    );
    assert_eq!(
        only_text(call_result(&report, 2)),
        "A Tale of Two Cities",
        "{report:#}"
    );
    let failed = call_result(&report, 3);
    assert_eq!(failed["isError"], true, "{failed:#}");
    assert_eq!(only_text(failed), "no word starts with q");
    assert!(!server.log().contains("ERROR"), "{}", server.log());
}
