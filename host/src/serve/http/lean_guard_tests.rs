//! `serve --http`'s lean path under hostile requests: the Host/Origin check and the
//! body deadline come before it, a body it does not fully understand goes to rmcp
//! (and no body makes the host panic), and consent's rounds (issue 22: a call that
//! is not read-only is asked about with a sealed `requestState`, or refused when the
//! client cannot be asked) hold on it as they do through rmcp.

use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::lean_tests::{ANSWER, Answer, Server, asking_in, both, call, meta, post, unsealed};
use super::limits::HttpLimits;
use crate::consent::AskMode;
use crate::serve::test_tools::{self, Does};

const GRACE: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_lean_request_naming_another_host_or_origin_is_refused_before_it_runs() {
    let (registry, waiter) = test_tools::registry();
    let server = Server::start(registry, GRACE).await;
    let mut connection = server.connect().await;
    let wait = call(json!(1), "wait", json!({}), meta(json!({})), false);
    let port = server.addr.port();
    let foreign: [(&str, String); 4] = [
        ("host", format!("evil.example:{port}")),
        ("host", "127.0.0.1".to_owned()),
        ("origin", "http://evil.example".to_owned()),
        ("origin", "null".to_owned()),
    ];
    for (name, value) in foreign {
        let mut request = post(server.addr, &wait, &[]);
        request
            .headers_mut()
            .insert(name, value.parse().expect("a header value"));
        let answer = connection.send(request).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{name}: {answer:?}");
    }
    assert_eq!(
        server.answered(),
        0,
        "the lean path answered a foreign request"
    );
    let started = tokio::time::timeout(Duration::from_millis(200), waiter.started.notified());
    assert!(started.await.is_err(), "a refused request started its call");
    server.stop().await;
}

#[tokio::test]
async fn a_lean_head_whose_body_stalls_is_closed_at_the_body_deadline() {
    let limits = HttpLimits {
        body_timeout: Duration::from_millis(300),
        ..HttpLimits::default()
    };
    let (registry, _waiter) = test_tools::registry();
    let server = Server::start_within(registry, GRACE, limits).await;
    let mut stream = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: text\r\nContent-Length: 1000\r\n\r\n\
         {{\"jsonrpc\":\"2.0\",",
        server.addr
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let sent = Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(ANSWER, stream.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the stalled connection is still open");
    assert!(
        sent.elapsed() >= limits.body_timeout,
        "closed before the body deadline"
    );
    assert!(
        !String::from_utf8_lossy(&rest).contains("got"),
        "answered a body never sent: {}",
        String::from_utf8_lossy(&rest)
    );
    assert_eq!(server.answered(), 0);
    server.stop().await;
}

/// Bodies under a head the lean path takes (a `tools/call` of `text`) that it must
/// not take: malformed, mismatched, ambiguous or built to exhaust a parser.
fn hostile_bodies() -> Vec<(&'static str, Vec<u8>)> {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let call = |rest: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{rest}}}}}"#)
            .into_bytes()
    };
    let nested = |depth: usize| {
        let mut text = format!(r#""name":"text",{meta},"arguments":{{"a":"#);
        text.push_str(&"[".repeat(depth));
        text.push_str(&"]".repeat(depth));
        text.push('}');
        call(&text)
    };
    vec![
        ("empty", Vec::new()),
        ("cut off", call(&format!(r#""name":"text",{meta}"#))[..40].to_vec()),
        ("not UTF-8", b"\xff\xfe{\"jsonrpc\":\"2.0\"}".to_vec()),
        ("null", b"null".to_vec()),
        ("a string", br#""tools/call""#.to_vec()),
        ("a huge number", b"1e999999".to_vec()),
        ("a batch", format!("[{}]", String::from_utf8_lossy(&call(&format!(r#""name":"text",{meta}"#)))).into_bytes()),
        ("trailing bytes", [call(&format!(r#""name":"text",{meta}"#)), b"{}".to_vec()].concat()),
        ("another name", call(&format!(r#""name":"trap",{meta}"#))),
        ("the name twice", call(&format!(r#""name":"text","name":"trap",{meta}"#))),
        ("_meta twice", call(&format!(r#""name":"text",{meta},{meta}"#))),
        ("a lone surrogate", call(&format!(r#""name":"text",{meta},"arguments":{{"a":"\ud800"}}"#))),
        ("nested past serde's limit", nested(200)),
        ("nested a million deep", nested(1_000_000)),
        ("a null id", format!(r#"{{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{{"name":"text",{meta}}}}}"#).into_bytes()),
        ("an id that is a float", format!(r#"{{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{{"name":"text",{meta}}}}}"#).into_bytes()),
        ("an id past i64", format!(r#"{{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/call","params":{{"name":"text",{meta}}}}}"#).into_bytes()),
        ("JSON-RPC 1.0", format!(r#"{{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{{"name":"text",{meta}}}}}"#).into_bytes()),
        ("a list in a call's head", format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{meta}}}}}"#).into_bytes()),
        ("another revision in _meta", call(r#""name":"text","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}"#)),
        ("capabilities that are not an object", call(r#""name":"text","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#)),
        ("a request state that is not text", call(&format!(r#""name":"text",{meta},"requestState":{{"a":1}}"#))),
    ]
}

#[tokio::test]
async fn hostile_bodies_under_a_lean_head_get_an_answer_and_never_a_panic() {
    let (registry, _waiter) = test_tools::registry();
    let server = Server::start(registry, GRACE).await;
    let template = call(json!(1), "text", json!({}), meta(json!({})), false);
    for (what, body) in hostile_bodies() {
        // Each on its own connection: one that dies mid-request is seen here.
        let mut connection = server.connect().await;
        let mut request = post(server.addr, &template, &[]);
        *request.body_mut() = http_body_util::Full::new(bytes::Bytes::from(body));
        let answer = connection.send(request).await;
        assert!(
            !answer.status.is_server_error(),
            "{what}: a server error: {answer:?}"
        );
        assert!(
            !answer.body.contains("boom"),
            "{what}: trap ran: {answer:?}"
        );
        assert!(
            !answer.body.contains("got "),
            "{what}: text ran: {answer:?}"
        );
        assert_eq!(server.answered(), 0, "{what}: the lean path took it");
    }
    // An escaped name is the name itself, for rmcp's check and the lean path's.
    let escaped = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t\u0065xt","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let mut request = post(server.addr, &template, &[]);
    *request.body_mut() = http_body_util::Full::new(bytes::Bytes::from_static(escaped));
    let answer = server.connect().await.send(request).await;
    assert_eq!(answer.message()["result"]["content"][0]["text"], "got {}");
    assert_eq!(server.answered(), 1);
    // A name in raw UTF-8 (not Base64) is refused by rmcp, never called by the lean path.
    let mut raw = post(server.addr, &template, &[]);
    raw.headers_mut().insert(
        "mcp-name",
        http::HeaderValue::from_bytes("t\u{e9}xt".as_bytes()).expect("obs-text"),
    );
    let raw_body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t\u00e9xt","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    *raw.body_mut() = http_body_util::Full::new(bytes::Bytes::from_static(raw_body));
    let answer = server.connect().await.send(raw).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{answer:?}");
    assert_eq!(server.answered(), 1);
    server.stop().await;
}

/// A retry of the call `name(arguments)` with `state` and `responses` (none: no
/// `inputResponses`), from a client that can be asked.
fn retry(
    id: u64,
    name: &str,
    arguments: Value,
    state: &Value,
    responses: Option<Value>,
) -> impl Fn(bool) -> Value + use<> {
    let state = state.clone();
    let name = name.to_owned();
    move |through| {
        let mut retry = call(
            json!(id),
            &name,
            arguments.clone(),
            meta(json!({"elicitation": {}})),
            through,
        );
        retry["params"]["requestState"] = state.clone();
        if let Some(responses) = &responses {
            retry["params"]["inputResponses"] = responses.clone();
        }
        retry
    }
}

fn decision(word: &str) -> Option<Value> {
    Some(json!({"piton_approval": {"action": "accept", "content": {"decision": word}}}))
}

/// The text of a refused call (`isError`), checked to name `words`.
fn refused(answer: &Answer, words: &str) {
    let message = answer.message();
    assert_eq!(message["result"]["isError"], true, "{message}");
    let text = message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains(words), "{words:?} not in {message}");
}

#[tokio::test]
async fn consent_rounds_on_the_lean_path_refuse_what_rmcp_refuses_and_run_an_approved_call_once() {
    let (mut registry, _waiter) = test_tools::registry();
    registry
        .add(test_tools::tool("change", Does::Change))
        .expect("a valid tool");
    let server = Server::start(asking_in(registry, AskMode::NotReadOnly), GRACE).await;
    let mut connection = server.connect().await;
    let cannot = meta(json!({}));
    let can = meta(json!({"elicitation": {}}));
    // Read-only: run for any client, asked nothing.
    let (rmcp, lean) = both(&server, &mut connection, |through| {
        call(json!(1), "text", json!({}), cannot.clone(), through)
    })
    .await;
    assert_eq!(lean, rmcp);
    assert_eq!(lean.message()["result"]["content"][0]["text"], "got {}");
    // Not read-only, from a client that cannot be asked (none, or URL elicitation only).
    for capabilities in [json!({}), json!({"elicitation": {"url": {}}})] {
        let (rmcp, lean) = both(&server, &mut connection, |through| {
            call(
                json!(2),
                "change",
                json!({}),
                meta(capabilities.clone()),
                through,
            )
        })
        .await;
        assert_eq!(lean, rmcp, "{capabilities}");
        refused(&lean, "not run");
    }
    // From one that can: asked, with a sealed state.
    let args = json!({"n": 1});
    let (rmcp, lean) = both(&server, &mut connection, |through| {
        call(json!(3), "change", args.clone(), can.clone(), through)
    })
    .await;
    let asked = lean.message();
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    assert_eq!(unsealed(asked), unsealed(rmcp.message()));
    // Retries that are no approval of this call are refused alike on both paths.
    let mut forged = state.as_str().expect("a state").to_owned();
    forged.insert(
        3,
        if forged.as_bytes()[3] == b'A' {
            'B'
        } else {
            'A'
        },
    );
    let cases = [
        (
            retry(
                4,
                "change",
                args.clone(),
                &json!(forged),
                decision("allow_once"),
            ),
            "altered",
        ),
        (
            retry(5, "change", json!({"n": 2}), &state, decision("allow_once")),
            "other arguments",
        ),
        (
            retry(
                7,
                "change",
                args.clone(),
                &json!("x".repeat(100_000)),
                decision("allow_once"),
            ),
            "not run",
        ),
    ];
    for (request, words) in cases {
        let (rmcp, lean) = both(&server, &mut connection, request).await;
        assert_eq!(lean, rmcp, "{words}");
        refused(&lean, words);
    }
    // What uses up a state, on the lean path alone, each round asked anew: a retry
    // with no answer, a declined one, and an approved one, which runs once.
    let declined = Some(json!({"piton_approval": {"action": "decline"}}));
    let rounds = [
        (None, "carried no answer"),
        (declined, "declined"),
        (decision("allow_once"), ""),
    ];
    for (id, (responses, words)) in (10..).step_by(3).zip(rounds) {
        let before = server.answered();
        let ask = call(json!(id), "change", args.clone(), can.clone(), false);
        let state = connection.post(&ask, &[]).await.message()["result"]["requestState"].clone();
        assert!(state.is_string(), "not asked: {state}");
        let round = retry(id + 1, "change", args.clone(), &state, responses);
        let answer = connection.post(&round(false), &[]).await;
        if words.is_empty() {
            let message = answer.message();
            assert_eq!(
                message["result"]["content"][0]["text"], "got {\"n\":1}",
                "{message}"
            );
        } else {
            refused(&answer, words);
        }
        let again = retry(
            id + 2,
            "change",
            args.clone(),
            &state,
            decision("allow_once"),
        );
        refused(&connection.post(&again(false), &[]).await, "already used");
        assert_eq!(server.answered(), before + 3, "{words}");
    }
    server.stop().await;
}
