//! `piton serve --http` shares its connections and sessions out among clients: one
//! client (one address) cannot take them all. On loopback every test client is
//! 127.0.0.1 unless it binds another address of 127/8 (Linux routes them all to `lo`),
//! so 127.0.0.2, 127.0.0.3 … act as distinct clients here.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use piton_tests::plugins;
use serde_json::{Value, json};

use crate::mcp_client::{self, HttpSession, body_text, connect_from, http_request_from};
use crate::support::{ANSWER, Running, plugins_folder, serve_http_with};

const GREEDY: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const OTHER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// `piton serve --http 127.0.0.1:0 FLAGS` on a plugins folder holding word_count.
fn serve_word_count(flags: &[&str]) -> (tempfile::TempDir, Running, SocketAddr) {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let (piton, addr) = serve_http_with("127.0.0.1:0", Some(folder.path()), flags);
    (folder, piton, addr)
}

/// A kept-alive connection from `from`, after one `GET /healthz` on it; or the
/// status and body that refused it.
async fn kept_alive(
    from: IpAddr,
    addr: SocketAddr,
) -> Result<SendRequest<Full<Bytes>>, (u16, String)> {
    let stream = connect_from(Some(from), addr).await;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("HTTP handshake");
    tokio::spawn(connection);
    let request = http::Request::get("/healthz")
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .expect("a request");
    let response = tokio::time::timeout(ANSWER, sender.send_request(request))
        .await
        .expect("an answer in time")
        .expect("an HTTP response");
    match response.status().as_u16() {
        200 => {
            drop(body_text(response).await);
            Ok(sender)
        }
        status => Err((status, body_text(response).await)),
    }
}

/// The word count of `text`, from a 2026-07-28 (sessionless) call on `sender`.
async fn word_count_on(
    sender: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    text: &str,
) -> Value {
    let call = mcp_client::stateless_call(addr, 1, "word_count", json!({"text": text}));
    // A kept-alive connection takes its next request once its last answer is read
    // through, which its task notices in its own time.
    sender.ready().await.expect("the connection stays open");
    let response = tokio::time::timeout(ANSWER, sender.send_request(call))
        .await
        .expect("an answer in time")
        .expect("an HTTP response");
    let status = response.status();
    let body = body_text(response).await;
    assert_eq!(status, 200, "{body}");
    mcp_client::sse_answer(&body, 1)
        .or_else(|| serde_json::from_str(&body).ok())
        .unwrap_or_else(|| panic!("no answer: {body:?}"))
}

/// The word count of `text` in a new session of a client at `from`, which must be
/// given one.
async fn word_count_in_session(from: IpAddr, addr: SocketAddr, text: &str) -> Value {
    let mut response = mcp_client::post_from(Some(from), addr, None, &initialize()).await;
    let status = response.status();
    if status != 200 {
        panic!(
            "the client at {from} was refused a session: {status}: {}",
            body_text(response).await
        );
    }
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .map(str::to_owned);
    let answer = mcp_client::sse_until(&mut response, |m| m["id"] == 0).await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
    let mut session = HttpSession {
        addr,
        id,
        from: Some(from),
    };
    let response = session.post(&mcp_client::initialized()).await;
    assert_eq!(response.status(), 202);
    session
        .request(
            1,
            "tools/call",
            json!({"name": "word_count", "arguments": {"text": text}}),
        )
        .await
}

fn initialize() -> Value {
    mcp_client::request(0, "initialize", mcp_client::initialize_params())
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_one_client_cannot_take_every_connection() {
    // Kept-alive connections are held 10 minutes: only a per-client share stops one
    // client from holding all 8.
    let (_folder, piton, addr) =
        serve_word_count(&["--max-connections", "8", "--idle-timeout", "10m"]);
    let mut held = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..8 {
        match kept_alive(GREEDY, addr).await {
            Ok(sender) => held.push(sender),
            Err(refusal) => refused.push(refusal),
        }
    }
    // Another client still gets in and is served.
    let mut other = match kept_alive(OTHER, addr).await {
        Ok(sender) => sender,
        Err((status, body)) => panic!("the other client was refused: {status}: {body}"),
    };
    let answer = word_count_on(&mut other, addr, "one two three").await;
    assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");

    // The greedy client holds its share (a quarter of --max-connections by default)
    // and was told why the rest were refused.
    assert_eq!((held.len(), refused.len()), (2, 6), "{refused:?}");
    for (status, body) in &refused {
        assert_eq!(*status, 429, "{body}");
        assert!(
            body.contains("--max-connections-per-client 2") && body.contains("127.0.0.2"),
            "{body}"
        );
    }
    // Its connections still work.
    for sender in &mut held {
        let request = http::Request::get("/healthz")
            .header("host", addr.to_string())
            .body(Full::new(Bytes::new()))
            .expect("a request");
        sender.ready().await.expect("the connection stays open");
        let response = sender.send_request(request).await.expect("an answer");
        assert_eq!(response.status(), 200);
    }
    piton.stderr.wait_for("--max-connections-per-client 2");
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_one_client_cannot_take_every_session() {
    let (_folder, piton, addr) = serve_word_count(&["--max-sessions", "4"]);
    let mut statuses = Vec::new();
    let mut refusals = Vec::new();
    let mut first = None;
    for _ in 0..4 {
        let response = mcp_client::post_from(Some(GREEDY), addr, None, &initialize()).await;
        statuses.push(response.status().as_u16());
        if response.status() == 200 {
            first = first.or_else(|| {
                response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|id| id.to_str().ok())
                    .map(str::to_owned)
            });
        } else {
            refusals.push(body_text(response).await);
        }
    }
    // Another client still gets a session, and is served.
    let answer = word_count_in_session(OTHER, addr, "a b").await;
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");

    // The greedy client got its share (a quarter of --max-sessions by default), and was
    // told why not more.
    assert_eq!(statuses, [200, 429, 429, 429], "{refusals:?}");
    for body in &refusals {
        assert!(
            body.contains("--max-sessions-per-client 1")
                && body.contains("127.0.0.2")
                && body.contains("DELETE"),
            "{body}"
        );
    }
    // Closing its session frees its place.
    let id = first.expect("a session id");
    let closed = http_request_from(
        Some(GREEDY),
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
    let answer = word_count_in_session(GREEDY, addr, "x").await;
    assert_eq!(answer["result"]["content"][0]["text"], "1", "{answer}");
    piton.stderr.wait_for("--max-sessions-per-client 1");
}
