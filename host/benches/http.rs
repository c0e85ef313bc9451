//! What `piton serve --http` answers per second to 1, 16, 64 and 256 concurrent
//! kept-alive clients, each making `tools/call`s of `word_count` one after another in
//! the 2026-07-28 form (no session), and what the same clients get from one `piton
//! serve` on stdio with their requests in flight together (answers matched by id).
//!
//! Both servers are the real binary as a child process. Each level prints requests/s,
//! median and p99 of a call, the CPU each side used per call, and the load average;
//! the client is one thread (a current-thread runtime), so it can take at most one
//! core, and how much of one it took is printed beside the figures. Last, for each
//! level, the server's CPU per call over HTTP divided by its CPU per call on stdio.
//!
//! Run with: `cargo bench -p piton-host --bench http`

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::{Barrier, mpsc, oneshot};

#[path = "support/mod.rs"]
mod support;
use support::folders::Folders;
use support::{Summary, load_average, ms, record};

const TEXT: &str = "the quick brown fox jumps over the lazy dog";
/// Concurrent clients, and the calls they make in all at that level.
const LEVELS: [(usize, usize); 4] = [(1, 4000), (16, 8000), (64, 10_000), (256, 10_240)];
/// Untimed calls on a new server first: the first loads the component, the rest warm.
const WARM_UP: usize = 200;

/// CPU time (user + system, every thread, dead ones included) that process `pid` has
/// used, from `/proc` in USER_HZ ticks (100 a second on Linux); `None` elsewhere.
fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// A `piton serve` child, killed when dropped.
struct Server {
    child: Child,
}

impl Server {
    fn cpu(&self) -> Option<Duration> {
        cpu_time(&self.child.id().to_string())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `piton serve --http 127.0.0.1:0` and returns it with its address, its later
/// log passed on to this process's stderr.
fn start_http(folders: &Folders) -> (Server, SocketAddr) {
    let mut child = folders
        // Every client here is 127.0.0.1, one client to piton: give it every connection.
        .serve(&[
            "--http",
            "127.0.0.1:0",
            "--max-connections-per-client",
            "512",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("piton serve --http starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let server = Server { child };
    let mut line = String::new();
    let addr = loop {
        line.clear();
        let n = stderr.read_line(&mut line).expect("read stderr");
        assert!(n > 0, "piton serve --http exited before listening");
        if let Some(addr) = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
        {
            break addr.parse().expect("an address");
        }
        eprint!("{line}");
    };
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            eprintln!("{line}");
        }
    });
    (server, addr)
}

/// Whether a whole answer (an SSE body or a JSON-RPC line) is word_count's "9".
fn check(answer: &[u8]) {
    let text = String::from_utf8_lossy(answer);
    assert!(
        text.contains(r#""text":"9""#) && !text.contains(r#""isError":true"#),
        "not word_count's answer: {text}"
    );
}

/// One kept-alive HTTP/1.1 connection, calling as an MCP client of 2026-07-28 does.
struct HttpClient {
    addr: SocketAddr,
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    next_id: u64,
}

impl HttpClient {
    async fn connect(addr: SocketAddr) -> Self {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("HTTP handshake");
        tokio::spawn(connection);
        Self {
            addr,
            sender,
            next_id: 0,
        }
    }

    /// One tools/call, its whole answer read, as a proxy or an ordinary client reads it.
    async fn word_count(&mut self) {
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
        "params": {"name": "word_count", "arguments": {"text": TEXT}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }}});
        let request = http::Request::post("/mcp")
            .header("host", self.addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "word_count")
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("a request");
        self.sender.ready().await.expect("the connection is open");
        let response = self.sender.send_request(request).await.expect("an answer");
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.expect("the body");
        check(&body.to_bytes());
    }
}

/// One `piton serve` on stdio, shared by every client: requests are written as lines
/// by one task and answers handed back by id by another.
struct StdioClient {
    lines: mpsc::UnboundedSender<String>,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl StdioClient {
    /// Starts the server, initializes the session and returns the client with it.
    async fn start(folders: &Folders) -> (Arc<Self>, Server) {
        let mut child = folders
            .serve(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("piton serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let server = Server { child };
        let mut stdin = tokio::process::ChildStdin::from_std(stdin).expect("a pipe");
        let stdout = tokio::process::ChildStdout::from_std(stdout).expect("a pipe");
        let (lines, mut to_send) = mpsc::unbounded_channel::<String>();
        // Lines that queued up meanwhile go out in one write, as a busy client's would.
        tokio::spawn(async move {
            let mut batch = String::new();
            while let Some(line) = to_send.recv().await {
                batch.clear();
                batch.push_str(&line);
                while let Ok(line) = to_send.try_recv() {
                    batch.push_str(&line);
                }
                if stdin.write_all(batch.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        let waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>> = Arc::default();
        let answers = waiting.clone();
        tokio::spawn(async move {
            #[derive(serde::Deserialize)]
            struct Id {
                id: Option<u64>,
            }
            let mut stdout = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = stdout.next_line().await {
                let Ok(Id { id: Some(id) }) = serde_json::from_str::<Id>(&line) else {
                    continue;
                };
                let waiter = answers.lock().expect("lock").remove(&id);
                if let Some(waiter) = waiter {
                    let _ = waiter.send(line);
                }
            }
        });
        let client = Arc::new(Self {
            lines,
            waiting,
            next_id: 0.into(),
        });
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "piton-bench", "version": "0"}});
        client.request("initialize", init).await;
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (client, server)
    }

    fn send(&self, message: serde_json::Value) {
        self.lines
            .send(format!("{message}\n"))
            .expect("the writer runs");
    }

    async fn request(&self, method: &str, params: serde_json::Value) -> String {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        self.waiting.lock().expect("lock").insert(id, answer);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        answered.await.expect("piton serve answers")
    }

    async fn word_count(&self) {
        let answer = self
            .request(
                "tools/call",
                json!({"name": "word_count", "arguments": {"text": TEXT}}),
            )
            .await;
        check(answer.as_bytes());
    }
}

/// A client that makes one call at a time.
trait Caller: Send + 'static {
    fn call(&mut self) -> impl std::future::Future<Output = ()> + Send;
}

impl Caller for HttpClient {
    async fn call(&mut self) {
        self.word_count().await;
    }
}

impl Caller for Arc<StdioClient> {
    async fn call(&mut self) {
        StdioClient::word_count(self).await;
    }
}

/// What one level measured.
struct Level {
    wall: Duration,
    calls: Summary,
    client_cpu: Option<Duration>,
    server_cpu: Option<Duration>,
}

/// Runs `clients` tasks of `each` sequential calls, all starting
/// together, and times them.
async fn run_level<C: Caller>(clients: Vec<C>, each: usize, server: &Server) -> Level {
    let start = Arc::new(Barrier::new(clients.len() + 1));
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let start = start.clone();
            tokio::spawn(async move {
                start.wait().await;
                let mut times = Vec::with_capacity(each);
                for _ in 0..each {
                    let t = Instant::now();
                    client.call().await;
                    times.push(t.elapsed());
                }
                times
            })
        })
        .collect();
    let (client_before, server_before) = (cpu_time("self"), server.cpu());
    start.wait().await;
    let began = Instant::now();
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.expect("a client"));
    }
    let wall = began.elapsed();
    let (client_after, server_after) = (cpu_time("self"), server.cpu());
    Level {
        wall,
        calls: Summary::of(samples),
        client_cpu: client_after
            .zip(client_before)
            .map(|(a, b)| a.saturating_sub(b)),
        server_cpu: server_after
            .zip(server_before)
            .map(|(a, b)| a.saturating_sub(b)),
    }
}

/// Prints and records one level's figures under `{key}_c{clients}_*`: calls/s,
/// median, p99, and the server's CPU per call, which it returns (µs).
fn report(key: &str, label: &str, clients: usize, level: &Level, load_before: &str) -> Option<f64> {
    let n = level.calls.len();
    let rps = n as f64 / level.wall.as_secs_f64();
    let share = |cpu: Option<Duration>| {
        cpu.map_or("unknown".into(), |cpu| {
            format!(
                "{:.0}%",
                100.0 * cpu.as_secs_f64() / level.wall.as_secs_f64()
            )
        })
    };
    let per_call = |cpu: Option<Duration>| {
        cpu.map_or("unknown".into(), |cpu| {
            format!("{:.1} µs", cpu.as_secs_f64() * 1e6 / n as f64)
        })
    };
    println!(
        "{label}, {clients} clients: {n} calls in {:.2} s: {rps:.0} calls/s; median {:.3} ms, \
         p99 {:.3} ms; CPU per call: server {}, client {}; CPU of one core: server {}, \
         client {}; load average before {load_before}, after {}",
        level.wall.as_secs_f64(),
        ms(level.calls.median()),
        ms(level.calls.p99()),
        per_call(level.server_cpu),
        per_call(level.client_cpu),
        share(level.server_cpu),
        share(level.client_cpu),
        load_average(),
    );
    record("http", &format!("{key}_c{clients}_rps"), rps, "calls/s");
    record(
        "http",
        &format!("{key}_c{clients}_median"),
        ms(level.calls.median()),
        "ms",
    );
    record(
        "http",
        &format!("{key}_c{clients}_p99"),
        ms(level.calls.p99()),
        "ms",
    );
    let us = level
        .server_cpu
        .map(|cpu| cpu.as_secs_f64() * 1e6 / n as f64);
    if let Some(us) = us {
        record("http", &format!("{key}_c{clients}_server_cpu"), us, "µs");
    }
    us
}

/// Prints and records, per level, the server's CPU per call over HTTP against its CPU
/// per call on stdio (issue 24's target: at most 1.5x) under `cpu_ratio_c{clients}`.
fn compare(http: &[Option<f64>], stdio: &[Option<f64>]) {
    for ((clients, _), (http, stdio)) in LEVELS.iter().zip(http.iter().zip(stdio)) {
        let (Some(http), Some(stdio)) = (http, stdio) else {
            println!("server CPU per call, {clients} clients: not measured (no /proc)");
            continue;
        };
        let ratio = http / stdio;
        println!(
            "server CPU per call, {clients} clients: serve --http {http:.1} µs, stdio \
             {stdio:.1} µs: {ratio:.2}x (target ≤ 1.5x); load average {}",
            load_average()
        );
        record("http", &format!("cpu_ratio_c{clients}"), ratio, "x");
    }
}

fn main() {
    let folders = Folders::new();
    // One thread for all the clients: their CPU is bounded by one core and measured,
    // and they leave the other core to the server.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    println!(
        "{} CPUs; load average at start {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    rt.block_on(async {
        let (server, addr) = start_http(&folders);
        let mut warm = HttpClient::connect(addr).await;
        for _ in 0..WARM_UP {
            warm.word_count().await;
        }
        drop(warm);
        let mut http_cpu = Vec::with_capacity(LEVELS.len());
        for (clients, total) in LEVELS {
            let each = total.div_ceil(clients);
            let mut connected = Vec::with_capacity(clients);
            for _ in 0..clients {
                connected.push(HttpClient::connect(addr).await);
            }
            let load = load_average();
            let level = run_level(connected, each, &server).await;
            http_cpu.push(report(
                "http",
                "serve --http, kept-alive connections",
                clients,
                &level,
                &load,
            ));
        }
        drop(server);

        let (client, server) = StdioClient::start(&folders).await;
        for _ in 0..WARM_UP {
            client.word_count().await;
        }
        let mut stdio_cpu = Vec::with_capacity(LEVELS.len());
        for (clients, total) in LEVELS {
            let each = total.div_ceil(clients);
            let load = load_average();
            let level = run_level(vec![client.clone(); clients], each, &server).await;
            stdio_cpu.push(report(
                "stdio",
                "serve on stdio, requests in flight together",
                clients,
                &level,
                &load,
            ));
        }
        drop(server);
        compare(&http_cpu, &stdio_cpu);
    });
}
