//! Network grants: allowed host:port pairs only, for sockets and DNS here and for
//! outgoing HTTP in net_http.rs, which shares this file's loopback test server.
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

use piton_host::grants::{Grants, Host, Mount, MountMode, NetGrant};
use piton_host::{Limits, Registry, ToolError};
use piton_tests::{guests, plugins};
use serde_json::{Value, json};

use crate::support::*;

/// What a test server was sent on one connection: the request head as text (or the
/// raw bytes, for a plain TCP client).
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) head: String,
}

impl Seen {
    pub(crate) fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("")
    }

    /// The values of header `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Vec<String> {
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
pub(crate) type Route = Box<dyn Fn(&str) -> String + Send>;

/// A loopback HTTP/1.1 server on its own thread, answering each connection once and
/// recording what it was sent. It stops when dropped, or after a minute at most.
pub(crate) struct Server {
    pub(crate) port: u16,
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
    /// Answers each request with what `route` gives for its path.
    pub(crate) fn start(route: Route) -> Self {
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
    pub(crate) fn ok(body: &'static str) -> Self {
        Self::start(Box::new(move |_| ok(body)))
    }

    /// What the server was sent, once it has answered `n` connections (5 s at most).
    pub(crate) fn requests(&self, n: usize) -> Vec<Seen> {
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
    pub(crate) fn untouched(&self) -> bool {
        let polls = self.state.idle_polls.load(Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.state.idle_polls.load(Ordering::SeqCst) < polls + 2 && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.state.connections.load(Ordering::SeqCst) == 0
    }

    /// `http://127.0.0.1:PORT` and `path`.
    pub(crate) fn url(&self, path: &str) -> String {
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

/// A 200 answer with `body`.
pub(crate) fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A 302 answer to `location`.
pub(crate) fn redirect(location: &str) -> String {
    format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
}

/// A grant of 127.0.0.1:`port`.
pub(crate) fn ip(port: u16) -> NetGrant {
    NetGrant {
        host: Host::Ip(std::net::Ipv4Addr::LOCALHOST.into()),
        port,
        headers: Vec::new(),
        tcp: false,
    }
}

/// A grant of `host`:`port` by name.
pub(crate) fn name(host: &str, port: u16) -> NetGrant {
    NetGrant {
        host: Host::Name(host.into()),
        port,
        headers: Vec::new(),
        tcp: false,
    }
}

/// A registry of the given components, each granted `network`.
pub(crate) async fn granted(paths: &[&str], network: Vec<NetGrant>) -> Registry {
    let mut registry = Registry::new();
    for path in paths {
        let grants = Grants {
            network: network.clone(),
            ..Grants::default()
        };
        let tool = with_settings(load(path).await, grants, Limits::default());
        registry.add(tool).expect("no duplicate names");
    }
    registry
}

/// Calls `name` and expects it to fail; returns the message.
pub(crate) async fn failure(registry: &Registry, name: &str, args: Value) -> String {
    match call_error(registry, name, args).await {
        ToolError::Failed(message) => message,
        other => panic!("{name}: expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn tcp_reaches_a_granted_address_and_no_other_port() {
    let granted_server = Server::ok("");
    let other = Server::ok("");
    let grants = vec![with_tcp(ip(granted_server.port))];
    let registry = granted(&[guests::HOSTILE_NET_TCP], grants).await;

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
    let grants = vec![with_tcp(ip(server.port)), name("localhost", server.port)];
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

/// `grant` with raw TCP allowed too (`tcp = true`).
fn with_tcp(grant: NetGrant) -> NetGrant {
    NetGrant { tcp: true, ..grant }
}

/// One net_call: `method` (or "TCP") to `url`, as a read-only call or not.
pub(crate) fn net_call(method: &str, url: &str, read_only: bool) -> Value {
    json!({"method": method, "url": url, "read_only": read_only})
}

#[tokio::test]
async fn raw_tcp_needs_the_grant_to_opt_in() {
    let server = Server::ok("");
    let url = server.url("/");
    // Without `tcp = true` a grant is HTTP only: no raw TCP for a read-only call, nor
    // for one that is not (even to a literal address).
    let registry = granted(&[guests::HOSTILE_NET_CALL], vec![ip(server.port)]).await;
    for read_only in [true, false] {
        let message = failure(&registry, "net_call", net_call("TCP", &url, read_only)).await;
        assert!(message.starts_with("TCP "), "{message}");
    }
    assert!(server.untouched(), "{:?}", server.requests(0));

    let registry = granted(&[guests::HOSTILE_NET_CALL], vec![with_tcp(ip(server.port))]).await;
    for read_only in [true, false] {
        let text = call_ok(&registry, "net_call", net_call("TCP", &url, read_only)).await;
        assert_eq!(text, [format!("connected to 127.0.0.1:{}", server.port)]);
    }
    let seen = server.requests(2);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].head, "hello\n");
}

/// A guest that starts lookup after lookup must not hold up another call's file
/// reads. The runtime here has few blocking threads (tokio's default is 512), so that
/// lookups holding them would show at once rather than after thousands.
#[test]
fn a_resolve_loop_does_not_hold_up_file_reads() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("test folder");
        std::fs::write(dir.path().join("f.txt"), "file text").expect("test folder");
        // A name that does not resolve here: each lookup of it takes the system
        // resolver a while, and a failed lookup used to be tried again every time.
        let name = "flood.invalid";
        let flood = Grants {
            network: vec![self::name(name, 443)],
            ..Grants::default()
        };
        let flood = with_settings(
            load(guests::HOSTILE_NET_DNS_FLOOD).await,
            flood,
            Limits::default(),
        );
        let reader = Grants {
            mounts: vec![Mount {
                host: dir.path().into(),
                guest: "/data".into(),
                mode: MountMode::Read,
            }],
            ..Grants::default()
        };
        let reader = with_settings(load(plugins::READ_FILE).await, reader, Limits::default());
        let mut registry = Registry::new();
        registry.add(flood).expect("no duplicate names");
        registry.add(reader).expect("no duplicate names");

        let flooding = registry.call(
            "net_dns_flood",
            json!({"name": name, "per_round": 500, "rounds": 20}),
        );
        let reading = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let start = Instant::now();
            for _ in 0..5 {
                let text = call_ok(&registry, "read_file", json!({"path": "/data/f.txt"})).await;
                assert_eq!(text, ["file text"]);
            }
            start.elapsed()
        };
        let (flooded, took) = tokio::join!(flooding, reading);
        assert!(took < Duration::from_secs(2), "5 file reads took {took:?}");
        // Identical lookups are shared: 10 000 of them end well within the deadline.
        let report = match flooded {
            Ok(Ok(content)) => content[0].to_model_text(),
            other => panic!("the flood call: {other:?}"),
        };
        assert!(report.starts_with("started "), "{report}");
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
}

#[tokio::test]
async fn a_read_only_call_with_raw_tcp_is_not_approved_unasked() {
    let server = Server::ok("");
    let args = json!({"host": "127.0.0.1", "port": server.port});
    // HTTP only: read-only is enforced on the network, so the call is approved.
    let mut registry = granted(&[guests::HOSTILE_NET_TCP], vec![ip(server.port)]).await;
    registry.set_approver(piton_host::AllowByReadOnly::new(false));
    let message = failure(&registry, "net_tcp", args.clone()).await;
    assert!(message.contains("connect 127.0.0.1:"), "{message}");
    // With raw TCP, nothing checks what the tool sends: its read-only is only
    // declared, and a read-only approver does not let it through without asking.
    let grants = vec![with_tcp(ip(server.port))];
    let mut registry = granted(&[guests::HOSTILE_NET_TCP], grants).await;
    registry.set_approver(piton_host::AllowByReadOnly::new(false));
    let message = call_error(&registry, "net_tcp", args).await.to_string();
    assert!(message.contains("not approved"), "{message}");
    assert!(server.untouched(), "{:?}", server.requests(0));
}
