//! `piton serve --http`: MCP over Streamable HTTP, its sessions, which hosts and
//! origins it answers, how it starts and stops, and how it tells each session that the
//! tools changed. Clients that hold it open are in serve_http_limits.rs.

use piton_tests::{guests, plugins};
use serde_json::json;

use crate::mcp_client::{
    HttpSession, body_text, event_stream, http_request, request, send_once, sse_answer, sse_until,
    stateless_call, stateless_meta, tool_names,
};
use crate::support::{
    ANSWER, listening, piton, plugins_folder, serve_http, serve_http_command, serve_http_on,
};

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

/// The value of `name=` in a log line.
fn log_field<'a>(line: &'a str, name: &str) -> &'a str {
    let key = format!(" {name}=");
    line.split_once(&key)
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

/// A kept-alive client reading each whole answer before its next call (as a proxy
/// or an ordinary HTTP client does) gets each in one write, on a socket with Nagle's
/// algorithm off. Two writes per answer (the event, then the chunk that ends the
/// body) on a delaying socket made the second wait for the client's delayed ACK,
/// ~40 ms a call. Asserted on the server's own count of its writes and on the socket
/// option, which it logs when the connection closes, never on a clock.
#[tokio::test(flavor = "multi_thread")]
async fn serve_http_answers_each_call_of_a_kept_alive_client_in_one_write_without_delay() {
    const CALLS: u64 = 200;
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let mut command = serve_http_command("127.0.0.1:0", Some(folder.path()), &[]);
    command.env("PITON_LOG", "warn,piton_host::serve::http=debug");
    let (piton, addr) = listening(command);

    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let local = stream.local_addr().expect("the client's address");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("HTTP handshake");
    let connection = tokio::spawn(connection);
    for id in 1..=CALLS {
        let text = "w ".repeat(usize::try_from(id).expect("a small count"));
        let request = stateless_call(addr, id, "word_count", json!({"text": text}));
        sender.ready().await.expect("the connection stays open");
        let response = tokio::time::timeout(ANSWER, sender.send_request(request))
            .await
            .expect("an answer in time")
            .expect("an HTTP response on the same connection");
        assert_eq!(response.status(), 200, "call {id}");
        let body = body_text(response).await;
        let answer = sse_answer(&body, id).unwrap_or_else(|| panic!("no answer {id}: {body}"));
        assert_eq!(
            answer["result"]["content"][0]["text"],
            id.to_string(),
            "{answer}"
        );
    }
    // Closing its side ends the connection, and the server says what it carried.
    drop(sender);
    tokio::time::timeout(ANSWER, connection)
        .await
        .expect("the connection closes")
        .expect("the connection task")
        .expect("a clean close");
    let line = piton.stderr.wait_for(&format!("peer={local} "));
    assert!(line.contains("connection closed"), "{line}");
    assert_eq!(log_field(&line, "requests"), CALLS.to_string(), "{line}");
    assert_eq!(log_field(&line, "no_delay"), "true", "{line}");
    let writes: u64 = log_field(&line, "writes").parse().expect("a count");
    assert!(
        writes <= CALLS,
        "{writes} writes for {CALLS} answers, more than one each: {line}"
    );
}

/// How a POST answered: status, content type and body, and whether its length was
/// known up front (the lean path's one write) or it was streamed (rmcp's).
async fn answered(
    addr: std::net::SocketAddr,
    request: http::Request<http_body_util::Full<bytes::Bytes>>,
) -> (u16, String, String, bool) {
    let response = send_once(addr, request).await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|t| t.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let whole = headers.contains_key("content-length");
    (status, content_type, body_text(response).await, whole)
}

/// A 2026-07-28 `tools/call` or `tools/list` is answered without rmcp (in one piece,
/// its length known) and exactly as rmcp answers it: the same request with one
/// `_meta` key the lean path does not know goes to rmcp, which streams its answer.
/// Errors included: an unknown tool, arguments the schema refuses, a trap.
#[tokio::test(flavor = "multi_thread")]
async fn serve_http_answers_stateless_calls_and_lists_as_rmcp_does() {
    let folder = plugins_folder(&[
        ("word_count.wasm", plugins::WORD_COUNT),
        ("panic.wasm", guests::HOSTILE_PANIC),
    ]);
    let (mut piton, addr) = serve_http(Some(folder.path()));
    let cases = [
        (
            "tools/call",
            json!({"name": "word_count", "arguments": {"text": "a b c"}}),
        ),
        (
            "tools/call",
            json!({"name": "word_count", "arguments": {"text": 3}}),
        ),
        (
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
        ),
        ("tools/call", json!({"name": "panic", "arguments": {}})),
        ("tools/list", json!({})),
    ];
    for (id, (method, params)) in (1..).zip(cases) {
        let mut answers = Vec::new();
        for through in [false, true] {
            let mut params = params.clone();
            params["_meta"] = stateless_meta();
            if through {
                params["_meta"]["piton.test/through"] = json!("rmcp");
            }
            let mut request = stateless_call(addr, id, "", json!({}));
            *request.body_mut() = request_body(id, method, &params);
            let headers = request.headers_mut();
            headers.insert("mcp-method", method.parse().expect("a header"));
            match params["name"].as_str() {
                Some(name) => headers.insert("mcp-name", name.parse().expect("a header")),
                None => headers.remove("mcp-name"),
            };
            answers.push(answered(addr, request).await);
        }
        let (lean, rmcp) = (&answers[0], &answers[1]);
        assert!(
            lean.3,
            "{method} {params} was not answered by the lean path: {lean:?}"
        );
        assert!(
            !rmcp.3,
            "{method} {params} was not answered by rmcp: {rmcp:?}"
        );
        assert_eq!(
            (lean.0, &lean.1, &lean.2),
            (rmcp.0, &rmcp.1, &rmcp.2),
            "{method} {params}"
        );
        let answer = sse_answer(&lean.2, id).unwrap_or_else(|| panic!("no answer: {lean:?}"));
        match id {
            1 => assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}"),
            2 => assert_eq!(answer["result"]["isError"], true, "{answer}"),
            3 => assert_eq!(answer["error"]["code"], -32602, "{answer}"),
            4 => assert_eq!(answer["error"]["code"], -32603, "{answer}"),
            _ => assert_eq!(answer["result"]["cacheScope"], "private", "{answer}"),
        }
    }
    piton.terminate();
    assert_eq!(piton.exit_code(), Some(0), "{}", piton.stderr.text());
}

fn request_body(
    id: u64,
    method: &str,
    params: &serde_json::Value,
) -> http_body_util::Full<bytes::Bytes> {
    let body = request(id, method, params.clone()).to_string();
    http_body_util::Full::new(bytes::Bytes::from(body))
}
