//! piton embedded in a Rust program: `serve::Server` over a plugins folder, as
//! `piton serve` runs it, with a tool added to the folder becoming callable (the
//! reload works through the library), and a stop from the program's own handle or,
//! when the program asks for it, from SIGTERM.

use std::process::Stdio;

use piton_host::loader::Loader;
use piton_host::plugins::PluginsAt;
use piton_host::serve::{Server, Transport};
use piton_tests::plugins;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use crate::mcp_client::{
    answer_to, call_params, initialize_params, initialized, request, tool_names,
};
use crate::support::{ANSWER, Running, plugins_folder, runtime};

/// The client end of a session over an in-memory pipe.
struct Peer {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Peer {
    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.expect("write");
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(ANSWER, self.lines.next_line())
            .await
            .expect("a message in time")
            .expect("reads")
            .expect("the server is still there");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Sends request `id` and gives its answer; notifications meanwhile are dropped.
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(request(id, method, params)).await;
        loop {
            let message = self.next().await;
            if let Some(answer) = answer_to(id, message, &mut Vec::new()) {
                return answer;
            }
        }
    }

    /// Waits for the server to say the tool list changed.
    async fn list_changed(&mut self) {
        loop {
            let message = self.next().await;
            if message["method"] == "notifications/tools/list_changed" {
                return;
            }
            assert!(message.get("id").is_none(), "no request is open: {message}");
        }
    }
}

#[tokio::test]
async fn a_program_serves_a_folder_sees_a_tool_added_and_stops_it_with_its_handle() {
    let folder = plugins_folder(&[("read_file.wasm", plugins::READ_FILE)]);
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(folder.path().into()));
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    let server = Server::new(loader, Transport::stream(server_read, server_write));
    let stop = server.stop_handle();
    let started = server.start().await.expect("the folder loads");
    assert_eq!(started.served().registry().len(), 1);
    let running = tokio::spawn(started.run());
    let (read, write) = tokio::io::split(client);
    let mut peer = Peer {
        write,
        lines: BufReader::new(read).lines(),
    };
    peer.request(1, "initialize", initialize_params()).await;
    peer.send(initialized()).await;
    let answer = peer.request(2, "tools/list", json!({})).await;
    assert_eq!(tool_names(&answer), ["read_file"], "{answer}");

    std::fs::copy(plugins::WORD_COUNT, folder.path().join("word_count.wasm")).expect("copy");
    peer.list_changed().await;
    let answer = peer.request(3, "tools/list", json!({})).await;
    assert_eq!(tool_names(&answer), ["read_file", "word_count"], "{answer}");
    let answer = peer
        .request(
            4,
            "tools/call",
            call_params("word_count", json!({"text": "one two three"})),
        )
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");

    // The client keeps its end open: only the handle ends the server.
    assert!(!running.is_finished());
    stop.stop();
    let ended = tokio::time::timeout(ANSWER, running)
        .await
        .expect("the server ends once stopped")
        .expect("no panic");
    ended.expect("a clean stop");
    drop(peer);
}

#[tokio::test]
async fn a_stop_asked_before_the_server_runs_ends_it_as_it_starts() {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(folder.path().into()));
    // The client end stays open, so only the stop can end it.
    let (_client, server) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server);
    let server = Server::new(loader, Transport::stream(read, write));
    server.stop_handle().stop();
    let started = server.start().await.expect("the folder loads");
    assert!(started.stop_handle().is_stopped());
    tokio::time::timeout(ANSWER, started.run())
        .await
        .expect("the server ends at once")
        .expect("a clean stop");
}

#[tokio::test]
async fn a_server_fails_to_start_when_the_folder_cannot_be_read() {
    let folder = tempfile::tempdir().expect("temp dir");
    let missing = folder.path().join("no-such-folder");
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(missing));
    let (_client, server) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server);
    let error = Server::new(loader, Transport::stream(read, write))
        .start()
        .await
        .expect_err("nothing to serve");
    assert!(error.to_string().contains("no-such-folder"), "{error}");
}

/// Set to a plugins folder, [`signal_child`] serves it (else it does nothing).
const CHILD: &str = "PITON_TEST_SERVER_SIGNAL_CHILD";

#[test]
fn sigterm_stops_a_server_that_asked_for_signals_gracefully() {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    // This test binary again, running only the child below, which serves and waits.
    let child = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .args([
            "server::signal_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, folder.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary starts");
    let mut child = Running::new(child);
    child.stderr.wait_for("child: serving");
    child.terminate();
    // Killed by the signal, it would print nothing more and exit with none.
    child.stderr.wait_for("child: stopped");
    assert_eq!(child.exit_code(), Some(0), "{}", child.stderr.text());
}

/// The process that [`sigterm_stops_a_server_that_asked_for_signals_gracefully`]
/// starts: a server on a stream whose client never closes, stopping on signals.
#[tokio::test]
#[ignore = "run by sigterm_stops_a_server_that_asked_for_signals_gracefully, in a process of its own"]
async fn signal_child() {
    let Some(folder) = std::env::var_os(CHILD) else {
        return;
    };
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(folder.into()));
    let (_client, server) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server);
    let started = Server::new(loader, Transport::stream(read, write))
        .stop_on_signals()
        .start()
        .await
        .expect("the folder loads");
    // The handlers are in place: the parent may signal.
    eprintln!("child: serving");
    started.run().await.expect("a clean stop");
    eprintln!("child: stopped");
}
