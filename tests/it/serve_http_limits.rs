//! `piton serve --http` under clients that hold it open: half-sent requests, idle
//! connections, more connections and sessions than it allows. Each test asserts what
//! the server does (closes, waits, refuses, serves), never how long it took. One
//! client's share of them: serve_http_clients.rs.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use piton_tests::plugins;
use serde_json::{Value, json};

use crate::mcp_client::{self, HttpSession, body_text, event_stream, http_request, sse_until};
use crate::support::{ANSWER, Running, plugins_folder, serve_http_with};

/// A client that connected, sent `sent` and stalls.
struct Stalled {
    stream: TcpStream,
}

impl Stalled {
    fn open(addr: SocketAddr, sent: &str) -> Self {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream.write_all(sent.as_bytes()).expect("send");
        stream.set_nonblocking(true).expect("non-blocking");
        Self { stream }
    }

    /// Whether the server has closed this connection (EOF or reset), without waiting.
    fn closed(&self) -> bool {
        let mut buf = [0; 256];
        loop {
            match (&self.stream).read(&mut buf) {
                Ok(0) => return true,
                // A stalled request gets no answer; bytes would be a (timeout) response.
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
    }
}

/// Waits until the server has closed every one of `stalled`; panics naming how many
/// are still open when `ANSWER` runs out.
async fn all_closed(stalled: &[Stalled]) {
    let deadline = Instant::now() + ANSWER;
    loop {
        let open = stalled.iter().filter(|s| !s.closed()).count();
        if open == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{open} of {} stalled connections are still open",
            stalled.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Half-sent requests of every kind: nothing at all, part of a request line, part of
/// the headers, and complete headers (that name this server) with part of the body.
fn half_sent(addr: SocketAddr, index: usize) -> String {
    match index % 4 {
        0 => String::new(),
        1 => "POST /mc".to_owned(),
        2 => format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: applic"),
        _ => format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n\
             {{\"jsonrpc\": \"2.0\", "
        ),
    }
}

/// How many stalled connections the test may open: 300, or fewer under a low
/// descriptor limit (each one costs a descriptor here and one in piton).
fn how_many_stalled() -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            limits
                .lines()
                .find(|line| line.starts_with("Max open files"))
                .and_then(|line| line.split_whitespace().nth(3)?.parse::<usize>().ok())
        })
        .unwrap_or(1024);
    300.min(limit.saturating_sub(200) / 2).max(8)
}

/// One initialize and one tools/call on a fresh session; the call's answer.
/// `piton serve --http 127.0.0.1:0 FLAGS` on a plugins folder holding word_count.
fn serve_word_count(flags: &[&str]) -> (tempfile::TempDir, Running, SocketAddr) {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let (piton, addr) = serve_http_with("127.0.0.1:0", Some(folder.path()), flags);
    (folder, piton, addr)
}

async fn word_count(addr: SocketAddr, text: &str) -> Value {
    let (mut session, answer) = HttpSession::start(addr).await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
    session
        .request(
            1,
            "tools/call",
            json!({"name": "word_count", "arguments": {"text": text}}),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_serves_a_client_while_hundreds_of_half_sent_requests_stall_then_closes_them() {
    // Every test client is 127.0.0.1: one client, given every connection here.
    let (_folder, piton, addr) = serve_word_count(&[
        "--header-timeout",
        "2s",
        "--body-timeout",
        "2s",
        "--max-connections-per-client",
        "512",
    ]);
    let count = how_many_stalled();
    let stalled: Vec<Stalled> = (0..count)
        .map(|i| Stalled::open(addr, &half_sent(addr, i)))
        .collect();

    let answer = word_count(addr, "a b c").await;
    assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");

    // Every stalled one is closed by the server, whatever part of it was missing.
    all_closed(&stalled).await;
    let answer = word_count(addr, "still here").await;
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");
    drop(piton);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_past_max_connections_a_new_client_waits_and_is_served() {
    // One client (127.0.0.1) may hold every connection here: the global limit is tested.
    let (_folder, piton, addr) = serve_word_count(&[
        "--max-connections",
        "8",
        "--max-connections-per-client",
        "8",
        "--header-timeout",
        "2s",
    ]);
    let stalled: Vec<Stalled> = (0..8)
        .map(|i| Stalled::open(addr, &half_sent(addr, 1 + i % 2)))
        .collect();
    // The ninth connection waits in the listen backlog: it is answered, and only once
    // the server has let go of a stalled one.
    let answer = word_count(addr, "one two").await;
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");
    let closed = stalled.iter().filter(|s| s.closed()).count();
    assert!(
        closed >= 1,
        "the ninth connection was served while all 8 stalled ones were open"
    );
    piton
        .stderr
        .wait_for("--max-connections 8: new connections wait");
    all_closed(&stalled).await;
}

/// A POST to /mcp as an MCP client sends it, with `session` if any.
async fn post(addr: SocketAddr, session: Option<&str>, message: &Value) -> (u16, String) {
    let response = mcp_client::post(addr, session, message).await;
    let status = response.status().as_u16();
    (status, body_text(response).await)
}

fn initialize() -> Value {
    mcp_client::request(0, "initialize", mcp_client::initialize_params())
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_refuses_a_session_past_max_sessions_until_one_is_closed() {
    // One client (127.0.0.1) may hold every session here: the global limit is tested.
    let (_folder, piton, addr) =
        serve_word_count(&["--max-sessions", "2", "--max-sessions-per-client", "2"]);
    let (first, _) = HttpSession::start(addr).await;
    let (mut second, _) = HttpSession::start(addr).await;

    let (status, body) = post(addr, None, &initialize()).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("--max-sessions 2"), "{body}");
    assert!(body.contains("DELETE"), "{body}");

    // The sessions there still work, and so do 2026-07-28 requests, which need none.
    let answer = second
        .request(
            1,
            "tools/call",
            json!({"name": "word_count", "arguments": {"text": "a"}}),
        )
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "1", "{answer}");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let discover = json!({"jsonrpc": "2.0", "id": 7, "method": "server/discover",
        "params": {"_meta": meta}});
    let mut stateless = http_request(
        addr,
        "POST",
        "/mcp",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "server/discover"),
        ],
        &discover.to_string(),
    )
    .await;
    if stateless.status() != 200 {
        panic!("{}: {}", stateless.status(), body_text(stateless).await);
    }
    let answer = sse_until(&mut stateless, |m| m["id"] == 7).await;
    assert!(answer["result"].is_object(), "{answer}");

    // Closing a session frees its place.
    let id = first.id.clone().expect("a session");
    let closed = http_request(
        addr,
        "DELETE",
        "/mcp",
        &[
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        "",
    )
    .await;
    assert!(closed.status().is_success(), "{}", closed.status());
    let (mut third, answer) = HttpSession::start(addr).await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
    let answer = third
        .request(
            1,
            "tools/call",
            json!({"name": "word_count", "arguments": {"text": "x y"}}),
        )
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");
    // And the limit holds again.
    let (status, body) = post(addr, None, &initialize()).await;
    assert_eq!(status, 503, "{body}");
    piton.stderr.wait_for("--max-sessions");
}

/// The JSON-RPC message answering `id` in `response`, whether sent as JSON or as
/// server-sent events.
async fn answer_to(mut response: http::Response<hyper::body::Incoming>, id: u64) -> Value {
    let is_sse = response
        .headers()
        .get("content-type")
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    if is_sse {
        sse_until(&mut response, |m| m["id"] == id).await
    } else {
        let body = body_text(response).await;
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_closes_idle_connections_but_not_event_streams_or_long_calls() {
    let folder = plugins_folder(&[
        ("word_count.wasm", plugins::WORD_COUNT),
        ("spin.wasm", piton_tests::guests::HOSTILE_SPIN),
    ]);
    std::fs::write(
        folder.path().join("piton.toml"),
        "[tools.spin]\ntimeout = \"3s\"\n",
    )
    .expect("write piton.toml");
    let (piton, addr) = serve_http_with(
        "127.0.0.1:0",
        Some(folder.path()),
        &[
            "--idle-timeout",
            "1s",
            "--header-timeout",
            "1s",
            "--body-timeout",
            "1s",
        ],
    );

    // A kept-alive connection that goes quiet after its answer is closed by the server.
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("HTTP handshake");
    let connection = tokio::spawn(connection);
    let request = http::Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            initialize().to_string(),
        )))
        .expect("a request");
    let response = sender.send_request(request).await.expect("an answer");
    assert_eq!(response.status(), 200);
    let answer = answer_to(response, 0).await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
    tokio::time::timeout(ANSWER, connection)
        .await
        .expect("the server closes an idle connection")
        .expect("the connection task")
        .expect("a clean close");

    // An open event stream is not idle: past several timeouts it still carries events.
    let (mut session, _) = HttpSession::start(addr).await;
    let id = session.id.clone().expect("a session");
    let mut events = event_stream(addr, &id).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    std::fs::copy(plugins::READ_FILE, folder.path().join("read_file.wasm")).expect("copy");
    let changed = sse_until(&mut events, |m| m.get("method").is_some()).await;
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    let answer = session.request(1, "tools/list", json!({})).await;
    assert!(answer["result"]["tools"].is_array(), "{answer}");

    // A call that runs past every timeout gets its answer (the tool's deadline), on the
    // 2026-07-28 path too, where nothing is sent until the call ends.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "spin", "arguments": {}, "_meta": meta}});
    let response = http_request(
        addr,
        "POST",
        "/mcp",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "spin"),
        ],
        &call.to_string(),
    )
    .await;
    let answer = answer_to(response, 9).await;
    let error = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(error.contains("deadline of 3s"), "{answer}");
    drop(piton);
}

/// A request head is at most 64 KiB: past it the server answers 431 and closes, rather
/// than buffering up to hyper's default (~400 KiB) for each of hundreds of connections.
#[tokio::test(flavor = "multi_thread")]
async fn serve_http_refuses_a_request_head_over_64_kib() {
    let (_folder, piton, addr) = serve_word_count(&["--header-timeout", "2s"]);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Big: {}",
        "a".repeat(200 << 10)
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(ANSWER)).expect("read timeout");
    // The server may stop reading (and close) before all of it is sent.
    let _ = stream.write_all(head.as_bytes());
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:?}");
    // A body far larger than that still streams through.
    let answer = word_count(addr, &"a ".repeat(500_000)).await;
    assert_eq!(answer["result"]["content"][0]["text"], "500000", "{answer}");
    drop(piton);
}
