//! Stopping piton with calls in flight: `piton serve` (HTTP and stdio) on SIGTERM
//! answers the calls in flight before it exits 0, refuses new connections and calls
//! meanwhile, and answers a call still running at the end of `--shutdown-grace` with
//! an error; `piton call` on SIGINT closes its upstream stdio server before exiting.
//!
//! A call is known to be in flight from the server's own log (`tools/call started`),
//! never from a clock.

use std::net::SocketAddr;

use piton_tests::guests;
use serde_json::{Value, json};

use crate::mcp_client::{
    HttpSession, StdioPiton, body_text, call_params, request, send_once, sse_answer, stateless_call,
};
use crate::support::{Running, listening, piton, plugins_folder, serve_http_command};

/// What piton logs (besides warnings) in these tests: each call's start, and the stop.
const LOG: &str = "warn,piton_host::serve=debug,piton_host::cli=info";

/// The arguments of a `hoard` call that makes nothing and answers after `ms`.
fn sleep_args(ms: u64) -> Value {
    json!({"kind": "pollables", "count": 0, "size": 0, "path": "", "hold_ms": ms})
}

/// `piton serve --http` on a folder holding `hoard` (which can sleep) and `spin`
/// (which never ends), logging each call's start, with `flags`.
fn serve_sleepers(flags: &[&str]) -> (tempfile::TempDir, Running, SocketAddr) {
    let folder = plugins_folder(&[
        ("hoard.wasm", guests::HOSTILE_HOARD),
        ("spin.wasm", guests::HOSTILE_SPIN),
    ]);
    let mut command = serve_http_command("127.0.0.1:0", Some(folder.path()), flags);
    command.env("PITON_LOG", LOG);
    let (piton, addr) = listening(command);
    (folder, piton, addr)
}

/// A 2026-07-28 (sessionless) tools/call of `name` on a connection of its own; the
/// JSON-RPC message that answers it, or what came instead.
async fn stateless(addr: SocketAddr, id: u64, name: &str, arguments: Value) -> Value {
    let response = send_once(addr, stateless_call(addr, id, name, arguments)).await;
    let status = response.status();
    let body = body_text(response).await;
    assert_eq!(status, 200, "{body}");
    sse_answer(&body, id)
        .or_else(|| serde_json::from_str(&body).ok())
        .unwrap_or_else(|| panic!("no answer to {id}: {body:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_on_sigterm_answers_the_calls_in_flight_refuses_new_connections_and_exits_0() {
    let (_folder, mut piton, addr) = serve_sleepers(&["--shutdown-grace", "60s"]);
    // One call of each protocol revision in flight: sessionless, and in a session.
    let sessionless = tokio::spawn(stateless(addr, 7, "hoard", sleep_args(3000)));
    piton.stderr.wait_for("tools/call started");
    let (mut session, _) = HttpSession::start(addr).await;
    let in_session = tokio::spawn(async move {
        session
            .request(8, "tools/call", call_params("hoard", sleep_args(3000)))
            .await
    });
    piton.stderr.wait_for("tools/call started");

    piton.terminate();
    let stopping = piton.stderr.wait_for("stopping: no new connections");
    assert!(stopping.contains("in_flight=2"), "{stopping}");
    // The listener is closed once the stop began.
    let refused = tokio::net::TcpStream::connect(addr).await;
    assert_eq!(
        refused.as_ref().map_err(std::io::Error::kind).err(),
        Some(std::io::ErrorKind::ConnectionRefused),
        "{refused:?}"
    );

    for (call, answer) in [
        ("sessionless", sessionless.await.expect("the client task")),
        ("in a session", in_session.await.expect("the client task")),
    ] {
        assert_eq!(
            answer["result"]["content"][0]["text"], "made 0 pollables",
            "{call}: {answer}"
        );
    }
    assert_eq!(piton.exit_code(), Some(0), "{}", piton.stderr.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_answers_a_call_still_running_after_the_grace_with_an_error_and_exits_0() {
    let (_folder, mut piton, addr) = serve_sleepers(&["--shutdown-grace", "1s"]);
    let spinning = tokio::spawn(stateless(addr, 3, "spin", json!({})));
    piton.stderr.wait_for("tools/call started");
    piton.terminate();
    let answer = spinning.await.expect("the client task");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`spin` was stopped before it answered"),
        "{answer}"
    );
    assert!(message.contains("--shutdown-grace"), "{answer}");
    assert!(message.contains("send it again"), "{answer}");
    assert_eq!(piton.exit_code(), Some(0), "{}", piton.stderr.text());
}

#[test]
fn serve_on_stdio_on_sigterm_refuses_new_calls_answers_the_one_in_flight_and_exits_0() {
    let folder = plugins_folder(&[("hoard.wasm", guests::HOSTILE_HOARD)]);
    let mut command = piton();
    command
        .args([
            "serve",
            "--approve",
            "never",
            "--shutdown-grace",
            "60s",
            "--plugins",
        ])
        .arg(folder.path())
        .env("PITON_LOG", LOG);
    let mut piton = StdioPiton::run(command);
    piton.send(&request(
        1,
        "tools/call",
        call_params("hoard", sleep_args(3000)),
    ));
    piton.running.stderr.wait_for("tools/call started");
    piton.running.terminate();
    piton.running.stderr.wait_for("stopping: no new calls");
    // A call sent now is refused, and says so; the one in flight still answers.
    piton.send(&request(
        2,
        "tools/call",
        call_params("hoard", sleep_args(0)),
    ));
    let mut answers = [piton.next(), piton.next()];
    answers.sort_by_key(|answer| answer["id"].as_u64());
    let [first, second] = answers;
    assert_eq!(
        first["result"]["content"][0]["text"], "made 0 pollables",
        "{first}"
    );
    let refusal = second["error"]["message"].as_str().unwrap_or_default();
    assert!(
        refusal.contains("`hoard` was not run: piton is shutting down"),
        "{second}"
    );
    assert_eq!(
        piton.running.exit_code(),
        Some(0),
        "{}",
        piton.running.stderr.text()
    );
}

/// Whether process `pid` has ended (gone, or a zombie no one has reaped yet).
fn ended(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// A stdio upstream server that keeps running while its input is closed (it is busy
/// with a call): `piton call` used to leave it behind on Ctrl-C.
#[test]
fn call_on_sigint_closes_its_upstream_stdio_server_before_exiting() {
    let inner = plugins_folder(&[("hoard.wasm", guests::HOSTILE_HOARD)]);
    let outer = tempfile::tempdir().expect("temp dir");
    let pid_file = outer.path().join("upstream.pid");
    // `exec` keeps the shell's process id; the inner piton logs each call's start,
    // and stops soon when told to (its grace is short).
    let script = format!(
        "echo $$ > '{}'; exec '{}' serve --shutdown-grace 1s --plugins '{}'",
        pid_file.display(),
        env!("CARGO_BIN_EXE_piton"),
        inner.path().display()
    );
    let config = format!(
        "[mcp.inner]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nenv = {{ PITON_CACHE_DIR = {:?}, PITON_LOG = {LOG:?} }}\n",
        crate::support::cache_dir().display().to_string()
    );
    std::fs::write(outer.path().join("piton.toml"), config).expect("write piton.toml");

    let child = piton()
        .args(["call", "inner__hoard"])
        .arg(sleep_args(120_000).to_string())
        .arg("--plugins")
        .arg(outer.path())
        .env("PITON_LOG", "warn,piton_host::upstream=info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("piton call starts");
    let mut piton = Running::new(child);
    // The upstream server's stderr is logged through piton's with its name.
    piton.stderr.wait_for("tools/call started");
    let pid = std::fs::read_to_string(&pid_file).expect("the upstream wrote its pid");
    let pid = pid.trim();
    assert!(!ended(pid), "the upstream server is running");

    piton.signal("INT");
    assert_eq!(piton.exit_code(), Some(130), "{}", piton.stderr.text());
    assert!(
        ended(pid),
        "the upstream server {pid} outlived piton call: {}",
        piton.stderr.text()
    );
    assert!(
        piton.stderr.text().contains("SIGINT: stopped"),
        "{}",
        piton.stderr.text()
    );
}
