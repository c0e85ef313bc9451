//! `piton serve`: the registry over MCP, spoken as raw JSON-RPC lines so the tests
//! see exactly what a client gets on the wire.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use piton_host::Limits;
use piton_host::serve::Served;
use piton_tests::{guests, plugins};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader as AsyncBufReader};

use crate::support::{piton, plugins_folder, registry_of};

/// How long one answer may take, compile cache misses included.
pub(crate) const ANSWER: Duration = Duration::from_secs(60);

/// A client end of an in-process `piton_host::serve::serve` over a duplex pipe.
struct Client {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<AsyncBufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    server: tokio::task::JoinHandle<Result<(), piton_host::serve::ServeError>>,
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
        Self::over(Served::new(registry))
    }

    /// A session over `served`, which the test may change meanwhile.
    fn over(served: Arc<Served>) -> Self {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let server = tokio::spawn(piton_host::serve::serve(served, server_read, server_write));
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

    /// The next message from the server.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(ANSWER, self.lines.next_line())
            .await
            .expect("the server answers in time")
            .expect("read")
            .expect("the server did not close the connection");
        serde_json::from_str(&line).expect("a JSON-RPC line")
    }

    /// The next message with an `id` (notifications from the server are skipped).
    async fn answer(&mut self) -> Value {
        loop {
            let message = self.next().await;
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

/// A child's stderr, drained by a thread so that the child never blocks on it.
pub(crate) struct Stderr {
    lines: std::sync::mpsc::Receiver<String>,
    all: Arc<std::sync::Mutex<String>>,
}

impl Stderr {
    fn drain(stderr: std::process::ChildStderr) -> Self {
        let (send, lines) = std::sync::mpsc::channel();
        let all = Arc::new(std::sync::Mutex::new(String::new()));
        let sink = all.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock()
                    .expect("stderr lock")
                    .push_str(&format!("{line}\n"));
                let _ = send.send(line);
            }
        });
        Self { lines, all }
    }

    /// The first line from now on that contains `needle`.
    pub(crate) fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + ANSWER;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("no `{needle}` on stderr ({e}); it says:\n{}", self.text()),
            }
        }
    }

    pub(crate) fn text(&self) -> String {
        self.all.lock().expect("stderr lock").clone()
    }
}

/// A running `piton`, killed if the test ends before it exits.
pub(crate) struct Running {
    child: std::process::Child,
    pub(crate) stderr: Stderr,
}

impl Running {
    /// Waits for the process to exit on its own.
    pub(crate) fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + ANSWER;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(Instant::now() < deadline, "piton did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn terminate(&mut self) {
        self.signal("TERM");
    }

    /// Sends SIG`name` (`TERM`, `INT`).
    fn signal(&mut self, name: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} failed");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `piton serve --http 127.0.0.1:0` on `folder` (the bundled plugins without one),
/// and the address it says it listens on.
fn serve_http(folder: Option<&std::path::Path>) -> (Running, std::net::SocketAddr) {
    serve_http_on("127.0.0.1:0", folder)
}

/// `piton serve --http bind` on `folder`, and the address it says it listens on.
fn serve_http_on(bind: &str, folder: Option<&std::path::Path>) -> (Running, std::net::SocketAddr) {
    serve_http_with(bind, folder, &[])
}

/// `piton serve --http bind` on `folder` with `flags`, and the address it listens on.
pub(crate) fn serve_http_with(
    bind: &str,
    folder: Option<&std::path::Path>,
    flags: &[&str],
) -> (Running, std::net::SocketAddr) {
    let mut command = piton();
    command.args(["serve", "--http", bind]).args(flags);
    if let Some(folder) = folder {
        command.arg("--plugins").arg(folder);
    }
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("piton serve --http starts");
    let stderr = Stderr::drain(child.stderr.take().expect("stderr"));
    let running = Running { child, stderr };
    let line = running.stderr.wait_for("listening on ");
    let addr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("not `listening on http://IP:PORT/mcp`: {line}"));
    (running, addr)
}

/// One HTTP/1.1 request on a fresh connection; `Host` is the server's address
/// unless `headers` names one.
pub(crate) async fn http_request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> http::Response<hyper::body::Incoming> {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("HTTP handshake");
    tokio::spawn(connection);
    let mut request = http::Request::builder().method(method).uri(path);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request = request.header("host", addr.to_string());
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_owned(),
        )))
        .expect("a request");
    tokio::time::timeout(ANSWER, sender.send_request(request))
        .await
        .expect("an answer in time")
        .expect("an HTTP response")
}

/// The whole body as text.
pub(crate) async fn body_text(response: http::Response<hyper::body::Incoming>) -> String {
    use http_body_util::BodyExt as _;
    let body = tokio::time::timeout(ANSWER, response.into_body().collect())
        .await
        .expect("the body in time")
        .expect("a body");
    String::from_utf8_lossy(&body.to_bytes()).into_owned()
}

/// Reads server-sent events from `response` until one's JSON data satisfies
/// `wanted`, and returns it.
pub(crate) async fn sse_until(
    response: &mut http::Response<hyper::body::Incoming>,
    wanted: impl Fn(&Value) -> bool,
) -> Value {
    use http_body_util::BodyExt as _;
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + ANSWER;
    loop {
        // Events end with a blank line; look at each complete one.
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            let data: String = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            if let Ok(message) = serde_json::from_str::<Value>(&data)
                && wanted(&message)
            {
                return message;
            }
        }
        let frame = tokio::time::timeout_at(deadline, response.body_mut().frame())
            .await
            .expect("the event arrives in time")
            .expect("the stream did not end")
            .expect("a body frame");
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data).replace("\r\n", "\n"));
        }
    }
}

/// An MCP session over Streamable HTTP.
pub(crate) struct HttpSession {
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) id: Option<String>,
}

impl HttpSession {
    pub(crate) async fn post(&self, message: &Value) -> http::Response<hyper::body::Incoming> {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        if let Some(id) = &self.id {
            headers.push(("mcp-session-id", id));
            headers.push(("mcp-protocol-version", "2025-11-25"));
        }
        http_request(self.addr, "POST", "/mcp", &headers, &message.to_string()).await
    }

    pub(crate) async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut response = self.post(&message).await;
        assert_eq!(response.status(), 200, "{method}");
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.id = Some(session.to_str().expect("a text header").to_owned());
        }
        sse_until(&mut response, |m| m["id"] == id).await
    }

    /// Initializes the session; returns the answer to `initialize`.
    pub(crate) async fn start(addr: std::net::SocketAddr) -> (Self, Value) {
        let mut session = Self { addr, id: None };
        let answer = session
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
        assert!(session.id.is_some(), "no Mcp-Session-Id: {answer}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = session.post(&initialized).await;
        assert_eq!(response.status(), 202);
        (session, answer)
    }
}

fn tool_names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list: {answer}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_lists_and_calls_and_stops_cleanly_on_sigterm() {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let (mut piton, addr) = serve_http(Some(folder.path()));
    let (mut session, answer) = HttpSession::start(addr).await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
    assert_eq!(
        answer["result"]["capabilities"]["tools"]["listChanged"], true,
        "{answer}"
    );
    let answer = session.request(1, "tools/list", json!({})).await;
    assert_eq!(tool_names(&answer), ["word_count"], "{answer}");
    let hints = &answer["result"]["tools"][0]["annotations"];
    assert_eq!(hints["readOnlyHint"], true, "{answer}");
    let answer = session
        .request(
            2,
            "tools/call",
            json!({"name": "word_count", "arguments": {"text": "a b c"}}),
        )
        .await;
    assert_eq!(
        answer["result"]["content"],
        json!([{"type": "text", "text": "3"}]),
        "{answer}"
    );
    // A second session is served too, by the same registry.
    let (mut other, _) = HttpSession::start(addr).await;
    assert_ne!(other.id, session.id);
    let answer = other
        .request(
            1,
            "tools/call",
            json!({"name": "word_count", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "1", "{answer}");

    piton.terminate();
    assert_eq!(piton.exit_code(), Some(0), "{}", piton.stderr.text());
    let stderr = piton.stderr.text();
    assert_eq!(stderr.matches("listening on").count(), 1, "{stderr}");
    assert!(!stderr.contains("warning: serving on"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_refuses_foreign_hosts_and_origins_and_unknown_paths() {
    let (_piton, addr) = serve_http(None);
    let port = addr.port();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "piton-tests", "version": "0"}}})
    .to_string();
    let mcp_headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let with = |extra: &[(&'static str, String)]| -> Vec<(&'static str, String)> {
        let mut headers: Vec<(&'static str, String)> = mcp_headers
            .iter()
            .map(|(k, v)| (*k, (*v).to_owned()))
            .collect();
        headers.extend(extra.iter().cloned());
        headers
    };
    let send = |headers: Vec<(&'static str, String)>, path: &'static str| {
        let body = initialize.clone();
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let response = http_request(addr, "POST", path, &headers, &body).await;
            let status = response.status();
            let mcp_session = response.headers().contains_key("mcp-session-id");
            (status, mcp_session, body_text(response).await)
        }
    };

    let refused = [
        vec![("host", format!("evil.example:{port}"))],
        vec![("host", "127.0.0.1".to_owned())],
        vec![("host", format!("127.0.0.1:{}", port.wrapping_add(1)))],
        vec![("origin", "http://evil.example".to_owned())],
        vec![("origin", format!("http://evil.example:{port}"))],
        vec![("origin", format!("https://127.0.0.1:{port}"))],
        vec![("origin", "null".to_owned())],
    ];
    for extra in refused {
        let (status, session, body) = send(with(&extra), "/mcp").await;
        assert_eq!(status, 403, "{extra:?}: {body}");
        assert!(!session, "{extra:?} got a session");
        assert!(
            !body.contains("piton"),
            "{extra:?} reached the server: {body}"
        );
    }
    // The same request that names this server is served: the refusals above are
    // about the headers alone.
    for extra in [
        vec![],
        vec![
            ("host", format!("localhost:{port}")),
            ("origin", format!("http://localhost:{port}")),
        ],
        vec![("origin", format!("http://127.0.0.1:{port}"))],
    ] {
        let (status, session, body) = send(with(&extra), "/mcp").await;
        assert_eq!(status, 200, "{extra:?}: {body}");
        assert!(session, "{extra:?}: no session");
        assert!(body.contains("\"piton\""), "{extra:?}: {body}");
    }
    for path in ["/", "/other", "/mcp/x", "/MCP"] {
        let (status, _, body) = send(with(&[]), path).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    // Refused before routing: a foreign Host learns nothing about paths either.
    let (status, _, _) = send(with(&[("host", format!("evil.example:{port}"))]), "/x").await;
    assert_eq!(status, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_on_every_interface_warns_and_answers_ip_literals_only() {
    let (mut piton, bound) = serve_http_on("0.0.0.0:0", None);
    assert!(bound.ip().is_unspecified(), "{bound}");
    let stderr = piton.stderr.text();
    assert!(
        stderr.contains(&format!("warning: serving on {bound}")),
        "{stderr}"
    );
    assert!(stderr.contains("anyone who can reach it"), "{stderr}");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], bound.port()));
    let port = bound.port();
    let headers = |host: String| {
        vec![
            ("host", host),
            ("content-type", "application/json".to_owned()),
            ("accept", "application/json, text/event-stream".to_owned()),
        ]
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "piton-tests", "version": "0"}}})
    .to_string();
    for (host, expected) in [
        (format!("127.0.0.1:{port}"), 200),
        (format!("localhost:{port}"), 200),
        (format!("192.0.2.7:{port}"), 200),
        (format!("evil.example:{port}"), 403),
        (format!("my-host.lan:{port}"), 403),
    ] {
        let headers = headers(host.clone());
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let response = http_request(addr, "POST", "/mcp", &headers, &initialize).await;
        assert_eq!(response.status(), expected, "{host}");
    }
    // Ctrl-C stops it cleanly too.
    piton.signal("INT");
    assert_eq!(piton.exit_code(), Some(0), "{}", piton.stderr.text());
}

#[test]
fn serve_http_with_a_bad_address_exits_2_naming_it() {
    let out = crate::support::run(piton().args(["serve", "--http", "nonsense"]));
    let stderr = crate::support::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nonsense"), "{stderr}");
    assert!(stderr.contains("IP:PORT"), "{stderr}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = taken.local_addr().expect("an address").to_string();
    let out = crate::support::run(piton().args(["serve", "--http", &addr]));
    let stderr = crate::support::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&addr), "{stderr}");
    assert!(stderr.contains("cannot listen"), "{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
}

/// Opens the stream of messages the server starts for session `id` (`GET /mcp`).
pub(crate) async fn event_stream(
    addr: std::net::SocketAddr,
    id: &str,
) -> http::Response<hyper::body::Incoming> {
    let events = http_request(
        addr,
        "GET",
        "/mcp",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", id),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        "",
    )
    .await;
    assert_eq!(events.status(), 200);
    events
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_tells_each_session_when_the_plugins_change() {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let (mut piton, addr) = serve_http(Some(folder.path()));
    let (mut session, _) = HttpSession::start(addr).await;
    let id = session.id.clone().expect("a session");
    // The session's stream for messages the server starts.
    let mut events = event_stream(addr, &id).await;

    std::fs::copy(plugins::READ_FILE, folder.path().join("read_file.wasm")).expect("copy");
    let changed = sse_until(&mut events, |m| m.get("method").is_some()).await;
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    let answer = session.request(1, "tools/list", json!({})).await;
    assert_eq!(tool_names(&answer), ["read_file", "word_count"], "{answer}");

    // An open event stream does not keep the server from stopping.
    piton.terminate();
    assert_eq!(piton.exit_code(), Some(0), "{}", piton.stderr.text());
}

/// `piton serve` on stdio, read by a thread.
struct StdioPiton {
    running: Running,
    stdin: Option<std::process::ChildStdin>,
    messages: std::sync::mpsc::Receiver<Value>,
    /// Notifications read while waiting for an answer.
    notifications: Vec<Value>,
}

impl StdioPiton {
    fn start(folder: &std::path::Path) -> Self {
        let mut child = piton()
            .arg("serve")
            .arg("--plugins")
            .arg(folder)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("piton serve starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = Stderr::drain(child.stderr.take().expect("stderr"));
        let (send, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON-RPC line ({e}): {line:.200}"));
                if send.send(message).is_err() {
                    break;
                }
            }
        });
        let mut piton = Self {
            running: Running { child, stderr },
            stdin,
            messages,
            notifications: Vec::new(),
        };
        let answer = piton.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "piton-tests", "version": "0"}}),
        );
        assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
        piton.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        piton
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    fn next(&self) -> Value {
        self.messages
            .recv_timeout(ANSWER)
            .unwrap_or_else(|e| panic!("no message ({e}); stderr:\n{}", self.running.stderr.text()))
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next();
            if message.get("id").is_none() {
                self.notifications.push(message);
                continue;
            }
            assert_eq!(message["id"], id, "{message}");
            return message;
        }
    }

    /// Waits for the next `notifications/tools/list_changed`.
    fn list_changed(&mut self) {
        let message = if self.notifications.is_empty() {
            self.next()
        } else {
            self.notifications.remove(0)
        };
        assert_eq!(
            message["method"], "notifications/tools/list_changed",
            "{message}"
        );
    }

    fn tools(&mut self, id: u64) -> Vec<String> {
        tool_names(&self.request(id, "tools/list", json!({})))
    }
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
