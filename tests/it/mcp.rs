//! `piton serve`: the registry over MCP, spoken as raw JSON-RPC lines so the tests
//! see exactly what a client gets on the wire.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use piton_host::Limits;
use piton_tests::{guests, plugins};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader as AsyncBufReader};

use crate::support::{piton, plugins_folder, registry_of};

/// How long one answer may take, compile cache misses included.
const ANSWER: Duration = Duration::from_secs(60);

/// A client end of an in-process `piton_host::mcp::serve` over a duplex pipe.
struct Client {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<AsyncBufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    server: tokio::task::JoinHandle<Result<(), piton_host::mcp::ServeError>>,
}

impl Client {
    /// Serves word_count, read_file and the panicking guest.
    async fn start() -> Self {
        let tools = [
            plugins::WORD_COUNT,
            plugins::READ_FILE,
            guests::HOSTILE_PANIC,
        ];
        Self::serving(&tools, Limits::default()).await
    }

    /// Serves the components at `tools`, each with `limits`.
    async fn serving(tools: &[&str], limits: Limits) -> Self {
        let registry = registry_of(tools, limits).await;
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let server = tokio::spawn(piton_host::mcp::serve(
            Arc::new(registry),
            server_read,
            server_write,
        ));
        let (read, write) = tokio::io::split(client);
        Self {
            write,
            lines: AsyncBufReader::new(read).lines(),
            server,
        }
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.expect("send");
        self.write.flush().await.expect("flush");
    }

    /// The next message with an `id` (notifications from the server are skipped).
    async fn answer(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(ANSWER, self.lines.next_line())
                .await
                .expect("the server answers in time")
                .expect("read")
                .expect("the server did not close the connection");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = self.answer().await;
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    async fn initialize(&mut self) -> Value {
        let answer = self
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "piton-tests", "version": "0"},
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        answer
    }

    async fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    /// Closes the client's side and expects the server to end cleanly.
    async fn close(self) {
        drop(self.write);
        drop(self.lines);
        let ended = tokio::time::timeout(ANSWER, self.server)
            .await
            .expect("the server ends when its input closes")
            .expect("the server task did not panic");
        assert!(ended.is_ok(), "{ended:?}");
    }
}

#[tokio::test]
async fn initialize_names_piton_and_offers_tools() {
    let mut client = Client::start().await;
    let answer = client.initialize().await;
    let result = &answer["result"];
    assert_eq!(result["serverInfo"]["name"], "piton", "{answer}");
    assert!(result["serverInfo"]["version"].is_string(), "{answer}");
    assert!(result["capabilities"]["tools"].is_object(), "{answer}");
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
