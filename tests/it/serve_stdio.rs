//! `piton serve` on stdio: the MCP session (in process over a pipe, and the binary),
//! the answers it gives, and how it follows the tools changing (a registry replaced,
//! the plugins folder reloaded).

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use piton_host::Limits;
use piton_host::serve::Served;
use piton_tests::{guests, plugins};
use serde_json::{Value, json};

use crate::mcp_client::{Client, StdioPiton};
use crate::support::{ANSWER, piton, plugins_folder};

#[tokio::test]
async fn initialize_names_piton_and_offers_tools() {
    let mut client = Client::start().await;
    let answer = client.initialize().await;
    let result = &answer["result"];
    assert_eq!(result["serverInfo"]["name"], "piton", "{answer}");
    assert!(result["serverInfo"]["version"].is_string(), "{answer}");
    assert!(result["capabilities"]["tools"].is_object(), "{answer}");
    assert_eq!(
        result["capabilities"]["tools"]["listChanged"], true,
        "{answer}"
    );
    client.close().await;
}

#[tokio::test]
async fn tools_list_carries_schema_and_all_four_hints() {
    let mut client = Client::start().await;
    client.initialize().await;
    let answer = client.request(1, "tools/list", json!({})).await;
    let tools = answer["result"]["tools"].as_array().expect("a tool list");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["panic", "read_file", "word_count"], "{answer}");
    let word_count = &tools[2];
    assert!(word_count["description"].is_string(), "{word_count}");
    assert_eq!(word_count["inputSchema"]["type"], "object", "{word_count}");
    let hints = &word_count["annotations"];
    assert_eq!(hints["readOnlyHint"], true, "{hints}");
    assert_eq!(hints["openWorldHint"], false, "{hints}");
    for tool in tools {
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(tool["annotations"][hint].is_boolean(), "{hint}: {tool}");
        }
    }
    client.close().await;
}

#[tokio::test]
async fn word_count_answers_with_a_text_block() {
    let mut client = Client::start().await;
    client.initialize().await;
    let answer = client.call(1, "word_count", json!({"text": "a b c"})).await;
    let result = &answer["result"];
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "3"}]),
        "{answer}"
    );
    assert_ne!(result["isError"], true, "{answer}");
    client.close().await;
}

#[tokio::test]
async fn read_file_outside_its_grants_is_an_error_result() {
    let mut client = Client::start().await;
    client.initialize().await;
    let answer = client
        .call(1, "read_file", json!({"path": "/etc/passwd"}))
        .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(!answer.to_string().contains("root:"), "{answer}");
    // Bad arguments are an input error result, not a protocol error.
    let answer = client.call(2, "word_count", json!({"text": 7})).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.starts_with("(input error: "), "{answer}");
    client.close().await;
}

#[tokio::test]
async fn an_unknown_tool_is_a_json_rpc_error_naming_the_known_ones() {
    let mut client = Client::start().await;
    client.initialize().await;
    let answer = client.call(1, "nope", json!({})).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("word_count"), "{answer}");
    client.close().await;
}

#[tokio::test]
async fn a_trap_is_a_json_rpc_error_and_the_session_goes_on() {
    let mut client = Client::start().await;
    client.initialize().await;
    let answer = client.call(1, "panic", json!({})).await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("tool `panic` trapped"), "{answer}");
    let answer = client.call(2, "word_count", json!({"text": "x"})).await;
    assert_eq!(answer["result"]["content"][0]["text"], "1", "{answer}");
    client.close().await;
}

#[tokio::test]
async fn discover_first_then_initialize_works_on_the_same_connection() {
    let mut client = Client::start().await;
    // A bare probe gets an error (not -32022, which would stop the Python SDK's
    // fallback) and the connection stays open.
    let answer = client.request(1, "server/discover", json!({})).await;
    let code = answer["error"]["code"].as_i64().expect("an error");
    assert_ne!(code, -32022, "{answer}");
    // A probe with the 2026-07-28 request metadata gets a real discovery answer.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let answer = client
        .request(2, "server/discover", json!({"_meta": meta}))
        .await;
    assert!(answer["result"].is_object(), "{answer}");
    // Stray notifications before initialize do not end the session either.
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let answer = client.initialize().await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
    let answer = client.call(3, "word_count", json!({"text": "a b"})).await;
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");
    client.close().await;
}

#[tokio::test]
async fn unknown_method_is_method_not_found_and_the_session_goes_on() {
    let mut client = Client::start().await;
    client.initialize().await;
    let answer = client.request(1, "no/such/method", json!({})).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let answer = client.request(2, "tools/list", json!({})).await;
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    client.close().await;
}

#[tokio::test]
async fn a_cancelled_call_gets_no_answer_and_the_session_goes_on() {
    let limits = Limits {
        timeout: Duration::from_secs(120),
        ..Limits::default()
    };
    let mut client = Client::serving(&[guests::HOSTILE_SPIN], limits).await;
    client.initialize().await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "spin", "arguments": {}}}))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "test"}}),
        )
        .await;
    let answer = client.request(2, "tools/list", json!({})).await;
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    // The spin would run for two minutes; its request must simply get no answer.
    let late = tokio::time::timeout(Duration::from_secs(1), client.answer()).await;
    assert!(late.is_err(), "a cancelled request was answered: {late:?}");
    client.close().await;
}

#[test]
fn serve_binary_keeps_guest_output_off_stdout_and_exits_on_eof() {
    let folder = plugins_folder(&[("flood.wasm", guests::HOSTILE_FLOOD_STDOUT)]);
    let mut child = piton()
        .arg("serve")
        .arg("--plugins")
        .arg(folder.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("piton serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "piton-tests", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "flood_stdout", "arguments": {}}}),
    ];
    for message in &messages {
        writeln!(stdin, "{message}").expect("write a request");
    }
    stdin.flush().expect("flush");
    let mut lines = Vec::new();
    let mut line = String::new();
    while !lines.iter().any(|l: &Value| l["id"] == 2) {
        line.clear();
        let read = stdout.read_line(&mut line).expect("read stdout");
        assert!(read > 0, "stdout ended early after {lines:?}");
        assert!(
            !line.contains("FORGED"),
            "guest output reached stdout: {line}"
        );
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a JSON-RPC line ({e}): {line:.200}"));
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        lines.push(message);
    }
    let answer = lines.iter().find(|l| l["id"] == 2).expect("an answer");
    assert_eq!(
        answer["result"]["content"][0]["text"], "flooded",
        "{answer}"
    );
    assert_eq!(lines[0]["result"]["serverInfo"]["name"], "piton");

    drop(stdin);
    let deadline = Instant::now() + ANSWER;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("piton serve did not exit after stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("read the rest");
    for line in rest.lines() {
        let message: Value = serde_json::from_str(line).expect("only JSON-RPC lines");
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
    }
}

/// A native tool whose calls wait until the test lets them finish.
struct Gate {
    spec: piton_host::ToolSpec,
    started: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
}

#[async_trait::async_trait]
impl piton_host::Tool for Gate {
    fn spec(&self) -> &piton_host::ToolSpec {
        &self.spec
    }

    fn hints(&self) -> piton_host::Hints {
        piton_host::Hints::default()
    }

    async fn call(
        &self,
        _ctx: &piton_host::CallContext,
        _args: &piton_host::Args,
        _hints: piton_host::Hints,
    ) -> Result<piton_host::ToolResult, piton_host::CallError> {
        self.started.notify_one();
        self.release.notified().await;
        Ok(Ok(vec![piton_host::Content::text("released")]))
    }
}

/// A registry of one native tool that lists fine and is never called.
fn native(name: &str) -> piton_host::Registry {
    let mut registry = piton_host::Registry::new();
    registry
        .add(Gate {
            spec: piton_host::ToolSpec {
                name: name.into(),
                description: format!("the {name} tool"),
                input_schema: json!({"type": "object"}),
                parallel: true,
            },
            started: Arc::default(),
            release: Arc::default(),
        })
        .expect("a valid tool");
    registry
}

#[tokio::test]
async fn a_call_in_flight_finishes_on_the_registry_it_started_on() {
    let started = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Notify::new());
    let mut registry = piton_host::Registry::new();
    registry
        .add(Gate {
            spec: piton_host::ToolSpec {
                name: "gate".into(),
                description: "waits for the test".into(),
                input_schema: json!({"type": "object"}),
                parallel: true,
            },
            started: started.clone(),
            release: release.clone(),
        })
        .expect("a valid tool");
    let served = Served::new(registry);
    let mut client = Client::over(served.clone());
    client.initialize().await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "gate", "arguments": {}}}))
        .await;
    tokio::time::timeout(ANSWER, started.notified())
        .await
        .expect("the call starts");

    served.replace(native("other"));
    // The session hears of the change while the call is still running.
    let message = client.next().await;
    assert_eq!(
        message["method"], "notifications/tools/list_changed",
        "{message}"
    );
    let answer = client.request(2, "tools/list", json!({})).await;
    let names: Vec<&str> = answer["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["other"], "{answer}");

    release.notify_one();
    let answer = client.answer().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["content"],
        json!([{"type": "text", "text": "released"}]),
        "{answer}"
    );
    // New calls go to the new registry, which has no gate.
    let answer = client.call(3, "gate", json!({})).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    client.close().await;
}

#[tokio::test]
async fn an_ended_session_stops_following_changes() {
    let served = Served::new(native("one"));
    let mut client = Client::over(served.clone());
    client.initialize().await;
    // A round trip, so that `initialized` has been handled.
    client.request(1, "tools/list", json!({})).await;
    assert_eq!(served.listeners(), 1);
    served.replace(native("two"));
    let message = client.next().await;
    assert_eq!(
        message["method"], "notifications/tools/list_changed",
        "{message}"
    );
    client.close().await;
    let deadline = Instant::now() + ANSWER;
    while served.listeners() > 0 || Arc::strong_count(&served) > 1 {
        assert!(Instant::now() < deadline, "the session's task lives on");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_2026_client_hears_of_changes_through_subscriptions_listen() {
    let served = Served::new(native("one"));
    let mut client = Client::over(served.clone());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
            "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}}),
        )
        .await;
    let acknowledged = client.next().await;
    assert_eq!(
        acknowledged["method"], "notifications/subscriptions/acknowledged",
        "{acknowledged}"
    );
    assert_eq!(
        acknowledged["params"]["notifications"]["toolsListChanged"], true,
        "{acknowledged}"
    );
    served.replace(native("two"));
    let changed = client.next().await;
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
        "{changed}"
    );
    // Cancelling the subscription ends it (else closing would wait for it).
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 7}}),
        )
        .await;
    let started = Instant::now();
    client.close().await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn serve_reloads_a_changed_plugins_folder_and_tells_the_client() {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let mut piton = StdioPiton::start(folder.path());
    assert_eq!(piton.tools(1), ["word_count"]);

    let added = folder.path().join("read_file.wasm");
    std::fs::copy(plugins::READ_FILE, &added).expect("copy");
    piton.list_changed();
    assert_eq!(piton.tools(2), ["read_file", "word_count"]);

    std::fs::remove_file(&added).expect("remove");
    piton.list_changed();
    assert_eq!(piton.tools(3), ["word_count"]);

    // A piton.toml that does not load keeps the tools served before, and says why.
    std::fs::write(
        folder.path().join("piton.toml"),
        "[tools.word_count]\nno_such_key = 1\n",
    )
    .expect("write");
    // The message names the file, then quotes the key (lines arrive in order).
    piton.running.stderr.wait_for("no_such_key");
    let stderr = piton.running.stderr.text();
    assert!(stderr.contains("error: "), "{stderr}");
    assert!(stderr.contains("piton.toml"), "{stderr}");
    let answer = piton.request(
        4,
        "tools/call",
        json!({"name": "word_count", "arguments": {"text": "still here"}}),
    );
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");
    assert!(
        piton.notifications.is_empty(),
        "a failed reload was announced: {:?}",
        piton.notifications
    );

    drop(piton.stdin.take());
    assert_eq!(piton.running.exit_code(), Some(0));
}
