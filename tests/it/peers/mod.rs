//! Real MCP peers against the real `piton` binary: the official Python SDK as a client
//! (and as a server for upstream tests), the MCP Inspector's CLI, and the conformance
//! suite. They are installed from the registries by `tests/peers/install` into
//! `target/peers`, once per test process; a machine without node, npm or python3
//! fails these tests with what to install.

mod code;
mod conformance;
mod consent;
mod consent_rounds;
mod inspector;
mod python_sdk;
mod upstream_asks;
mod upstream_rounds;
mod upstreams;

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{cache_dir, piton};

/// How long `piton serve --http` may take to say where it listens (cold compile cache).
const LISTEN: Duration = Duration::from_secs(120);

/// How long installing the peers may take (a cold npm and pip cache: about 30 s here).
const INSTALL: Duration = Duration::from_secs(900);

/// How long one peer run may take: a client session, an Inspector call, the whole
/// conformance suite (about 2 s here).
pub(crate) const PEER_RUN: Duration = Duration::from_secs(300);

/// The installed peers: `target/peers`.
pub(crate) struct Peers {
    dir: PathBuf,
}

/// The peers, installed (or found up to date) by `tests/peers/install` once per test
/// process; the script's own lock keeps parallel test processes from racing.
pub(crate) fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(|| {
        let dir = target_dir().join("peers");
        let script = repo_root().join("tests/peers/install");
        let started = Instant::now();
        let out = run_within(
            Command::new("bash").arg(&script).arg(&dir),
            INSTALL,
            &format!("bash {}", script.display()),
        );
        assert!(
            out.status.success(),
            "{} failed ({}): the MCP peer tests need node, npm and python3 with venv \
             (Debian: apt-get install nodejs npm python3-venv) and the npm and PyPI \
             registries.\n{}{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout),
        );
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        eprintln!("peers ready in {:.1?}", started.elapsed());
        Peers { dir }
    })
}

impl Peers {
    /// The install folder (`target/peers`).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The venv's Python, with the MCP Python SDK.
    pub(crate) fn python(&self) -> PathBuf {
        self.dir.join("venv/bin/python")
    }

    /// An npm-installed command (`conformance`, `mcp-inspector`, ...) run by the
    /// pinned Node 22, whose `bin` folder comes first on PATH.
    pub(crate) fn npm_bin(&self, name: &str) -> Command {
        let bin = self.dir.join("node_modules/.bin");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let path =
            std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(&path)))
                .expect("PATH joins");
        let mut cmd = Command::new(bin.join(name));
        cmd.env("PATH", path);
        cmd
    }
}

/// The repository's root folder.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

/// Cargo's target folder (the parent of CARGO_TARGET_TMPDIR).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target tmp folder has a parent")
        .to_path_buf()
}

/// A file under tests/peers.
pub(crate) fn peers_file(name: &str) -> PathBuf {
    repo_root().join("tests/peers").join(name)
}

/// The `piton` binary the tests run.
pub(crate) fn piton_bin() -> &'static str {
    env!("CARGO_BIN_EXE_piton")
}

/// Where `tests/peers/client.py` connects.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// Streamable HTTP at this URL.
    Url(&'a str),
    /// A server started over stdio with this command line.
    Stdio(&'a [&'a OsStr]),
}

/// Runs `tests/peers/client.py` (the official Python SDK's `mcp.Client`) in `mode`
/// ("auto" or "legacy") against `target`, makes `calls`, and returns its JSON report:
/// `{"protocol_version", "server_info", "tools": [...], "calls": [{"result"} | {"error"}]}`.
pub(crate) fn sdk_client(target: Target<'_>, mode: &str, calls: &[(&str, Value)]) -> Value {
    sdk_client_with(target, mode, calls, &[])
}

/// [`sdk_client`] with more of client.py's options (`--elicit ANSWER`, `--round …`),
/// given before the target.
pub(crate) fn sdk_client_with(
    target: Target<'_>,
    mode: &str,
    calls: &[(&str, Value)],
    options: &[&str],
) -> Value {
    let mut cmd = Command::new(peers().python());
    cmd.arg(peers_file("client.py"))
        .args(["--mode", mode])
        .args(options)
        .env("PITON_CACHE_DIR", cache_dir())
        .env_remove("PITON_PLUGINS")
        .env_remove("PITON_CONFIG");
    for (name, args) in calls {
        cmd.arg("--call").arg(name).arg(args.to_string());
    }
    match target {
        Target::Url(url) => cmd.args(["--url", url]),
        Target::Stdio(command) => cmd.arg("--").args(command),
    };
    let out = output(&mut cmd, "the Python SDK client");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the client's report is JSON: {e}\nstdout: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Runs `cmd` (stdin closed) to its end and returns its output; kills it and panics,
/// showing what it wrote, when it runs longer than `limit`.
pub(crate) fn run_within(cmd: &mut Command, limit: Duration, what: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} starts: {e}"));
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait().expect("wait for a child") {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{what} ran longer than {limit:?} and was killed\nstdout: {}\nstderr: {}",
                    String::from_utf8_lossy(&stdout.join().unwrap_or_default()),
                    String::from_utf8_lossy(&stderr.join().unwrap_or_default()),
                );
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Runs `cmd` within [`PEER_RUN`] and expects success; the panic shows both streams.
pub(crate) fn output(cmd: &mut Command, what: &str) -> Output {
    let out = run_within(cmd, PEER_RUN, what);
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    out
}

/// The tool named `name` in a report's listing.
pub(crate) fn listed<'r>(report: &'r Value, name: &str) -> &'r Value {
    report["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == name))
        .unwrap_or_else(|| panic!("{name} is listed: {report:#}"))
}

/// The names a report lists, in order.
pub(crate) fn listed_names(report: &Value) -> Vec<&str> {
    report["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default()
}

/// The result of the `index`th call in a report (which must not be a JSON-RPC error).
pub(crate) fn call_result(report: &Value, index: usize) -> &Value {
    let call = &report["calls"][index];
    assert!(
        call.get("result").is_some(),
        "call {index} has a result: {report:#}"
    );
    &call["result"]
}

/// The text of a result's only content block.
pub(crate) fn only_text(result: &Value) -> &str {
    match result["content"].as_array().map(Vec::as_slice) {
        Some([block]) if block["type"] == "text" => block["text"].as_str().unwrap_or_default(),
        _ => panic!("one text block: {result:#}"),
    }
}

/// `piton serve --http 127.0.0.1:0`, killed on drop.
pub(crate) struct HttpServer {
    child: Child,
    /// The endpoint it printed: `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
    log: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Serves the plugins in `plugins` on a free loopback port, read from the line
    /// `listening on URL` on stderr.
    pub(crate) fn start(plugins: &Path) -> Self {
        let mut command = piton();
        // Nobody is asked before a call here: consent has its own tests (consent.rs).
        command
            .args([
                "serve",
                "--approve",
                "never",
                "--http",
                "127.0.0.1:0",
                "--plugins",
            ])
            .arg(plugins);
        Self::start_command(command)
    }

    /// Runs `command`, a `piton serve --http 127.0.0.1:0 …`, and waits for the line
    /// `listening on URL` on its stderr.
    pub(crate) fn start_command(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("piton serve --http starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let lines = Arc::clone(&log);
        // Read stderr to its end, so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.trim().to_owned());
                }
                let mut log = lines.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        match rx.recv_timeout(LISTEN) {
            Ok(url) => Self { child, url, log },
            Err(e) => {
                let _ = child.kill();
                let status = child.wait();
                panic!(
                    "piton serve --http printed no `listening on URL` ({e}); it ended with \
                     {status:?}; stderr:\n{}",
                    log.lock().unwrap_or_else(|e| e.into_inner())
                );
            }
        }
    }

    /// What the server wrote to stderr so far.
    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64 with padding (RFC 4648), for comparing image data on the wire.
pub(crate) fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
