//! Spans of calls reach an OpenTelemetry collector: `piton serve` with `[tracing]
//! otlp` sends one span per call, over OTLP/HTTP with protobuf bodies, to a collector
//! that the test runs ([`Collector`]: what it reads is decoded with
//! opentelemetry-proto's messages, not with piton's code). A call that came with a
//! `traceparent` (in `_meta`, or as an HTTP header) is a child of the client's span.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt as _;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, status::StatusCode};
use piton_tests::{guests, plugins};
use prost::Message as _;
use serde_json::{Value, json};

use crate::mcp_client::{StdioPiton, body_text, send_once, sse_answer, stateless_call};
use crate::support::{ANSWER, listening, piton, plugins_folder, serve_http_command};

/// The client's trace and span, as a `traceparent` (sampled) names them.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn traceparent(trace: &str, span: &str, flags: &str) -> String {
    format!("00-{trace}-{span}-{flags}")
}

/// One span as the collector got it, with its resource's `service.name`.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    span: Span,
}

/// An OTLP/HTTP collector: takes `POST /v1/traces` with an
/// `application/x-protobuf` `ExportTraceServiceRequest` and answers as a collector
/// does; anything else gets 404 or 415, and a body that does not decode 400 (which
/// fails the test: piton's spans must decode). Runs on a thread of its own.
struct Collector {
    addr: SocketAddr,
    spans: Arc<Mutex<Vec<Received>>>,
    refused: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("address");
        let spans = Arc::new(Mutex::new(Vec::new()));
        let refused = Arc::new(Mutex::new(Vec::new()));
        let (into, refusals) = (spans.clone(), refused.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let (into, refusals) = (into.clone(), refusals.clone());
                    let service = hyper::service::service_fn(move |request| {
                        let (into, refusals) = (into.clone(), refusals.clone());
                        async move {
                            Ok::<_, hyper::Error>(receive(request, &into, &refusals).await)
                        }
                    });
                    tokio::spawn(
                        hyper::server::conn::http1::Builder::new().serve_connection(
                            hyper_util::rt::TokioIo::new(stream),
                            service,
                        ),
                    );
                }
            });
        });
        Self {
            addr,
            spans,
            refused,
        }
    }

    /// The collector's address, with no path: piton adds `/v1/traces`.
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The spans received, once there are at least `n` (failing after a minute).
    fn spans(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + ANSWER;
        loop {
            let refused = self.refused.lock().expect("lock").clone();
            assert!(refused.is_empty(), "the collector refused: {refused:?}");
            let spans = self.spans.lock().expect("lock").clone();
            if spans.len() >= n {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "{n} spans expected, {} came: {spans:#?}",
                spans.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

async fn receive(
    request: http::Request<hyper::body::Incoming>,
    into: &Mutex<Vec<Received>>,
    refused: &Mutex<Vec<String>>,
) -> http::Response<http_body_util::Full<bytes::Bytes>> {
    let answer = |status: u16, body: Vec<u8>| {
        http::Response::builder()
            .status(status)
            .header("content-type", "application/x-protobuf")
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .expect("a response")
    };
    let refuse = |status: u16, why: String| {
        refused.lock().expect("lock").push(why);
        answer(status, Vec::new())
    };
    if request.method() != http::Method::POST || request.uri().path() != "/v1/traces" {
        let why = format!("{} {}", request.method(), request.uri());
        return refuse(404, why);
    }
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if content_type != "application/x-protobuf" {
        return refuse(415, format!("content-type {content_type:?}"));
    }
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => return refuse(400, format!("body: {e}")),
    };
    let export = match ExportTraceServiceRequest::decode(body) {
        Ok(export) => export,
        Err(e) => return refuse(400, format!("not an ExportTraceServiceRequest: {e}")),
    };
    let mut spans = into.lock().expect("lock");
    for resource_spans in export.resource_spans {
        let service = resource_spans
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| text(kv.value.as_ref()))
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(Received {
                    service: service.clone(),
                    span,
                });
            }
        }
    }
    answer(200, ExportTraceServiceResponse::default().encode_to_vec())
}

fn text(value: Option<&AnyValue>) -> Option<String> {
    match value?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

/// The attribute `key` of `attributes` as JSON (string, bool or int).
fn attr(attributes: &[KeyValue], key: &str) -> Value {
    let Some(value) = attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
    else {
        return Value::Null;
    };
    match value {
        any_value::Value::StringValue(s) => json!(s),
        any_value::Value::BoolValue(b) => json!(b),
        any_value::Value::IntValue(i) => json!(i),
        other => json!(format!("{other:?}")),
    }
}

/// The one span of the calls of `tool` with `outcome`.
fn the_span<'a>(spans: &'a [Received], tool: &str, outcome: &str) -> &'a Span {
    let found: Vec<&Span> = spans
        .iter()
        .map(|r| &r.span)
        .filter(|s| {
            attr(&s.attributes, "gen_ai.tool.name") == tool
                && attr(&s.attributes, "piton.outcome") == outcome
        })
        .collect();
    assert_eq!(found.len(), 1, "one {outcome} span of {tool}: {spans:#?}");
    found[0]
}

/// A folder with word_count and net_call, net_call granted 127.0.0.1:9 only, and
/// `[tracing]` sending to `collector`.
fn folder_tracing_to(collector: &Collector) -> tempfile::TempDir {
    let folder = plugins_folder(&[
        ("word_count.wasm", plugins::WORD_COUNT),
        ("net_call.wasm", guests::HOSTILE_NET_CALL),
    ]);
    let config = format!(
        "[tracing]\notlp = {:?}\nservice_name = \"piton-under-test\"\n\
         [tools.net_call]\nnetwork = [\"127.0.0.1:9\"]\n",
        collector.url()
    );
    std::fs::write(folder.path().join("piton.toml"), config).expect("write piton.toml");
    folder
}

#[test]
fn each_call_over_stdio_is_a_span_at_the_collector_sent_by_the_time_piton_stops() {
    let collector = Collector::start();
    let folder = folder_tracing_to(&collector);
    let mut command = piton();
    // Nobody is asked before a call here: consent has its own tests (peers/consent.rs).
    command
        .args(["serve", "--approve", "never", "--plugins"])
        .arg(folder.path());
    let mut serve = StdioPiton::run(command);
    let calls = [
        ("word_count", json!({"text": "a b c"})),
        ("word_count", json!({})),
        (
            "net_call",
            json!({"method": "GET", "url": "http://127.0.0.2:9/", "read_only": false}),
        ),
    ];
    for (id, (name, arguments)) in (1..).zip(calls) {
        let mut params = json!({"name": name, "arguments": arguments});
        if name == "net_call" {
            let parent = traceparent(TRACE, CLIENT_SPAN, "01");
            params["_meta"] = json!({"traceparent": parent, "tracestate": "client=7"});
        }
        let answer = serve.request(id, "tools/call", params);
        assert!(answer["result"].is_object(), "{answer}");
    }
    // Spans are exported every few seconds, and at the latest when piton stops.
    drop(serve.stdin.take());
    assert_eq!(serve.running.exit_code(), Some(0));
    let spans = collector.spans(3);
    assert_eq!(spans.len(), 3, "one span per call: {spans:#?}");

    for received in &spans {
        assert_eq!(received.service, "piton-under-test");
        let span = &received.span;
        assert_eq!(span.trace_id.len(), 16);
        assert_eq!(span.span_id.len(), 8);
        assert!(span.start_time_unix_nano <= span.end_time_unix_nano);
        assert_eq!(
            attr(&span.attributes, "gen_ai.operation.name"),
            "execute_tool"
        );
        assert_eq!(attr(&span.attributes, "piton.hints.trust"), "enforced");
    }
    let mut traces: Vec<&[u8]> = spans.iter().map(|r| &r.span.trace_id[..]).collect();
    traces.dedup();
    assert_eq!(
        traces.len(),
        3,
        "each call without a traceparent starts a trace"
    );

    let ok = the_span(&spans, "word_count", "ok");
    assert_eq!(ok.name, "execute_tool word_count");
    let source = attr(&ok.attributes, "piton.tool.source");
    assert!(
        source
            .as_str()
            .is_some_and(|s| s.ends_with("word_count.wasm")),
        "{source}"
    );
    for (hint, value) in [
        ("read_only", true),
        ("destructive", false),
        ("open_world", false),
    ] {
        let key = format!("piton.hints.{hint}");
        assert_eq!(attr(&ok.attributes, &key), value, "{key}");
    }
    assert_eq!(attr(&ok.attributes, "piton.denials"), 0);
    assert_eq!(attr(&ok.attributes, "error.type"), Value::Null);
    assert_ne!(status_code(ok), StatusCode::Error);
    assert!(ok.events.is_empty(), "{:?}", ok.events);
    assert!(ok.parent_span_id.is_empty(), "no traceparent: a new trace");
    assert_ne!(hex::encode(&ok.trace_id), TRACE);

    let input = the_span(&spans, "word_count", "input");
    assert_eq!(attr(&input.attributes, "error.type"), "input");
    assert_eq!(status_code(input), StatusCode::Error);

    let denied = the_span(&spans, "net_call", "failed");
    assert_eq!(hex::encode(&denied.trace_id), TRACE, "the client's trace");
    assert_eq!(
        hex::encode(&denied.parent_span_id),
        CLIENT_SPAN,
        "the client's span"
    );
    assert_ne!(
        hex::encode(&denied.span_id),
        CLIENT_SPAN,
        "a span of its own"
    );
    assert_eq!(denied.trace_state, "client=7");
    assert_eq!(attr(&denied.attributes, "piton.hints.open_world"), true);
    assert_eq!(attr(&denied.attributes, "piton.denials"), 1);
    assert_eq!(status_code(denied), StatusCode::Error);
    let [event] = &denied.events[..] else {
        panic!("one denial event: {:#?}", denied.events);
    };
    assert_eq!(event.name, "piton.denial");
    assert_eq!(attr(&event.attributes, "piton.denial.capability"), "net");
    let target = attr(&event.attributes, "piton.denial.target");
    assert!(
        target.as_str().is_some_and(|t| t.contains("127.0.0.2")),
        "{target}"
    );
    assert!(attr(&event.attributes, "piton.denial.reason").is_string());
}

/// A 2026-07-28 tools/call of `word_count` to `addr`, with `meta` in its `_meta` and
/// `headers` on its request; it must succeed.
async fn stateless_word_count(addr: SocketAddr, id: u64, meta: Value, headers: &[(&str, String)]) {
    let mut request = stateless_call(addr, id, "word_count", json!({"text": "a b"}));
    let mut body: Value = serde_json::from_slice(
        &request
            .body()
            .clone()
            .collect()
            .await
            .expect("body")
            .to_bytes(),
    )
    .expect("JSON");
    for (key, value) in meta.as_object().expect("an object") {
        body["params"]["_meta"][key] = value.clone();
    }
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
    let answer = sse_answer(&text, id)
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no answer: {text}"));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn over_http_a_span_continues_the_traceparent_of_meta_or_of_the_header() {
    let collector = Collector::start();
    let folder = folder_tracing_to(&collector);
    let command = serve_http_command("127.0.0.1:0", Some(folder.path()), &[]);
    let (mut serve, addr) = listening(command);
    let from_meta = ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174");
    let from_header = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let meta = json!({"traceparent": traceparent(from_meta.0, from_meta.1, "01")});
    stateless_word_count(addr, 1, meta, &[]).await;
    let header = [(
        "traceparent",
        traceparent(from_header.0, from_header.1, "01"),
    )];
    stateless_word_count(addr, 2, json!({}), &header).await;
    // The client chose not to sample this trace: piton records no span of it.
    let unsampled = [("traceparent", traceparent(TRACE, CLIENT_SPAN, "00"))];
    stateless_word_count(addr, 3, json!({}), &unsampled).await;
    stateless_word_count(addr, 4, json!({}), &[]).await;
    serve.terminate();
    assert_eq!(serve.exit_code(), Some(0));

    let spans = collector.spans(3);
    let parents: Vec<(String, String)> = spans
        .iter()
        .map(|r| {
            (
                hex::encode(&r.span.trace_id),
                hex::encode(&r.span.parent_span_id),
            )
        })
        .collect();
    assert_eq!(spans.len(), 3, "{parents:?}");
    for (trace, span) in [from_meta, from_header] {
        assert!(
            parents.contains(&(trace.to_owned(), span.to_owned())),
            "a child of {trace}/{span}: {parents:?}"
        );
    }
    assert!(
        parents
            .iter()
            .any(|(trace, parent)| parent.is_empty() && trace != TRACE),
        "the call with no traceparent starts a trace: {parents:?}"
    );
    assert!(
        !parents.iter().any(|(trace, _)| trace == TRACE),
        "an unsampled trace is not recorded: {parents:?}"
    );
}

fn status_code(span: &Span) -> StatusCode {
    span.status
        .as_ref()
        .and_then(|s| StatusCode::try_from(s.code).ok())
        .unwrap_or(StatusCode::Unset)
}

#[test]
fn a_collector_that_is_not_there_costs_spans_not_calls() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}", closed.local_addr().expect("address"));
    drop(closed);
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let config = format!("[tracing]\notlp = {url:?}\n");
    std::fs::write(folder.path().join("piton.toml"), config).expect("write piton.toml");
    let mut command = piton();
    // Nobody is asked before a call here: consent has its own tests (peers/consent.rs).
    command
        .args(["serve", "--approve", "never", "--plugins"])
        .arg(folder.path());
    let mut serve = StdioPiton::run(command);
    for id in 1..=3 {
        let params = json!({"name": "word_count", "arguments": {"text": "a b"}});
        let answer = serve.request(id, "tools/call", params);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    drop(serve.stdin.take());
    assert_eq!(serve.running.exit_code(), Some(0), "stops, having tried");
}
