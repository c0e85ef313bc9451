//! The client side of MCP for the `serve_*` tests, in one place: the JSON-RPC
//! messages every client sends (initialize, tools/list, tools/call) and how an answer
//! is matched to its request, used by the three clients: [`Client`] (an in-process
//! session over a pipe), [`StdioPiton`] (`piton serve` on stdio) and [`HttpSession`]
//! (`piton serve --http`, with the raw HTTP requests and event streams it is made of).
//! Messages are raw JSON so that the tests see exactly what a client gets on the wire.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::Stdio;
use std::sync::Arc;

use piton_host::Limits;
use piton_host::serve::Served;
use piton_tests::{guests, plugins};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader as AsyncBufReader};

use crate::support::{ANSWER, Running, piton, registry_of};

/// JSON-RPC request `id`.
pub(crate) fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The parameters of `initialize` as the tests' client sends them.
pub(crate) fn initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "piton-tests", "version": "0"},
    })
}

/// The notification that follows the answer to `initialize`.
pub(crate) fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// The parameters of a tools/call of `name`.
pub(crate) fn call_params(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// The per-request metadata of protocol 2026-07-28, which needs no session.
pub(crate) fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// Request `id`, a 2026-07-28 tools/call of `name`, as a POST to /mcp on a connection
/// of the caller's: the request and the headers that go with it.
pub(crate) fn stateless_call(
    addr: std::net::SocketAddr,
    id: u64,
    name: &str,
    arguments: Value,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut params = call_params(name, arguments);
    params["_meta"] = stateless_meta();
    let body = request(id, "tools/call", params).to_string();
    http::Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
        .expect("a request")
}

/// The message answering `id` among the server-sent events of `text`, a whole body.
pub(crate) fn sse_answer(text: &str, id: u64) -> Option<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["id"] == id)
}

/// Sorts `message`, read while waiting for the answer to request `id`: a
/// notification (no `id`) goes to `notifications` and gives `None`; any other
/// message must be that answer.
pub(crate) fn answer_to(id: u64, message: Value, notifications: &mut Vec<Value>) -> Option<Value> {
    if message.get("id").is_none() {
        notifications.push(message);
        return None;
    }
    assert_eq!(message["id"], id, "{message}");
    Some(message)
}

/// The tool names in an answer to tools/list.
pub(crate) fn tool_names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list: {answer}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// A client end of an in-process `piton_host::serve::serve` over a duplex pipe.
pub(crate) struct Client {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<AsyncBufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    server: tokio::task::JoinHandle<Result<(), piton_host::serve::ServeError>>,
}

impl Client {
    /// Serves word_count, read_file and the panicking guest.
    pub(crate) async fn start() -> Self {
        let tools = [
            plugins::WORD_COUNT,
            plugins::READ_FILE,
            guests::HOSTILE_PANIC,
        ];
        Self::serving(&tools, Limits::default()).await
    }

    /// Serves the components at `tools`, each with `limits`.
    pub(crate) async fn serving(tools: &[&str], limits: Limits) -> Self {
        let registry = registry_of(tools, limits).await;
        Self::over(Served::new(registry))
    }

    /// A session over `served`, which the test may change meanwhile.
    pub(crate) fn over(served: Arc<Served>) -> Self {
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

    pub(crate) async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.expect("send");
        self.write.flush().await.expect("flush");
    }

    /// The next message from the server.
    pub(crate) async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(ANSWER, self.lines.next_line())
            .await
            .expect("the server answers in time")
            .expect("read")
            .expect("the server did not close the connection");
        serde_json::from_str(&line).expect("a JSON-RPC line")
    }

    /// The next message with an `id` (notifications from the server are skipped).
    pub(crate) async fn answer(&mut self) -> Value {
        loop {
            let message = self.next().await;
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Sends request `id` and waits for its answer (notifications are skipped).
    pub(crate) async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(request(id, method, params)).await;
        let mut skipped = Vec::new();
        loop {
            if let Some(answer) = answer_to(id, self.next().await, &mut skipped) {
                return answer;
            }
        }
    }

    /// Initializes the session; returns the answer to `initialize`.
    pub(crate) async fn initialize(&mut self) -> Value {
        let answer = self.request(0, "initialize", initialize_params()).await;
        self.send(initialized()).await;
        answer
    }

    /// Request `id`: a tools/call of `name`.
    pub(crate) async fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.request(id, "tools/call", call_params(name, arguments))
            .await
    }

    /// Closes the client's side and expects the server to end cleanly.
    pub(crate) async fn close(self) {
        drop(self.write);
        drop(self.lines);
        let ended = tokio::time::timeout(ANSWER, self.server)
            .await
            .expect("the server ends when its input closes")
            .expect("the server task did not panic");
        assert!(ended.is_ok(), "{ended:?}");
    }
}

/// `piton serve` on stdio, read by a thread.
pub(crate) struct StdioPiton {
    pub(crate) running: Running,
    pub(crate) stdin: Option<std::process::ChildStdin>,
    messages: std::sync::mpsc::Receiver<Value>,
    /// Notifications read while waiting for an answer.
    pub(crate) notifications: Vec<Value>,
}

impl StdioPiton {
    /// Starts `piton serve --plugins folder` and initializes the session.
    pub(crate) fn start(folder: &std::path::Path) -> Self {
        let mut command = piton();
        // Nobody is asked before a call here: consent has its own tests (peers/consent.rs).
        command
            .args(["serve", "--approve", "never", "--plugins"])
            .arg(folder);
        Self::run(command)
    }

    /// Starts `command`, a `piton serve` on stdio, and initializes the session.
    pub(crate) fn run(mut command: std::process::Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("piton serve starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
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
            running: Running::new(child),
            stdin,
            messages,
            notifications: Vec::new(),
        };
        let answer = piton.request(0, "initialize", initialize_params());
        assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
        piton.send(&initialized());
        piton
    }

    pub(crate) fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next message from piton.
    pub(crate) fn next(&self) -> Value {
        self.messages
            .recv_timeout(ANSWER)
            .unwrap_or_else(|e| panic!("no message ({e}); stderr:\n{}", self.running.stderr.text()))
    }

    /// Sends request `id` and waits for its answer, keeping the notifications read
    /// meanwhile.
    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&request(id, method, params));
        loop {
            let message = self.next();
            if let Some(answer) = answer_to(id, message, &mut self.notifications) {
                return answer;
            }
        }
    }

    /// Waits for the next `notifications/tools/list_changed`.
    pub(crate) fn list_changed(&mut self) {
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

    /// The names tools/list gives.
    pub(crate) fn tools(&mut self, id: u64) -> Vec<String> {
        tool_names(&self.request(id, "tools/list", json!({})))
    }
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
    http_request_from(None, addr, method, path, headers, body).await
}

/// [`http_request`] from the local address `from` (any is chosen when `None`): on
/// loopback, 127.0.0.2, 127.0.0.3 … act as distinct clients.
pub(crate) async fn http_request_from(
    from: Option<std::net::IpAddr>,
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> http::Response<hyper::body::Incoming> {
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
    send_once_from(from, addr, request).await
}

/// Sends `request` on a fresh HTTP/1.1 connection to `addr`; its response, in time.
pub(crate) async fn send_once(
    addr: std::net::SocketAddr,
    request: http::Request<http_body_util::Full<bytes::Bytes>>,
) -> http::Response<hyper::body::Incoming> {
    send_once_from(None, addr, request).await
}

/// [`send_once`] from the local address `from`, if given.
async fn send_once_from(
    from: Option<std::net::IpAddr>,
    addr: std::net::SocketAddr,
    request: http::Request<http_body_util::Full<bytes::Bytes>>,
) -> http::Response<hyper::body::Incoming> {
    let stream = connect_from(from, addr).await;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("HTTP handshake");
    tokio::spawn(connection);
    tokio::time::timeout(ANSWER, sender.send_request(request))
        .await
        .expect("an answer in time")
        .expect("an HTTP response")
}

/// A connection to `addr` from the local address `from` (any when `None`).
pub(crate) async fn connect_from(
    from: Option<std::net::IpAddr>,
    addr: std::net::SocketAddr,
) -> tokio::net::TcpStream {
    let Some(from) = from else {
        return tokio::net::TcpStream::connect(addr).await.expect("connect");
    };
    let socket = if from.is_ipv4() {
        tokio::net::TcpSocket::new_v4()
    } else {
        tokio::net::TcpSocket::new_v6()
    }
    .expect("a socket");
    socket
        .bind(std::net::SocketAddr::new(from, 0))
        .unwrap_or_else(|e| panic!("bind {from}: {e}"));
    socket.connect(addr).await.expect("connect")
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

/// A POST to /mcp as an MCP client sends it, in `session` if any.
pub(crate) async fn post(
    addr: std::net::SocketAddr,
    session: Option<&str>,
    message: &Value,
) -> http::Response<hyper::body::Incoming> {
    post_from(None, addr, session, message).await
}

/// [`post`] from the local address `from`, if given.
pub(crate) async fn post_from(
    from: Option<std::net::IpAddr>,
    addr: std::net::SocketAddr,
    session: Option<&str>,
    message: &Value,
) -> http::Response<hyper::body::Incoming> {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if let Some(id) = session {
        headers.push(("mcp-session-id", id));
        headers.push(("mcp-protocol-version", "2025-11-25"));
    }
    http_request_from(from, addr, "POST", "/mcp", &headers, &message.to_string()).await
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

/// An MCP session over Streamable HTTP.
pub(crate) struct HttpSession {
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) id: Option<String>,
    /// The local address its requests come from (any when `None`).
    pub(crate) from: Option<std::net::IpAddr>,
}

impl HttpSession {
    /// Posts `message` in this session (none before `initialize` is answered).
    pub(crate) async fn post(&self, message: &Value) -> http::Response<hyper::body::Incoming> {
        post_from(self.from, self.addr, self.id.as_deref(), message).await
    }

    /// Posts request `id` and reads its answer from the response's event stream.
    pub(crate) async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let message = request(id, method, params);
        let mut response = self.post(&message).await;
        assert_eq!(response.status(), 200, "{method}");
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.id = Some(session.to_str().expect("a text header").to_owned());
        }
        sse_until(&mut response, |m| m["id"] == id).await
    }

    /// Initializes the session; returns the answer to `initialize`.
    pub(crate) async fn start(addr: std::net::SocketAddr) -> (Self, Value) {
        Self::start_from(None, addr).await
    }

    /// [`HttpSession::start`] with its requests from the local address `from`.
    pub(crate) async fn start_from(
        from: Option<std::net::IpAddr>,
        addr: std::net::SocketAddr,
    ) -> (Self, Value) {
        let mut session = Self {
            addr,
            id: None,
            from,
        };
        let answer = session.request(0, "initialize", initialize_params()).await;
        assert!(session.id.is_some(), "no Mcp-Session-Id: {answer}");
        let response = session.post(&initialized()).await;
        assert_eq!(response.status(), 202);
        (session, answer)
    }
}
