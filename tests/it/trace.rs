//! A call's W3C trace context: the `traceparent` and `tracestate` a client sends in a
//! tools/call's `_meta` (or, over Streamable HTTP, as request headers) reach the
//! tool in its `CallContext`; one that does not parse is ignored, never an error.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use piton_host::serve::{HttpLimits, Served, serve_http};
use piton_host::{
    Args, CallContext, CallError, Content, Hints, Registry, Tool, ToolResult, ToolSpec,
};
use serde_json::{Value, json};

use crate::mcp_client::{
    Client, HttpSession, body_text, http_request, send_once, sse_answer, sse_until, stateless_call,
    stateless_meta,
};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OTHER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/// What the tool saw of a call: its traceparent and tracestate, as text.
type Seen = (Option<String>, Option<String>);

/// A native tool that records the trace context of each call.
struct Tracer {
    spec: ToolSpec,
    seen: Arc<Mutex<Vec<Seen>>>,
}

#[async_trait::async_trait]
impl Tool for Tracer {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn hints(&self) -> Hints {
        Hints::read_only().open_world(false)
    }

    async fn call(
        &self,
        ctx: &CallContext,
        _args: &Args,
        _hints: Hints,
    ) -> Result<ToolResult, CallError> {
        let seen = (
            ctx.trace.map(|t| t.to_string()),
            ctx.tracestate.as_ref().map(ToString::to_string),
        );
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(seen);
        Ok(Ok(vec![Content::text("traced")]))
    }
}

/// A served registry of one `tracer` tool, and what it sees.
fn served_tracer() -> (Arc<Served>, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut registry = Registry::new();
    registry
        .add(Tracer {
            spec: ToolSpec {
                name: "tracer".into(),
                description: "records its calls' trace context".into(),
                input_schema: json!({"type": "object"}),
                parallel: true,
            },
            seen: seen.clone(),
        })
        .expect("a valid tool");
    (Served::new(registry), seen)
}

fn last(seen: &Mutex<Vec<Seen>>) -> Seen {
    seen.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .last()
        .cloned()
        .expect("the tool was called")
}

fn traced(parent: &str, state: &str) -> Seen {
    (Some(parent.to_owned()), Some(state.to_owned()))
}

#[tokio::test]
async fn a_traceparent_in_meta_reaches_the_tool_over_stdio() {
    let (served, seen) = served_tracer();
    let mut client = Client::over(served);
    client.initialize().await;
    let cases = [
        // A plain call (the lean path) and one rmcp handles (another _meta key).
        (
            json!({"traceparent": PARENT, "tracestate": "a=1"}),
            traced(PARENT, "a=1"),
        ),
        (
            json!({"traceparent": PARENT, "tracestate": "a=1", "x.example/k": 1}),
            traced(PARENT, "a=1"),
        ),
        // Ignored: an all-zero parent id, a traceparent that is not text.
        (
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                "tracestate": "a=1"}),
            (None, None),
        ),
        (json!({"traceparent": 7}), (None, None)),
        (json!({}), (None, None)),
    ];
    for (id, (meta, expected)) in (1..).zip(cases) {
        let answer = client
            .request(
                id,
                "tools/call",
                json!({"name": "tracer", "arguments": {}, "_meta": meta}),
            )
            .await;
        assert_eq!(answer["result"]["content"][0]["text"], "traced", "{answer}");
        assert_eq!(last(&seen), expected, "{meta}");
    }
    client.close().await;
}

/// A 2026-07-28 tools/call of `tracer` with `meta` added to its `_meta` and
/// `headers` to its request, sent to `addr`: what the tool saw.
async fn stateless(
    addr: std::net::SocketAddr,
    seen: &Mutex<Vec<Seen>>,
    meta: Value,
    headers: &[(&str, &str)],
) -> Seen {
    let mut request = stateless_call(addr, 1, "tracer", json!({}));
    let mut all = stateless_meta();
    for (key, value) in meta.as_object().expect("an object") {
        all[key] = value.clone();
    }
    let params = json!({"name": "tracer", "arguments": {}, "_meta": all});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    *request.body_mut() = http_body_util::Full::new(bytes::Bytes::from(body.to_string()));
    for (name, value) in headers {
        request.headers_mut().append(
            http::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
            http::HeaderValue::from_str(value).expect("a header value"),
        );
    }
    let response = send_once(addr, request).await;
    assert_eq!(response.status(), 200);
    let text = body_text(response).await;
    let answer = sse_answer(&text, 1)
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no answer: {text}"));
    assert_eq!(answer["result"]["content"][0]["text"], "traced", "{answer}");
    last(seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_traceparent_reaches_the_tool_over_http_from_meta_or_headers() {
    let (served, seen) = served_tracer();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("its address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_http(
        served,
        listener,
        HttpLimits::default(),
        async {
            let _ = stopped.await;
        },
        Duration::from_secs(1),
        Vec::new(),
    ));
    let none = json!({});
    let headers = [("traceparent", OTHER), ("tracestate", "h=1")];
    assert_eq!(
        stateless(addr, &seen, none.clone(), &headers).await,
        traced(OTHER, "h=1")
    );
    let meta = json!({"traceparent": PARENT, "tracestate": "m=1"});
    assert_eq!(
        stateless(addr, &seen, meta.clone(), &[]).await,
        traced(PARENT, "m=1")
    );
    // Both: `_meta` wins, with its own tracestate.
    assert_eq!(
        stateless(addr, &seen, meta, &headers).await,
        traced(PARENT, "m=1")
    );
    // A bad `_meta` traceparent does not hide a good header.
    let bad = json!({"traceparent": "00-bad", "tracestate": "m=1"});
    assert_eq!(
        stateless(addr, &seen, bad.clone(), &headers).await,
        traced(OTHER, "h=1")
    );
    // Nothing valid: the call runs, in no trace.
    let bad_header = [("traceparent", "00-bad"), ("tracestate", "h=1")];
    assert_eq!(stateless(addr, &seen, bad, &bad_header).await, (None, None));
    // Two traceparent fields are no valid one; tracestate fields are one list.
    let twice = [("traceparent", PARENT), ("traceparent", OTHER)];
    assert_eq!(
        stateless(addr, &seen, none.clone(), &twice).await,
        (None, None)
    );
    let split = [
        ("traceparent", PARENT),
        ("tracestate", "a=1"),
        ("tracestate", "b=2"),
    ];
    assert_eq!(
        stateless(addr, &seen, none, &split).await,
        traced(PARENT, "a=1,b=2")
    );

    // In a session (protocol 2025-11-25) too.
    let (session, _) = HttpSession::start(addr).await;
    let id = session.id.clone().expect("a session id");
    let message = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "tracer", "arguments": {}}});
    let mut response = http_request(
        addr,
        "POST",
        "/mcp",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-session-id", &id),
            ("mcp-protocol-version", "2025-11-25"),
            ("traceparent", OTHER),
        ],
        &message.to_string(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let answer = sse_until(&mut response, |m| m["id"] == 5).await;
    assert_eq!(answer["result"]["content"][0]["text"], "traced", "{answer}");
    assert_eq!(last(&seen), (Some(OTHER.to_owned()), None));

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .expect("the server stops")
        .expect("no panic")
        .expect("a clean stop");
}
