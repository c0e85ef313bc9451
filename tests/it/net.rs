//! Network grants: sockets, DNS and outgoing HTTP, allowed host:port pairs only.
//!
//! Every target is a loopback server started by the test, which records each
//! connection, so an allowed case proves the connection happened and a refused one
//! proves it did not.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use piton_host::grants::{Grants, Host, NetGrant, Secret};
use piton_host::{Limits, Registry, ToolError};
use piton_tests::{guests, plugins};
use serde_json::{Value, json};

use crate::support::*;

/// What a test server was sent on one connection: the request head as text (or the
/// raw bytes, for a plain TCP client).
#[derive(Clone, Debug)]
struct Seen {
    head: String,
}

impl Seen {
    fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("")
    }

    /// The values of header `name` (case-insensitive).
    fn header(&self, name: &str) -> Vec<String> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|line| line.split_once(':'))
            .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .collect()
    }
}

/// How a server answers a request path.
type Route = Box<dyn Fn(&str) -> String + Send>;

/// A loopback HTTP/1.1 server on its own thread, answering each connection once and
/// recording what it was sent. It stops when dropped, or after a minute at most.
struct Server {
    port: u16,
    state: Arc<State>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    /// Connections accepted, counted before anything is read.
    connections: AtomicUsize,
    /// Times `accept` found no connection waiting.
    idle_polls: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
    stop: AtomicBool,
}

impl Server {
    fn start(route: Route) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(State::default());
        let thread = std::thread::spawn({
            let state = state.clone();
            move || serve(&listener, &route, &state)
        });
        Self {
            port,
            state,
            thread: Some(thread),
        }
    }

    /// Answers every path with 200 and `body`.
    fn ok(body: &'static str) -> Self {
        Self::start(Box::new(move |_| ok(body)))
    }

    /// What the server was sent, once it has answered `n` connections (5 s at most).
    fn requests(&self, n: usize) -> Vec<Seen> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let seen = self.state.seen.lock().expect("not poisoned").clone();
            if seen.len() >= n || Instant::now() > deadline {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether no connection ever reached the server. A connection the guest made is
    /// in the listen queue before the guest's call returns, so once `accept` has found
    /// the queue empty after this point, it would have been counted.
    fn untouched(&self) -> bool {
        let polls = self.state.idle_polls.load(Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.state.idle_polls.load(Ordering::SeqCst) < polls + 2 && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.state.connections.load(Ordering::SeqCst) == 0
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(listener: &TcpListener, route: &Route, state: &State) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !state.stop.load(Ordering::SeqCst) && Instant::now() < deadline {
        let Ok((mut stream, _)) = listener.accept() else {
            state.idle_polls.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2));
            continue;
        };
        state.connections.fetch_add(1, Ordering::SeqCst);
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let mut head = Vec::new();
        let mut buf = [0; 4096];
        // A TLS client (its first byte opens a handshake record) is answered at once.
        while !head.windows(4).any(|w| w == b"\r\n\r\n")
            && head.first() != Some(&0x16)
            && head.len() < 64 << 10
        {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let path = head.split(' ').nth(1).unwrap_or("").to_owned();
        state.seen.lock().expect("not poisoned").push(Seen { head });
        let _ = stream.write_all(route(&path).as_bytes());
    }
}

fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn redirect(location: &str) -> String {
    format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
}

fn ip(port: u16) -> NetGrant {
    NetGrant {
        host: Host::Ip(std::net::Ipv4Addr::LOCALHOST.into()),
        port,
        headers: Vec::new(),
    }
}

fn name(host: &str, port: u16) -> NetGrant {
    NetGrant {
        host: Host::Name(host.into()),
        port,
        headers: Vec::new(),
    }
}

/// A registry of the given components, each granted `network`.
async fn granted(paths: &[&str], network: Vec<NetGrant>) -> Registry {
    let mut registry = Registry::new();
    for path in paths {
        let mut tool = load(path).await;
        tool.set_grants(Grants {
            network: network.clone(),
            ..Grants::default()
        });
        registry.add(tool).expect("no duplicate names");
    }
    registry
}

async fn failure(registry: &Registry, name: &str, args: Value) -> String {
    match call_error(registry, name, args).await {
        ToolError::Failed(message) => message,
        other => panic!("{name}: expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn fetch_url_reaches_a_granted_address_and_no_other_port() {
    let granted_server = Server::start(Box::new(|path| match path {
        "/hop" => redirect("/"),
        _ => ok("hello from the granted server"),
    }));
    let other = Server::ok("hello from another port");
    let registry = granted(&[plugins::FETCH_URL], vec![ip(granted_server.port)]).await;

    let text = call_ok(
        &registry,
        "fetch_url",
        json!({"url": granted_server.url("/")}),
    )
    .await;
    assert!(text[0].starts_with("HTTP 200 "), "{text:?}");
    assert!(
        text[0].ends_with("hello from the granted server"),
        "{text:?}"
    );
    // A redirect within the grant is followed.
    let text = call_ok(
        &registry,
        "fetch_url",
        json!({"url": granted_server.url("/hop")}),
    )
    .await;
    assert!(
        text[0].ends_with("hello from the granted server"),
        "{text:?}"
    );
    let paths: Vec<_> = granted_server
        .requests(3)
        .iter()
        .map(|s| s.path().to_owned())
        .collect();
    assert_eq!(paths, ["/", "/hop", "/"]);

    let message = failure(&registry, "fetch_url", json!({"url": other.url("/")})).await;
    assert!(message.contains(&other.url("/")), "{message}");
    assert!(message.contains("HttpRequestDenied"), "{message}");
    assert!(other.untouched(), "{:?}", other.requests(0));
}

#[tokio::test]
async fn https_goes_through_tls_to_the_checked_address() {
    // No certificate a client would trust can be made for loopback here, so the
    // server answers in plain text; what counts is that it was sent a TLS hello.
    let server = Server::ok("not TLS");
    let registry = granted(&[plugins::FETCH_URL], vec![ip(server.port)]).await;
    let url = format!("https://127.0.0.1:{}/", server.port);
    let message = failure(&registry, "fetch_url", json!({ "url": url })).await;
    assert!(message.contains("Tls"), "{message}");
    let seen = server.requests(1);
    assert_eq!(seen.len(), 1);
    assert!(seen[0].head.starts_with('\u{16}'), "{:?}", seen[0].head);
}

#[tokio::test]
async fn a_redirect_to_an_authority_not_granted_is_refused() {
    let elsewhere = Server::ok("the guest must not get here");
    let target = elsewhere.url("/");
    let granted_server = Server::start(Box::new(move |_| redirect(&target)));
    let registry = granted(&[plugins::FETCH_URL], vec![ip(granted_server.port)]).await;

    let message = failure(
        &registry,
        "fetch_url",
        json!({"url": granted_server.url("/away")}),
    )
    .await;
    assert!(message.contains(&elsewhere.url("/")), "{message}");
    assert!(message.contains("HttpRequestDenied"), "{message}");
    assert_eq!(granted_server.requests(1).len(), 1);
    assert!(elsewhere.untouched(), "{:?}", elsewhere.requests(0));
}

#[tokio::test]
async fn tcp_reaches_a_granted_address_and_no_other_port() {
    let granted_server = Server::ok("");
    let other = Server::ok("");
    let registry = granted(&[guests::HOSTILE_NET_TCP], vec![ip(granted_server.port)]).await;

    let text = call_ok(
        &registry,
        "net_tcp",
        json!({"host": "127.0.0.1", "port": granted_server.port}),
    )
    .await;
    assert_eq!(
        text,
        [format!("connected to 127.0.0.1:{}", granted_server.port)]
    );
    let seen = granted_server.requests(1);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].head, "hello\n");

    let message = failure(
        &registry,
        "net_tcp",
        json!({"host": "127.0.0.1", "port": other.port}),
    )
    .await;
    assert!(message.contains("connect 127.0.0.1:"), "{message}");
    assert!(other.untouched(), "{:?}", other.requests(0));
    assert_host_alive().await;
}

#[tokio::test]
async fn a_closed_world_tool_has_no_network_even_when_granted() {
    let server = Server::ok("hello");
    let grants = vec![ip(server.port), name("localhost", server.port)];
    let registry = granted(
        &[guests::HOSTILE_NET_CLOSED, guests::HOSTILE_NET_TCP],
        grants,
    )
    .await;

    let outcomes = call_ok(&registry, "net_closed", json!({"port": server.port})).await;
    let outcomes: Vec<String> = serde_json::from_str(&outcomes[0]).unwrap();
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    for (outcome, what) in outcomes.iter().zip(["tcp", "dns", "http"]) {
        assert!(
            outcome.starts_with(&format!("{what} refused")),
            "{outcomes:?}"
        );
    }
    // Refused by the network layer, not by a malformed request.
    assert!(outcomes[2].contains("HttpRequestDenied"), "{outcomes:?}");
    assert!(server.untouched(), "{:?}", server.requests(0));

    // The same grants do let an open-world tool in.
    let args = json!({"host": "127.0.0.1", "port": server.port});
    call_ok(&registry, "net_tcp", args).await;
    assert_eq!(server.requests(1).len(), 1);
}

#[tokio::test]
async fn dns_answers_only_granted_names() {
    let port = 9; // never connected to: these are lookups only
    let registry = granted(&[guests::HOSTILE_NET_DNS], vec![name("localhost", port)]).await;
    // Refused before any lookup (access-denied), not merely unresolvable.
    for refused in ["not-granted.invalid", "localhost.invalid"] {
        let message = failure(&registry, "net_dns", json!({ "name": refused })).await;
        assert!(message.contains(&format!("lookup {refused}")), "{message}");
        assert!(message.contains("Permission denied"), "{message}");
    }

    // Nothing granted: no lookups at all.
    let registry = granted(&[guests::HOSTILE_NET_DNS], Vec::new()).await;
    let message = failure(&registry, "net_dns", json!({"name": "localhost"})).await;
    assert!(message.contains("Permission denied"), "{message}");

    // A granted name whose address is also granted literally: that address only
    // (never ::1, which localhost may also resolve to).
    let grants = vec![name("localhost", port), ip(port)];
    let registry = granted(&[guests::HOSTILE_NET_DNS], grants).await;
    let answers = call_ok(&registry, "net_dns", json!({"name": "LocalHost"})).await;
    assert_eq!(answers, [r#"["127.0.0.1"]"#]);
}

#[tokio::test]
async fn a_granted_name_does_not_lead_to_loopback() {
    let server = Server::ok("hello");
    let tools = [
        guests::HOSTILE_NET_DNS,
        guests::HOSTILE_NET_TCP,
        plugins::FETCH_URL,
    ];
    let registry = granted(&tools, vec![name("localhost", server.port)]).await;

    // Looked up, but no address is left: unresolvable rather than refused.
    let message = failure(&registry, "net_dns", json!({"name": "localhost"})).await;
    assert!(message.contains("lookup localhost"), "{message}");
    assert!(!message.contains("Permission denied"), "{message}");
    let args = json!({"host": "localhost", "port": server.port});
    let message = failure(&registry, "net_tcp", args).await;
    assert!(message.contains("lookup localhost"), "{message}");
    let args = json!({"host": "127.0.0.1", "port": server.port});
    let message = failure(&registry, "net_tcp", args).await;
    assert!(message.contains("connect 127.0.0.1:"), "{message}");
    let url = format!("http://localhost:{}/", server.port);
    let message = failure(&registry, "fetch_url", json!({ "url": url })).await;
    assert!(message.contains("HttpRequestDenied"), "{message}");
    assert!(server.untouched(), "{:?}", server.requests(0));
}

#[tokio::test]
async fn a_name_reaches_its_address_when_that_is_granted_literally() {
    let server = Server::ok("hello by name");
    let grants = vec![name("localhost", server.port), ip(server.port)];
    let registry = granted(&[plugins::FETCH_URL], grants).await;
    let url = format!("http://LOCALHOST:{}/", server.port);
    let text = call_ok(&registry, "fetch_url", json!({ "url": url })).await;
    assert!(text[0].ends_with("hello by name"), "{text:?}");
    let seen = server.requests(1);
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("host"),
        [format!("LOCALHOST:{}", server.port)]
    );
}

#[tokio::test]
async fn the_secret_header_reaches_the_server_but_never_the_guest() {
    let secret = format!("Bearer s3cret-{}", std::process::id());
    let with_secret = Server::ok("fine");
    let without = Server::ok("fine");
    let grants = vec![
        NetGrant {
            headers: vec![("Authorization".into(), Secret::new(secret.clone()))],
            ..ip(with_secret.port)
        },
        ip(without.port),
    ];
    let tools = [guests::HOSTILE_NET_HEADERS, guests::HOSTILE_NET_ENV];
    let registry = granted(&tools, grants).await;

    let authority = format!("127.0.0.1:{}", with_secret.port);
    let seen_by_guest = call_ok(&registry, "net_headers", json!({ "authority": authority })).await;
    let report: Value = serde_json::from_str(&seen_by_guest[0]).unwrap();
    assert_eq!(report["status"], 200, "{report}");
    let guest_headers = json!([["authorization", "guest-value"], ["x-guest", "1"]]);
    assert_eq!(report["request_headers"], guest_headers, "{report}");
    assert_eq!(report["kept_headers"], guest_headers, "{report}");
    assert_eq!(report["env"], json!([]), "{report}");
    assert!(!seen_by_guest[0].contains("s3cret"), "{report}");
    let seen = with_secret.requests(1);
    assert_eq!(seen.len(), 1);
    // The host's value replaced the guest's.
    assert_eq!(seen[0].header("authorization"), [secret]);
    assert_eq!(seen[0].header("x-guest"), ["1"]);

    // Another grant's requests do not carry it.
    let authority = format!("127.0.0.1:{}", without.port);
    call_ok(&registry, "net_headers", json!({ "authority": authority })).await;
    assert_eq!(
        without.requests(1)[0].header("authorization"),
        ["guest-value"]
    );

    let env = call_ok(&registry, "net_env", json!({})).await;
    assert!(!env[0].contains("s3cret"), "{env:?}");
}

#[tokio::test]
async fn the_guest_never_sees_pitons_environment() {
    let server = Server::ok("fine");
    let registry = granted(&[guests::HOSTILE_NET_ENV], vec![ip(server.port)]).await;
    let text = call_ok(&registry, "net_env", json!({})).await;
    let seen: Value = serde_json::from_str(&text[0]).unwrap();
    assert_eq!(seen, json!({"env": [], "args": []}));
}

#[tokio::test]
async fn http_without_grants_is_refused_but_the_tool_loads() {
    let server = Server::ok("hello");
    let registry = registry_of(&[plugins::FETCH_URL], Limits::default()).await;
    let message = failure(&registry, "fetch_url", json!({"url": server.url("/")})).await;
    assert!(message.contains("HttpRequestDenied"), "{message}");
    assert!(server.untouched(), "{:?}", server.requests(0));
}
