//! Replicas behind a real load balancer: two `piton serve --http` on one plugins
//! folder behind haproxy (Debian's, started here with a generated config). Clients of
//! the 2026-07-28 revision need no affinity: 10 000 calls from 64 clients, one
//! replica killed (SIGKILL) and restarted mid-run, every call answered once or failed
//! with an error a client can retry. Clients of 2025-11-25 keep a session on one
//! replica: haproxy sticks each `Mcp-Session-Id` to the replica that made it.
//!
//! haproxy is in tests/packages.txt: a missing haproxy fails the tests, unless
//! `PITON_SKIP=haproxy` asks to skip them.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use piton_tests::guests;
use serde_json::{Value, json};

use crate::mcp_client::{
    HttpSession, body_text, call_params, initialize_params, initialized, post, request, sse_answer,
    stateless_call,
};
use crate::support::{ANSWER, Running, plugins_folder, serve_http_with};

/// The calls of the load test, and the clients that make them at once.
const CALLS: u64 = 10_000;
const CLIENTS: usize = 64;

/// A test tool that answers with its arguments: each call's own `name` comes back.
const ECHO: &str = "json_schema_2020_12_tool";

/// haproxy, or `None` when it is missing and `PITON_SKIP` names it (else the test
/// fails, saying how to install it).
pub(crate) fn haproxy() -> Option<&'static str> {
    piton_tests::requirements::require("haproxy").then_some("haproxy")
}

/// A port free now, for haproxy to listen on.
pub(crate) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

/// haproxy's config: round robin over `replicas`, or with `sticky` each
/// `Mcp-Session-Id` kept on the replica that answered with it.
fn config(port: u16, replicas: &[SocketAddr], sticky: bool) -> String {
    let mut config = format!(
        "global
    maxconn 4096

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout check 1s
    # A connection refused (a replica gone) is tried again, on the other replica.
    retries 3
    option redispatch 1

frontend mcp
    bind 127.0.0.1:{port}
    default_backend piton

backend piton
    balance roundrobin
    # Which replica answered, for the tests' counts.
    http-response set-header X-Replica %s
    # In rotation while /readyz says ready (a stopping replica says 503 and leaves it
    # before it closes), asked with the Host the replicas allow: the balancer's own.
    option httpchk
    http-check send meth GET uri /readyz hdr Host 127.0.0.1:{port}
    default-server check inter 100ms fall 1 rise 1
"
    );
    if sticky {
        config.push_str(
            "    # 2025-11-25 sessions live in one replica: keep each on the replica that
    # made it (its answer to initialize carries the id).
    stick-table type string len 128 size 100k expire 30m
    stick store-response res.hdr(mcp-session-id)
    stick match req.hdr(mcp-session-id)
",
        );
    }
    for (index, replica) in replicas.iter().enumerate() {
        config.push_str(&format!("    server r{index} {replica}\n"));
    }
    config
}

/// haproxy running with a generated config, killed when dropped.
pub(crate) struct Haproxy {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Starts `binary` on `port` in front of `replicas`; returns once it accepts.
    pub(crate) fn start(binary: &str, port: u16, replicas: &[SocketAddr], sticky: bool) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("haproxy.cfg");
        std::fs::write(&file, config(port, replicas, sticky)).expect("write the config");
        let child = Command::new(binary)
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy starts");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + ANSWER;
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "haproxy does not listen on {addr}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two replicas on one plugins folder holding the echo tool, each answering the
/// load balancer's address as its own (`--allow-host`).
fn replicas(
    folder: &std::path::Path,
    lb_port: u16,
) -> (Vec<Running>, Vec<SocketAddr>, Vec<String>) {
    let flags = vec!["--allow-host".to_owned(), format!("127.0.0.1:{lb_port}")];
    let mut running = Vec::new();
    let mut addrs = Vec::new();
    for _ in 0..2 {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (piton, addr) = serve_http_with("127.0.0.1:0", Some(folder), &flags);
        running.push(piton);
        addrs.push(addr);
    }
    (running, addrs, flags)
}

/// How one call ended.
enum Ended {
    /// Answered with its own echo, by this replica.
    Answered(String),
    /// Failed in a way a client retries: the load balancer's 502/503/504, or the
    /// connection reset or closed before the answer.
    Retryable(String),
    /// Anything else: a wrong or missing answer.
    Other(String),
}

/// One kept-alive connection to the load balancer, made again when lost.
struct Client {
    lb: SocketAddr,
    connection: Option<SendRequest<Full<Bytes>>>,
}

impl Client {
    /// A new connection to the load balancer, or why not.
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let stream = tokio::net::TcpStream::connect(self.lb)
            .await
            .map_err(|e| format!("connect: {:?}", e.kind()))?;
        let io = hyper_util::rt::TokioIo::new(stream);
        let (sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(connection);
        Ok(sender)
    }

    /// Call `n`: the echo tool with `call-n`, over 2026-07-28 (no session).
    async fn call(&mut self, n: u64) -> Ended {
        let alive = match self.connection.as_mut() {
            Some(sender) => sender.ready().await.is_ok(),
            None => false,
        };
        if !alive {
            match self.connect().await {
                Ok(sender) => self.connection = Some(sender),
                Err(why) => {
                    self.connection = None;
                    return Ended::Retryable(why);
                }
            }
        }
        let Some(sender) = self.connection.as_mut() else {
            return Ended::Other(format!("call {n}: no connection"));
        };
        let request = stateless_call(self.lb, n, ECHO, json!({"name": format!("call-{n}")}));
        let response = match tokio::time::timeout(ANSWER, sender.send_request(request)).await {
            Err(_) => return Ended::Other(format!("call {n}: no answer within {ANSWER:?}")),
            Ok(Err(e)) => {
                self.connection = None;
                return Ended::Retryable(format!("connection lost: {}", kind(&e)));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        let replica = response
            .headers()
            .get("x-replica")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("?")
            .to_owned();
        if matches!(status, 502..=504) {
            return Ended::Retryable(format!("HTTP {status} from haproxy"));
        }
        let body = match body(response).await {
            Ok(body) => body,
            Err(e) => {
                self.connection = None;
                return Ended::Retryable(format!("answer cut: {e}"));
            }
        };
        if status != 200 {
            return Ended::Other(format!("call {n}: HTTP {status}: {body:.300}"));
        }
        let Some(answer) = sse_answer(&body, n) else {
            return Ended::Other(format!("call {n}: no answer in {body:.300}"));
        };
        let echoed = answer["result"]["content"][0]["text"]
            .as_str()
            .and_then(|text| serde_json::from_str::<Value>(text).ok());
        match echoed {
            Some(echo) if echo["name"] == format!("call-{n}") => Ended::Answered(replica),
            _ => Ended::Other(format!("call {n}: not its echo: {answer}")),
        }
    }
}

/// What kind of failure a hyper client error is, in a word.
fn kind(error: &hyper::Error) -> &'static str {
    if error.is_incomplete_message() {
        "closed before the answer"
    } else if error.is_canceled() {
        "canceled"
    } else {
        "reset"
    }
}

/// The whole body, or why it could not be read.
async fn body(response: http::Response<hyper::body::Incoming>) -> Result<String, String> {
    use http_body_util::BodyExt as _;
    match tokio::time::timeout(ANSWER, response.into_body().collect()).await {
        Ok(Ok(body)) => Ok(String::from_utf8_lossy(&body.to_bytes()).into_owned()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no body within {ANSWER:?}")),
    }
}

/// The counts of the load test.
#[derive(Default)]
struct Tally {
    answered: u64,
    by_replica: BTreeMap<String, u64>,
    retryable: BTreeMap<String, u64>,
    retry_ids: Vec<u64>,
    other: Vec<String>,
    seen: HashSet<u64>,
    twice: u64,
}

impl Tally {
    fn record(&mut self, n: u64, ended: Ended) {
        match ended {
            Ended::Answered(replica) => {
                self.answered += 1;
                *self.by_replica.entry(replica).or_default() += 1;
                if !self.seen.insert(n) {
                    self.twice += 1;
                }
            }
            Ended::Retryable(why) => {
                *self.retryable.entry(why).or_default() += 1;
                self.retry_ids.push(n);
            }
            Ended::Other(why) => self.other.push(why),
        }
    }

    fn failed(&self) -> u64 {
        self.retryable.values().sum()
    }
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(piton_skip = "haproxy", ignore = "PITON_SKIP names haproxy")]
async fn replicas_behind_haproxy_answer_10_000_calls_from_64_clients_through_a_kill_and_restart() {
    let Some(binary) = haproxy() else { return };
    let folder = plugins_folder(&[("echo.wasm", guests::CONFORMANCE_JSON_SCHEMA)]);
    let lb_port = free_port();
    let (mut running, addrs, flags) = replicas(folder.path(), lb_port);
    let lb = Haproxy::start(binary, lb_port, &addrs, false);

    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (next, done, tally) = (next.clone(), done.clone(), tally.clone());
            let mut client = Client {
                lb: lb.addr,
                connection: None,
            };
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= CALLS {
                        return;
                    }
                    let ended = client.call(n).await;
                    tally.lock().expect("tally").record(n, ended);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    // A third of the way in, replica 0 is killed outright and started again on its
    // address, while the clients go on.
    while done.load(Ordering::Relaxed) < CALLS / 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    running[0].signal("KILL");
    assert_eq!(running[0].exit_code(), None, "killed by a signal");
    let killed_at = done.load(Ordering::Relaxed);
    let addr = addrs[0].to_string();
    let folder_path = folder.path().to_path_buf();
    let (restarted, again) = tokio::task::spawn_blocking(move || {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        serve_http_with(&addr, Some(folder_path.as_path()), &flags)
    })
    .await
    .expect("the restart");
    assert_eq!(again, addrs[0]);
    running[0] = restarted;
    let restarted_at = done.load(Ordering::Relaxed);

    for client in clients {
        client.await.expect("a client task");
    }
    let elapsed = started.elapsed();
    let mut tally = std::mem::take(&mut *tally.lock().expect("tally"));

    // A client retries what failed retryably: each must then be answered.
    let mut client = Client {
        lb: lb.addr,
        connection: None,
    };
    let retry_ids = std::mem::take(&mut tally.retry_ids);
    let mut retried = Tally::default();
    for &n in &retry_ids {
        let ended = client.call(n).await;
        retried.record(n, ended);
    }

    println!(
        "load test through haproxy: {CALLS} calls from {CLIENTS} clients in {:.1} s; \
         replica r0 killed after {killed_at} calls and listening again after {restarted_at}; \
         answered {}, failed retryably {} {:?}, other {}; answered by replica {:?}; \
         the {} retried: answered {}, other {}",
        elapsed.as_secs_f64(),
        tally.answered,
        tally.failed(),
        tally.retryable,
        tally.other.len(),
        tally.by_replica,
        retry_ids.len(),
        retried.answered,
        retried.other.len() + usize::try_from(retried.failed()).unwrap_or(usize::MAX),
    );
    assert!(
        tally.other.is_empty(),
        "{:?}",
        &tally.other[..tally.other.len().min(10)]
    );
    assert_eq!(tally.answered + tally.failed(), CALLS, "a call was lost");
    assert_eq!(tally.twice, 0, "a call was answered twice");
    assert_eq!(tally.seen.len() as u64, tally.answered);
    assert_eq!(
        tally.by_replica.len(),
        2,
        "both replicas answered: {:?}",
        tally.by_replica
    );
    assert_eq!(
        retried.answered,
        retry_ids.len() as u64,
        "{:?}",
        retried.other
    );
    assert!(
        tally.seen.is_disjoint(&retried.seen),
        "a retried call had been answered"
    );

    // The restarted replica is back in the rotation.
    let deadline = Instant::now() + ANSWER;
    let mut n = CALLS;
    loop {
        n += 1;
        if let Ended::Answered(replica) = client.call(n).await
            && replica == "r0"
        {
            break;
        }
        assert!(Instant::now() < deadline, "replica r0 never answered again");
    }
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(piton_skip = "haproxy", ignore = "PITON_SKIP names haproxy")]
async fn sessions_of_2025_clients_stick_to_their_replica_behind_haproxy() {
    let Some(binary) = haproxy() else { return };
    let folder = plugins_folder(&[("echo.wasm", guests::CONFORMANCE_JSON_SCHEMA)]);
    let lb_port = free_port();
    let (_running, addrs, _flags) = replicas(folder.path(), lb_port);
    let lb = Haproxy::start(binary, lb_port, &addrs, true);

    // Sessions are made round robin, so both replicas hold some; each session's
    // calls must reach the replica that holds it (another answers 404).
    let sessions: Vec<_> = (0..8u64)
        .map(|s| {
            let lb = lb.addr;
            tokio::spawn(async move {
                let (mut session, answer) = HttpSession::start(lb).await;
                assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
                for call in 1..=10u64 {
                    let name = format!("session-{s}-call-{call}");
                    let answer = session
                        .request(call, "tools/call", call_params(ECHO, json!({"name": name})))
                        .await;
                    let text = answer["result"]["content"][0]["text"]
                        .as_str()
                        .unwrap_or_default();
                    assert!(text.contains(&name), "{answer}");
                }
            })
        })
        .collect();
    for session in sessions {
        session
            .await
            .expect("every call of every session is answered");
    }
    // Without the stick table the same session would not hold: round robin sends
    // its next request to the other replica, which does not know it.
    drop(lb);
    let lb = Haproxy::start(binary, lb_port, &addrs, false);
    let initialize = request(0, "initialize", initialize_params());
    let response = post(lb.addr, None, &initialize).await;
    assert_eq!(response.status(), 200);
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .expect("a session id")
        .to_owned();
    let _ = body_text(response).await;
    let mut statuses = Vec::new();
    for message in [initialized(), request(1, "tools/list", json!({}))] {
        let response = post(lb.addr, Some(&id), &message).await;
        statuses.push(response.status().as_u16());
        let _ = body_text(response).await;
    }
    assert!(statuses.contains(&404), "{statuses:?}");
}
