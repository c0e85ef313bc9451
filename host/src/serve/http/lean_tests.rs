//! `serve --http`'s lean path against rmcp's, on one in-process server with native
//! tools: the same request sent as the lean path takes it and with one `_meta` key it
//! does not know (so rmcp answers it) gets the same status, headers and bytes; what
//! the lean path leaves to rmcp gets rmcp's answer; and a lean call keeps the trace
//! context, consent, cancellation and stop of rmcp's.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::lean::Lean;
use super::limits::HttpLimits;
use crate::consent::allow::Allowances;
use crate::consent::{ApprovalKey, AskMode, Consent, Sealer};
use crate::registry::Registry;
use crate::serve::served::Served;
use crate::serve::session::ServeError;
use crate::serve::test_tools::{self, Waiter};

pub(super) const ANSWER: Duration = Duration::from_secs(20);

/// One `serve_http` on 127.0.0.1, stopped by [`Server::stop`].
pub(super) struct Server {
    pub(super) addr: SocketAddr,
    lean: Arc<Lean>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), ServeError>>,
}

impl Server {
    pub(super) async fn start(registry: Registry, grace: Duration) -> Self {
        Self::start_within(registry, grace, HttpLimits::default()).await
    }

    /// [`Server::start`] within `limits`.
    pub(super) async fn start_within(
        registry: Registry,
        grace: Duration,
        limits: HttpLimits,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("an address");
        let lean = Arc::<Lean>::default();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(super::server::serve(
            Served::new(registry),
            listener,
            limits,
            async move {
                let _ = stopped.await;
            },
            grace,
            Vec::new(),
            lean.clone(),
        ));
        Self {
            addr,
            lean,
            stop: Some(stop),
            task,
        }
    }

    pub(super) fn answered(&self) -> u64 {
        self.lean.answered()
    }

    /// A kept-alive connection to the server.
    pub(super) async fn connect(&self) -> Connection {
        let stream = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("connect");
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .expect("HTTP handshake");
        Connection {
            addr: self.addr,
            sender,
            task: tokio::spawn(connection),
        }
    }

    /// Stops the server and waits until it has returned.
    pub(super) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(ANSWER, self.task)
            .await
            .expect("the server stops in time")
            .expect("no panic")
            .expect("a clean stop");
    }
}

/// One HTTP answer: status, content type, and the whole body.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) content_type: Option<String>,
    pub(super) body: String,
}

impl Answer {
    /// The JSON-RPC message of the body: JSON, or the one event that carries one.
    pub(super) fn message(&self) -> Value {
        serde_json::from_str(&self.body)
            .ok()
            .or_else(|| {
                self.body
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .find_map(|data| serde_json::from_str(data.trim()).ok())
            })
            .unwrap_or_else(|| panic!("a message: {self:?}"))
    }
}

pub(super) struct Connection {
    addr: SocketAddr,
    sender: SendRequest<Full<Bytes>>,
    task: tokio::task::JoinHandle<hyper::Result<()>>,
}

impl Connection {
    pub(super) async fn send(&mut self, request: http::Request<Full<Bytes>>) -> Answer {
        self.sender.ready().await.expect("the connection is open");
        let response = tokio::time::timeout(ANSWER, self.sender.send_request(request))
            .await
            .expect("an answer in time")
            .expect("an HTTP answer");
        let status = response.status();
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|t| t.to_str().expect("text").to_owned());
        let body = response.into_body().collect().await.expect("the body");
        Answer {
            status,
            content_type,
            body: String::from_utf8(body.to_bytes().to_vec()).expect("UTF-8"),
        }
    }

    /// `message` posted with the headers of a 2026-07-28 request, plus `extra`.
    pub(super) async fn post(&mut self, message: &Value, extra: &[(&str, &str)]) -> Answer {
        let request = post(self.addr, message, extra);
        self.send(request).await
    }
}

/// `message` as a 2026-07-28 client posts it: the standard headers from its own
/// method and name, then `extra`.
pub(super) fn post(
    addr: SocketAddr,
    message: &Value,
    extra: &[(&str, &str)],
) -> http::Request<Full<Bytes>> {
    let mut request = http::Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28");
    if let Some(method) = message["method"].as_str() {
        request = request.header("mcp-method", method);
    }
    if let Some(name) = message["params"]["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request
        .body(Full::new(Bytes::from(message.to_string())))
        .expect("a request")
}

/// The `_meta` of a 2026-07-28 request from a client with `capabilities`.
pub(super) fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A `tools/call` of `name`; through rmcp when `through`, with a `_meta` key the
/// lean path leaves to rmcp and rmcp ignores.
pub(super) fn call(id: Value, name: &str, arguments: Value, meta: Value, through: bool) -> Value {
    let mut meta = meta;
    if through {
        meta["piton.test/through"] = json!("rmcp");
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta}})
}

fn list(id: u64, through: bool) -> Value {
    let mut meta = meta(json!({}));
    if through {
        meta["piton.test/through"] = json!("rmcp");
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta}})
}

/// Sends `request(through)` through rmcp, then through the lean path, and gives both
/// answers, checking which path answered each.
pub(super) async fn both(
    server: &Server,
    connection: &mut Connection,
    request: impl Fn(bool) -> Value,
) -> (Answer, Answer) {
    let before = server.answered();
    let rmcp = connection.post(&request(true), &[]).await;
    assert_eq!(server.answered(), before, "rmcp answered {rmcp:?}");
    let lean = connection.post(&request(false), &[]).await;
    assert_eq!(server.answered(), before + 1, "lean answered {lean:?}");
    (rmcp, lean)
}

#[tokio::test]
async fn a_lean_answer_is_byte_for_byte_what_rmcp_answers() {
    let (registry, _waiter) = test_tools::registry();
    let server = Server::start(registry, Duration::from_secs(5)).await;
    let mut connection = server.connect().await;
    let cases = [
        (json!(7), "text", json!({"a": [1, 2], "b": "x\"y"})),
        (json!("id-é\n"), "text", json!({})),
        (json!(8), "object", json!({})),
        (json!(9), "empty", json!({})),
        (json!(10), "big", json!({})),
        (json!(11), "fail", json!({})),
        (json!(12), "trap", json!({})),
        (json!(13), "nope", json!({})),
        (json!(14), "text", json!(null)),
    ];
    for (id, name, arguments) in cases {
        let (rmcp, lean) = both(&server, &mut connection, |through| {
            call(
                id.clone(),
                name,
                arguments.clone(),
                meta(json!({})),
                through,
            )
        })
        .await;
        assert_eq!(lean, rmcp, "{name} {id}");
        assert_eq!(lean.status, StatusCode::OK, "{lean:?}");
        assert_eq!(lean.content_type.as_deref(), Some("text/event-stream"));
        let answer = lean.message();
        assert_eq!(answer["id"], id, "{answer}");
        match name {
            "object" => assert_eq!(
                answer["result"]["structuredContent"]["words"], 3,
                "{answer}"
            ),
            "fail" => assert_eq!(answer["result"]["isError"], true, "{answer}"),
            "trap" => assert_eq!(answer["error"]["code"], -32603, "{answer}"),
            "nope" => assert_eq!(answer["error"]["code"], -32602, "{answer}"),
            _ => assert_eq!(answer["result"]["resultType"], "complete", "{answer}"),
        }
    }
    let (rmcp, lean) = both(&server, &mut connection, |through| list(20, through)).await;
    assert_eq!(lean, rmcp);
    let listed = lean.message();
    assert_eq!(listed["result"]["ttlMs"], 0, "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
    assert_eq!(listed["result"]["tools"].as_array().map(Vec::len), Some(8));
    // Every 2026-07-28 key the lean path knows, and a progress token, stay lean.
    let full = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "lean-tests", "version": "1"},
        "io.modelcontextprotocol/logLevel": "debug",
        "progressToken": "p-1",
    });
    let (rmcp, lean) = both(&server, &mut connection, |through| {
        call(json!(21), "text", json!({}), full.clone(), through)
    })
    .await;
    assert_eq!(lean, rmcp);
    server.stop().await;
}

#[tokio::test]
async fn what_the_lean_path_does_not_take_gets_rmcps_answer() {
    let (registry, _waiter) = test_tools::registry();
    let server = Server::start(registry, Duration::from_secs(5)).await;
    let mut connection = server.connect().await;
    let good = call(json!(1), "text", json!({}), meta(json!({})), false);
    // An Mcp-Name that is not the body's: rmcp's header mismatch.
    let mut request = post(server.addr, &good, &[]);
    request
        .headers_mut()
        .insert("mcp-name", http::HeaderValue::from_static("other"));
    let answer = connection.send(request).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{answer:?}");
    assert_eq!(answer.message()["error"]["code"], -32020, "{answer:?}");
    // No client capabilities: rmcp's malformed metadata.
    let mut bare = good.clone();
    bare["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let answer = connection.post(&bare, &[]).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{answer:?}");
    assert_eq!(answer.message()["error"]["code"], -32602, "{answer:?}");
    // Another method with the same headers.
    let ping =
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": meta(json!({}))}});
    let answer = connection.post(&ping, &[]).await;
    assert_ne!(answer.status, StatusCode::OK, "{answer:?}");
    // A body too large is refused as rmcp refuses it, whichever path read it.
    let big = call(
        json!(3),
        "text",
        json!({"x": "y".repeat(super::body::MAX_BODY)}),
        meta(json!({})),
        false,
    );
    let lean = server.connect().await.post(&big, &[]).await;
    let rmcp = server
        .connect()
        .await
        .post(&big, &[("mcp-param-x", "1")])
        .await;
    assert_eq!(lean, rmcp);
    assert_eq!(lean.status, StatusCode::PAYLOAD_TOO_LARGE, "{lean:?}");
    assert_eq!(server.answered(), 0);

    // A session's requests are rmcp's.
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "lean-tests", "version": "0"}}});
    let mut request = post(server.addr, &initialize, &[]);
    request.headers_mut().remove("mcp-protocol-version");
    request.headers_mut().remove("mcp-method");
    connection
        .sender
        .ready()
        .await
        .expect("the connection is open");
    let sessions = connection
        .sender
        .send_request(request)
        .await
        .expect("an answer");
    let id = sessions
        .headers()
        .get("mcp-session-id")
        .expect("a session")
        .clone();
    drop(sessions.into_body().collect().await);
    let session = [("mcp-session-id", id.to_str().expect("text"))];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let mut request = post(server.addr, &initialized, &session);
    request.headers_mut().insert(
        "mcp-protocol-version",
        http::HeaderValue::from_static("2025-11-25"),
    );
    assert_eq!(connection.send(request).await.status, StatusCode::ACCEPTED);
    let in_session = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "text", "arguments": {}}});
    let mut request = post(server.addr, &in_session, &session);
    request.headers_mut().insert(
        "mcp-protocol-version",
        http::HeaderValue::from_static("2025-11-25"),
    );
    let answer = connection.send(request).await;
    let message = answer.message();
    assert_eq!(
        message["result"]["content"][0]["text"], "got {}",
        "{message}"
    );
    assert!(message["result"].get("resultType").is_none(), "{message}");
    assert_eq!(
        server.answered(),
        0,
        "the lean path took a session's request"
    );
    server.stop().await;
}

/// What the `trace` tool answered.
fn traced(answer: &Answer) -> String {
    let message = answer.message();
    message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text answer: {message}"))
        .to_owned()
}

#[tokio::test]
async fn the_trace_context_of_meta_or_headers_reaches_the_tool_on_both_paths() {
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const HEADER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let (registry, _waiter) = test_tools::registry();
    let server = Server::start(registry, Duration::from_secs(5)).await;
    let mut connection = server.connect().await;
    let mut in_meta = meta(json!({}));
    in_meta["traceparent"] = json!(PARENT);
    in_meta["tracestate"] = json!("m=1");
    let mut bad_meta = meta(json!({}));
    bad_meta["traceparent"] = json!("00-bad");
    let headers = [("traceparent", HEADER), ("tracestate", "h=1")];
    let cases = [
        (
            in_meta.clone(),
            &headers[..],
            format!("Some({PARENT:?}) Some(\"m=1\")"),
        ),
        (
            bad_meta,
            &headers[..],
            format!("Some({HEADER:?}) Some(\"h=1\")"),
        ),
        (meta(json!({})), &[][..], "None None".to_owned()),
    ];
    for (meta, headers, expected) in cases {
        for through in [true, false] {
            let before = server.answered();
            let request = call(json!(1), "trace", json!({}), meta.clone(), through);
            let answer = connection.post(&request, headers).await;
            assert_eq!(server.answered(), before + u64::from(!through));
            assert_eq!(traced(&answer), expected, "through rmcp: {through}");
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn a_lean_call_whose_client_goes_away_is_dropped() {
    let (registry, waiter) = test_tools::registry();
    let server = Server::start(registry, Duration::from_secs(5)).await;
    let mut connection = server.connect().await;
    let request = post(
        server.addr,
        &call(json!(1), "wait", json!({}), meta(json!({})), false),
        &[],
    );
    connection.sender.ready().await.expect("open");
    let pending = connection.sender.send_request(request);
    let started = async {
        tokio::time::timeout(ANSWER, waiter.started.notified())
            .await
            .expect("the call starts");
    };
    tokio::select! {
        () = started => {}
        answer = pending => panic!("answered before it was released: {answer:?}"),
    }
    connection.task.abort();
    drop(connection);
    wait_until_dropped(&waiter).await;
    server.stop().await;
}

async fn wait_until_dropped(waiter: &Waiter) {
    tokio::time::timeout(ANSWER, async {
        while !waiter.dropped.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the call is dropped");
}

#[tokio::test]
async fn a_stop_lets_a_lean_call_finish_then_cuts_one_still_running_at_the_grace() {
    // Released during the grace: it answers, then the server returns.
    let (registry, waiter) = test_tools::registry();
    let server = Server::start(registry, Duration::from_secs(20)).await;
    let mut connection = server.connect().await;
    let request = post(
        server.addr,
        &call(json!(1), "wait", json!({}), meta(json!({})), false),
        &[],
    );
    let answer = tokio::spawn(async move { connection.send(request).await });
    waiter.started.notified().await;
    let stop = tokio::spawn(server.stop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    waiter.release.notify_one();
    let answer = answer.await.expect("the answer");
    assert_eq!(traced(&answer), "released");
    stop.await.expect("the server stops");

    // Still running at the end of the grace: it answers with the error saying so.
    let (registry, waiter) = test_tools::registry();
    let server = Server::start(registry, Duration::from_millis(200)).await;
    let mut connection = server.connect().await;
    let request = post(
        server.addr,
        &call(json!(2), "wait", json!({}), meta(json!({})), false),
        &[],
    );
    let answer = tokio::spawn(async move { connection.send(request).await });
    waiter.started.notified().await;
    server.stop().await;
    let message = answer.await.expect("the answer").message();
    let error = message["error"]["message"].as_str().unwrap_or_default();
    assert!(
        error.contains("was stopped before it answered"),
        "{message}"
    );
    wait_until_dropped(&waiter).await;
}

/// The test tools behind a consent policy that asks about every call, and lets the
/// person allow a tool for a minute.
fn asking() -> Registry {
    asking_in(test_tools::registry().0, AskMode::Always)
}

/// `registry` behind a consent policy that asks as `mode` says, and lets the person
/// allow a tool for a minute.
pub(super) fn asking_in(mut registry: Registry, mode: AskMode) -> Registry {
    let key = ApprovalKey::random().expect("a random key");
    let minute = Duration::from_secs(60);
    registry.set_consent(Arc::new(Consent::new(
        mode,
        BTreeMap::new(),
        minute,
        minute,
        Arc::new(Sealer::new(key, minute)),
        Arc::new(Allowances::default()),
    )));
    registry
}

/// `message` without its `requestState`, which is sealed anew each time.
pub(super) fn unsealed(mut message: Value) -> Value {
    let state = message["result"]
        .as_object_mut()
        .and_then(|result| result.remove("requestState"));
    assert!(state.is_some(), "no requestState: {message}");
    message
}

#[tokio::test]
async fn consent_asks_the_same_on_both_paths_and_an_allowance_holds_across_them() {
    let server = Server::start(asking(), Duration::from_secs(5)).await;
    let mut connection = server.connect().await;
    let cannot = meta(json!({}));
    let can = meta(json!({"elicitation": {}}));
    // A client that cannot be asked is refused alike.
    let (rmcp, lean) = both(&server, &mut connection, |through| {
        call(json!(1), "text", json!({}), cannot.clone(), through)
    })
    .await;
    assert_eq!(lean, rmcp);
    assert_eq!(lean.message()["result"]["isError"], true, "{lean:?}");
    // One that can is asked alike, but for the sealed state.
    let (rmcp, lean) = both(&server, &mut connection, |through| {
        call(json!(2), "text", json!({"n": 1}), can.clone(), through)
    })
    .await;
    assert_eq!(
        (lean.status, &lean.content_type),
        (rmcp.status, &rmcp.content_type)
    );
    let asked = lean.message();
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    assert_eq!(unsealed(asked), unsealed(rmcp.message()));
    // The lean question answered through rmcp: allowed for a while, in this scope.
    let mut retry = call(json!(3), "text", json!({"n": 1}), can.clone(), true);
    retry["params"]["requestState"] = state;
    retry["params"]["inputResponses"] = json!({"piton_approval":
        {"action": "accept", "content": {"decision": "allow_for_a_while"}}});
    let answer = connection.post(&retry, &[]).await.message();
    assert_eq!(
        answer["result"]["content"][0]["text"], "got {\"n\":1}",
        "{answer}"
    );
    // The next lean call of that client is not asked: the scope is rmcp's.
    let before = server.answered();
    let next = call(json!(4), "text", json!({"n": 2}), can.clone(), false);
    let answer = connection.post(&next, &[]).await.message();
    assert_eq!(server.answered(), before + 1);
    assert_eq!(
        answer["result"]["content"][0]["text"], "got {\"n\":2}",
        "{answer}"
    );
    // Another client (another Authorization) is asked still.
    let other = connection
        .post(&next, &[("authorization", "Bearer other")])
        .await
        .message();
    assert_eq!(other["result"]["resultType"], "input_required", "{other}");
    server.stop().await;
}
