//! The lean `tools/call` path against rmcp's, on one in-process stdio session with
//! native tools: the same bytes for the same call, when it is on and when not,
//! cancellation, calls in flight together, and the end of input.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use super::connection::serve_lean;
use super::lean::Lean;
use crate::registry::Registry;
use crate::serve::served::Served;
use crate::serve::test_tools::registry;

const ANSWER: Duration = Duration::from_secs(20);

/// A client of one in-process session, its raw lines as the server wrote them.
struct Peer {
    write: Option<tokio::io::WriteHalf<tokio::io::DuplexStream>>,
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    lean: Arc<Lean>,
    server: tokio::task::JoinHandle<Result<(), crate::serve::session::ServeError>>,
}

impl Peer {
    fn start(registry: Registry) -> Self {
        Self::with_pipe(registry, 1 << 20)
    }

    /// A session whose pipe holds `capacity` bytes each way.
    fn with_pipe(registry: Registry, capacity: usize) -> Self {
        let lean = Lean::new(Served::new(registry));
        let (client, server) = tokio::io::duplex(capacity);
        let (server_read, server_write) = tokio::io::split(server);
        let server = tokio::spawn(serve_lean(
            lean.clone(),
            server_read,
            server_write,
            std::future::pending(),
        ));
        let (read, write) = tokio::io::split(client);
        Self {
            write: Some(write),
            lines: BufReader::new(read).lines(),
            lean,
            server,
        }
    }

    async fn send(&mut self, message: &Value) {
        let write = self.write.as_mut().expect("open");
        write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("send");
    }

    /// The next line the server wrote; `None` when it closed the connection.
    async fn line(&mut self) -> Option<String> {
        tokio::time::timeout(ANSWER, self.lines.next_line())
            .await
            .expect("the server answers in time")
            .expect("read")
    }

    /// The next line that answers a request (notifications are skipped).
    async fn answer(&mut self) -> String {
        loop {
            let line = self.line().await.expect("an answer, not the end");
            let message: Value = serde_json::from_str(&line).expect("JSON");
            if message.get("id").is_some() {
                return line;
            }
        }
    }

    /// `initialize` and `notifications/initialized`, then waits until the lean path
    /// is on.
    async fn initialize(&mut self) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "lean-tests", "version": "0"}}}),
        )
        .await;
        let answer: Value = serde_json::from_str(&self.answer().await).expect("JSON");
        assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        tokio::time::timeout(ANSWER, async {
            while !self.lean.engaged() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .expect("the lean path is on after the handshake");
    }

    /// Ends the input (as a closed stdin) and reads to the end of the output.
    async fn end_input(&mut self) {
        if let Some(mut write) = self.write.take() {
            write.shutdown().await.expect("shutdown");
        }
    }

    async fn close(mut self) {
        self.end_input().await;
        while self.line().await.is_some() {}
        tokio::time::timeout(ANSWER, self.server)
            .await
            .expect("the session ends")
            .expect("no panic")
            .expect("a clean end");
    }
}

fn call(id: Value, name: &str, arguments: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// Request metadata the lean path leaves to rmcp and rmcp ignores.
fn through_rmcp() -> Option<Value> {
    Some(json!({"piton.test/through": "rmcp"}))
}

#[tokio::test]
async fn a_lean_answer_is_byte_for_byte_what_rmcp_answers() {
    let (registry, _waiter) = registry();
    let mut peer = Peer::start(registry);
    peer.initialize().await;
    let cases = [
        (json!(7), "text", json!({"a": [1, 2], "b": "x\"y"})),
        (json!("id-é\n"), "text", json!({})),
        (json!(8), "object", json!({})),
        (json!(9), "empty", json!({})),
        (json!(10), "fail", json!({})),
        (json!(11), "trap", json!({})),
        (json!(12), "nope", json!({})),
        (json!(13), "text", json!(null)),
    ];
    for (id, name, arguments) in cases {
        let before = peer.lean.answered();
        peer.send(&call(id.clone(), name, arguments.clone(), through_rmcp()))
            .await;
        let rmcp = peer.answer().await;
        assert_eq!(peer.lean.answered(), before, "rmcp answered {rmcp}");
        peer.send(&call(id.clone(), name, arguments.clone(), None))
            .await;
        let lean = peer.answer().await;
        assert_eq!(peer.lean.answered(), before + 1, "lean answered {lean}");
        assert_eq!(lean, rmcp, "{name} {id}");
        let answer: Value = serde_json::from_str(&lean).expect("JSON");
        assert_eq!(answer["id"], id, "{lean}");
        match name {
            "object" => assert_eq!(answer["result"]["structuredContent"]["words"], 3, "{lean}"),
            "fail" => assert_eq!(answer["result"]["isError"], true, "{lean}"),
            "trap" => assert_eq!(answer["error"]["code"], -32603, "{lean}"),
            "nope" => assert_eq!(answer["error"]["code"], -32602, "{lean}"),
            _ => assert!(answer["result"]["content"].is_array(), "{lean}"),
        }
    }
    // A progress token is all the metadata the lean path takes.
    let before = peer.lean.answered();
    let meta = Some(json!({"progressToken": "p-1"}));
    peer.send(&call(json!(20), "text", json!({}), meta)).await;
    peer.answer().await;
    assert_eq!(peer.lean.answered(), before + 1);
    peer.close().await;
}

/// What the `trace` tool answered to `line`.
fn traced(line: &str) -> String {
    let answer: Value = serde_json::from_str(line).expect("JSON");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text answer: {answer}"))
        .to_owned()
}

#[tokio::test]
async fn the_trace_context_of_meta_reaches_the_tool_on_both_paths() {
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (registry, _waiter) = registry();
    let mut peer = Peer::start(registry);
    peer.initialize().await;
    let sent = json!({"traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7"});
    let expected = format!("Some({PARENT:?}) Some(\"rojo=00f067aa0ba902b7\")");
    let mut through = sent.clone();
    through["piton.test/through"] = json!("rmcp");
    for (meta, lean) in [(sent, true), (through, false)] {
        let before = peer.lean.answered();
        peer.send(&call(json!(1), "trace", json!({}), Some(meta)))
            .await;
        let answer = peer.answer().await;
        assert_eq!(peer.lean.answered(), before + u64::from(lean), "{answer}");
        assert_eq!(traced(&answer), expected, "lean: {lean}");
    }
    // A bad traceparent is ignored, on either path: the call runs, in no trace.
    for through in [None, Some("rmcp")] {
        let mut meta = json!({"traceparent": "00-bad", "tracestate": "rojo=1"});
        if let Some(through) = through {
            meta["piton.test/through"] = json!(through);
        }
        peer.send(&call(json!(2), "trace", json!({}), Some(meta)))
            .await;
        assert_eq!(traced(&peer.answer().await), "None None");
    }
    peer.send(&call(json!(3), "trace", json!({}), None)).await;
    assert_eq!(traced(&peer.answer().await), "None None");
    peer.close().await;
}

#[tokio::test]
async fn before_initialize_a_tools_call_is_left_to_rmcp() {
    let (registry, _waiter) = registry();
    let mut peer = Peer::start(registry);
    peer.send(&call(json!(1), "text", json!({}), None)).await;
    let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
    assert!(answer["error"].is_object(), "{answer}");
    assert_eq!(peer.lean.answered(), 0);
    peer.initialize().await;
    peer.send(&call(json!(2), "text", json!({}), None)).await;
    let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
    assert!(answer["result"]["content"].is_array(), "{answer}");
    assert_eq!(peer.lean.answered(), 1);
    peer.close().await;
}

#[tokio::test]
async fn a_session_without_initialize_stays_with_rmcp() {
    let (registry, _waiter) = registry();
    let mut peer = Peer::start(registry);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "lean-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for id in 1..=3 {
        peer.send(&call(json!(id), "text", json!({}), Some(meta.clone())))
            .await;
        let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
        assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    }
    // Without its metadata a request of such a session is rmcp's to refuse.
    peer.send(&call(json!(4), "text", json!({}), None)).await;
    let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
    assert!(answer["error"].is_object(), "{answer}");
    assert!(!peer.lean.engaged());
    assert_eq!(peer.lean.answered(), 0);
    peer.close().await;
}

#[tokio::test]
async fn a_cancelled_lean_call_is_dropped_and_gets_no_answer() {
    let (registry, waiter) = registry();
    let mut peer = Peer::start(registry);
    peer.initialize().await;
    peer.send(&call(json!(1), "wait", json!({}), None)).await;
    tokio::time::timeout(ANSWER, waiter.started.notified())
        .await
        .expect("the call starts");
    peer.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "test"}}),
    )
    .await;
    tokio::time::timeout(ANSWER, async {
        while !waiter.dropped.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the cancelled call is dropped");
    peer.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(peer.lean.answered(), 0);
    peer.close().await;
}

#[tokio::test]
async fn lean_calls_in_flight_together_each_answer() {
    let (registry, waiter) = registry();
    let mut peer = Peer::start(registry);
    peer.initialize().await;
    peer.send(&call(json!(1), "wait", json!({}), None)).await;
    tokio::time::timeout(ANSWER, waiter.started.notified())
        .await
        .expect("the call starts");
    // Calls that come while one waits are answered meantime.
    for id in 2..=4 {
        peer.send(&call(json!(id), "text", json!({}), None)).await;
        let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
        assert_eq!(answer["id"], id, "{answer}");
    }
    waiter.release.notify_one();
    let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "released",
        "{answer}"
    );
    assert_eq!(peer.lean.answered(), 4);
    peer.close().await;
}

#[tokio::test]
async fn a_lean_call_in_flight_at_the_end_of_input_still_answers() {
    let (registry, waiter) = registry();
    let mut peer = Peer::start(registry);
    peer.initialize().await;
    peer.send(&call(json!(1), "wait", json!({}), None)).await;
    tokio::time::timeout(ANSWER, waiter.started.notified())
        .await
        .expect("the call starts");
    peer.end_input().await;
    // The session has seen the end by now; the call still runs and answers.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !waiter.dropped.load(Ordering::SeqCst),
        "the call was dropped"
    );
    waiter.release.notify_one();
    let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
    assert_eq!(
        answer["result"]["content"][0]["text"], "released",
        "{answer}"
    );
    peer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_reads_late_gets_every_answer_and_rmcps_too() {
    let (registry, _waiter) = registry();
    // A pipe far smaller than one answer: every write waits for the peer.
    let mut peer = Peer::with_pipe(registry, 1024);
    peer.initialize().await;
    // rmcp's answers and lean ones wait for the output together, and past a few MiB
    // queued the session reads no more until the peer reads; the requests go from a
    // task of their own, as a client that writes while it is not reading.
    let calls: u32 = 80;
    let mut write = peer.write.take().expect("open");
    let sender = tokio::spawn(async move {
        let mut lines = vec![json!({"jsonrpc": "2.0", "id": 1000, "method": "tools/list"})];
        for id in 0..calls {
            lines.push(call(json!(id), "big", json!({}), None));
            if id % 10 == 0 {
                lines.push(json!({"jsonrpc": "2.0", "id": 2000 + id, "method": "ping"}));
            }
        }
        for line in lines {
            write
                .write_all(format!("{line}\n").as_bytes())
                .await
                .expect("send");
        }
        write
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut answered = std::collections::BTreeSet::new();
    let expected = calls + 1 + calls.div_ceil(10);
    while answered.len() < expected as usize {
        let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
        answered.insert(answer["id"].as_i64().expect("a number id"));
    }
    peer.write = Some(sender.await.expect("the requests are sent"));
    // rmcp can still write.
    peer.send(&json!({"jsonrpc": "2.0", "id": 3000, "method": "tools/list"}))
        .await;
    let answer: Value = serde_json::from_str(&peer.answer().await).expect("JSON");
    assert_eq!(answer["id"], 3000, "{answer}");
    peer.close().await;
}
