//! Helpers that make each test read like the behaviour it checks: the tests' runtime
//! and registries, and the `piton` binary run to completion or kept running.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use piton_host::config::ToolConfig;
use piton_host::grants::Grants;
use piton_host::wasm::{LoadFrom, RuntimeConfig, WasmRuntime, WasmTool};
use piton_host::{CallError, Content, Limits, Registry, ToolResult};
use serde_json::{Value, json};

/// How long one answer may take, compile cache misses included.
pub(crate) const ANSWER: Duration = Duration::from_secs(60);

/// One runtime (one engine, one instance pool) for the whole test process.
pub(crate) fn runtime() -> &'static WasmRuntime {
    static RUNTIME: OnceLock<WasmRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        WasmRuntime::new(RuntimeConfig {
            cache_dir: Some(cache_dir()),
            // Every component is made ahead, Rust guests too: the tests of instances
            // made ahead (ready.rs) use quick ones.
            made_ahead_above: Duration::ZERO,
            ..RuntimeConfig::default()
        })
        .expect("the runtime starts")
    })
}

/// The compile cache the tests share, inside the target folder.
pub(crate) fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("piton-cache")
}

/// Loads the component at `path` as a tool.
pub(crate) async fn load(path: &str) -> WasmTool {
    let tools = runtime()
        .load(LoadFrom::File(path.into()), None)
        .await
        .unwrap_or_else(|e| panic!("{path} loads: {e}"));
    only(tools)
}

/// The one tool of a component that is one tool.
pub(crate) fn only(mut tools: Vec<WasmTool>) -> WasmTool {
    assert_eq!(tools.len(), 1, "one tool: {tools:?}");
    tools.remove(0)
}

/// A registry of the given components, each with `limits`.
pub(crate) async fn registry_of(paths: &[&str], limits: Limits) -> Registry {
    let mut registry = Registry::new();
    for path in paths {
        let tool = with_settings(load(path).await, Grants::default(), limits);
        registry.add(tool).expect("no duplicate names");
    }
    registry
}

/// `host` granted for writing, seen by the guest as `/data`.
pub(crate) fn write_grant(host: &std::path::Path) -> Grants {
    Grants {
        mounts: vec![piton_host::grants::Mount {
            host: host.into(),
            guest: "/data".into(),
            mode: piton_host::grants::MountMode::Write,
        }],
        ..Default::default()
    }
}

/// `tool` with `grants` and `limits`, as piton.toml's `[tools.NAME]` gives them at load.
pub(crate) fn with_settings(tool: WasmTool, grants: Grants, limits: Limits) -> WasmTool {
    let settings = ToolConfig {
        grants,
        limits,
        ..ToolConfig::default()
    };
    tool.configured(&settings).expect("the settings apply")
}

/// Calls `name` and expects content; returns the model text of each block.
pub(crate) async fn call_ok(registry: &Registry, name: &str, args: Value) -> Vec<String> {
    match registry.call(name, args).await {
        Ok(Ok(content)) => content.iter().map(Content::to_model_text).collect(),
        other => panic!("{name}: expected content, got {other:?}"),
    }
}

/// Calls `name` and expects the call to stop the run; returns the error's text.
pub(crate) async fn call_stops(registry: &Registry, name: &str, args: Value) -> String {
    match registry.call(name, args).await {
        Err(error @ CallError::Trap { .. }) => error.to_string(),
        other => panic!("{name}: expected a trap, got {other:?}"),
    }
}

/// Calls `name` and expects an error result.
pub(crate) async fn call_error(
    registry: &Registry,
    name: &str,
    args: Value,
) -> piton_host::ToolError {
    match registry.call(name, args).await {
        Ok(Err(error)) => error,
        other => panic!("{name}: expected an error result, got {other:?}"),
    }
}

/// The host still works after whatever the last guest did: a fresh word_count call.
pub(crate) async fn assert_host_alive() {
    let registry = registry_of(&[piton_tests::guests::HOSTILE_COUNTER], Limits::default()).await;
    assert_eq!(call_ok(&registry, "counter", json!({})).await, ["1"]);
}

/// The result of one call, for assertions that need its shape.
pub(crate) fn texts(result: &ToolResult) -> Vec<String> {
    result
        .as_ref()
        .map(|c| c.iter().map(Content::to_model_text).collect())
        .unwrap_or_default()
}

/// The `piton` CLI, with the tests' compile cache and no plugins folder from the
/// environment, run in an empty folder so `./plugins` does not apply.
pub(crate) fn piton() -> Command {
    static EMPTY: OnceLock<PathBuf> = OnceLock::new();
    let cwd = EMPTY.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("empty-cwd");
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    });
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_piton"));
    cmd.current_dir(cwd)
        .env("PITON_CACHE_DIR", cache_dir())
        .env_remove("PITON_PLUGINS")
        .env_remove("PITON_LOG")
        .stdin(Stdio::null());
    cmd
}

/// Runs the CLI and returns its output.
pub(crate) fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("piton runs")
}

/// stdout as text.
pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr as text.
pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A temporary plugins folder holding copies of `files` under the given names.
pub(crate) fn plugins_folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, source) in files {
        std::fs::copy(source, dir.path().join(name)).expect("copy a component");
    }
    dir
}

/// Runs `piton ARGS` with stdout and stderr on a pseudo-terminal (python3's `os.openpty`,
/// 120 columns wide), as a user at a terminal sees it; returns what the terminal got.
pub(crate) fn run_in_terminal(args: &[&std::ffi::OsStr]) -> Output {
    run_in_terminal_with(args, &[])
}

/// [`run_in_terminal`] with these environment variables set besides [`piton`]'s.
pub(crate) fn run_in_terminal_with(
    args: &[&std::ffi::OsStr],
    env: &[(&str, &std::ffi::OsStr)],
) -> Output {
    // With $ANSWER set, stdin is the terminal too, and the answer is typed when a
    // question ending in "[y/N]" shows.
    const SCRIPT: &str = r#"
import os, subprocess, sys, termios
answer = os.environ.get("ANSWER")
master, slave = os.openpty()
termios.tcsetwinsize(slave, (40, 120))
stdin = slave if answer is not None else subprocess.DEVNULL
child = subprocess.Popen(sys.argv[1:], stdin=stdin, stdout=slave, stderr=slave)
os.close(slave)
out = b""
while True:
    try:
        data = os.read(master, 65536)
    except OSError:
        break
    if not data:
        break
    out += data
    if answer is not None and out.rstrip().endswith(b"[y/N]"):
        os.write(master, answer.encode() + b"\n")
sys.stdout.buffer.write(out)
sys.exit(child.wait())
"#;
    let mut cmd = python_running_piton(SCRIPT, args);
    cmd.stdin(Stdio::null()).envs(env.iter().copied());
    run(&mut cmd)
}

/// `python3 -c SCRIPT piton ARGS`, with the folder and environment [`piton`] gives:
/// the script runs the command in its `sys.argv[1:]`.
pub(crate) fn python_running_piton(script: &str, args: &[&std::ffi::OsStr]) -> Command {
    let plain = piton();
    let mut cmd = Command::new("python3");
    cmd.arg("-c")
        .arg(script)
        .arg(plain.get_program())
        .args(args);
    if let Some(dir) = plain.get_current_dir() {
        cmd.current_dir(dir);
    }
    for (key, value) in plain.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd
}

/// A child's stderr, drained by a thread so that the child never blocks on it.
pub(crate) struct Stderr {
    lines: std::sync::mpsc::Receiver<String>,
    all: Arc<std::sync::Mutex<String>>,
}

impl Stderr {
    /// Reads `stderr` on a thread of its own.
    fn drain(stderr: std::process::ChildStderr) -> Self {
        let (send, lines) = std::sync::mpsc::channel();
        let all = Arc::new(std::sync::Mutex::new(String::new()));
        let sink = all.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock()
                    .expect("stderr lock")
                    .push_str(&format!("{line}\n"));
                let _ = send.send(line);
            }
        });
        Self { lines, all }
    }

    /// The first line from now on that contains `needle`.
    pub(crate) fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + ANSWER;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("no `{needle}` on stderr ({e}); it says:\n{}", self.text()),
            }
        }
    }

    pub(crate) fn text(&self) -> String {
        self.all.lock().expect("stderr lock").clone()
    }
}

/// A running `piton`, killed if the test ends before it exits.
pub(crate) struct Running {
    child: std::process::Child,
    pub(crate) stderr: Stderr,
}

impl Running {
    /// Holds `child`, draining its stderr (which must be piped).
    pub(crate) fn new(mut child: std::process::Child) -> Self {
        let stderr = Stderr::drain(child.stderr.take().expect("stderr"));
        Self { child, stderr }
    }

    /// Waits for the process to exit on its own.
    pub(crate) fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + ANSWER;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(Instant::now() < deadline, "piton did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn terminate(&mut self) {
        self.signal("TERM");
    }

    /// Sends SIG`name` (`TERM`, `INT`).
    pub(crate) fn signal(&mut self, name: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} failed");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `piton serve --http 127.0.0.1:0` on `folder` (the bundled plugins without one),
/// and the address it says it listens on.
pub(crate) fn serve_http(folder: Option<&std::path::Path>) -> (Running, std::net::SocketAddr) {
    serve_http_on("127.0.0.1:0", folder)
}

/// `piton serve --http bind` on `folder`, and the address it says it listens on.
pub(crate) fn serve_http_on(
    bind: &str,
    folder: Option<&std::path::Path>,
) -> (Running, std::net::SocketAddr) {
    serve_http_with(bind, folder, &[])
}

/// `piton serve --http bind` on `folder` with `flags`, and the address it listens on.
pub(crate) fn serve_http_with(
    bind: &str,
    folder: Option<&std::path::Path>,
    flags: &[&str],
) -> (Running, std::net::SocketAddr) {
    listening(serve_http_command(bind, folder, flags))
}

/// The command `piton serve --http bind` on `folder` with `flags`, for a test that
/// adds to it before [`listening`] starts it.
pub(crate) fn serve_http_command(
    bind: &str,
    folder: Option<&std::path::Path>,
    flags: &[&str],
) -> Command {
    let mut command = piton();
    // Nobody is asked before a call here: consent has its own tests (peers/consent.rs).
    command
        .args(["serve", "--approve", "never", "--http", bind])
        .args(flags);
    if let Some(folder) = folder {
        command.arg("--plugins").arg(folder);
    }
    command
}

/// Starts `command`, a `piton serve --http`, and returns it with the address it says
/// it listens on.
pub(crate) fn listening(mut command: Command) -> (Running, std::net::SocketAddr) {
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("piton serve --http starts");
    let running = Running::new(child);
    let line = running.stderr.wait_for("listening on ");
    let addr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("not `listening on http://IP:PORT/mcp`: {line}"));
    (running, addr)
}

/// Replaces every `from` in `bytes` with `to`, of equal length; how many there were.
pub(crate) fn rename(bytes: &mut [u8], from: &str, to: &str) -> usize {
    assert_eq!(from.len(), to.len());
    let mut found = 0;
    let mut at = 0;
    while let Some(i) = bytes
        .get(at..)
        .unwrap_or_default()
        .windows(from.len())
        .position(|w| w == from.as_bytes())
    {
        bytes[at + i..at + i + from.len()].copy_from_slice(to.as_bytes());
        at += i + from.len();
        found += 1;
    }
    found
}
