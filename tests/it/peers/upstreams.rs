//! Real upstream MCP servers in piton.toml: `@modelcontextprotocol/server-everything`
//! (npm) and a Python SDK server (tests/peers/py_server.py). piton calls their tools,
//! lists them with declared hints, re-serves them over MCP, and reconnects after
//! an upstream is killed mid-session.

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use piton_tests::plugins;
use serde_json::{Value, json};

use super::{Target, call_result, listed, only_text, peers, peers_file, piton_bin, sdk_client};
use crate::support::{piton, plugins_folder, run, stderr, stdout};

/// A plugins folder with word_count and a piton.toml naming both upstreams.
fn folder_with_upstreams() -> tempfile::TempDir {
    let dir = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let everything = peers()
        .dir()
        .join("node_modules/.bin/mcp-server-everything");
    let config = format!(
        r#"
[mcp.everything]
command = "{}"
args = ["stdio"]
timeout = "120s"

[mcp.py]
command = "{}"
args = ["{}"]
timeout = "120s"
"#,
        everything.display(),
        peers().python().display(),
        peers_file("py_server.py").display()
    );
    std::fs::write(dir.path().join("piton.toml"), config).expect("piton.toml written");
    dir
}

#[test]
fn piton_call_reaches_server_everything_and_the_python_server() {
    let dir = folder_with_upstreams();
    let call = |name: &str, args: &str| {
        run(piton()
            .args(["call", name, args, "--plugins"])
            .arg(dir.path()))
    };
    let out = call("everything__echo", r#"{"message":"hi"}"#);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Echo: hi");

    let out = call("py__add", r#"{"a":2,"b":3}"#);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "5");
    // structuredContent and no blocks: the JSON.
    let out = call("py__structured", r#"{"a":2,"b":3}"#);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("JSON printed");
    assert_eq!(json, json!({"sum": 5}));
    // isError: an error result, exit 1.
    let out = call("py__fail", r#"{"message":"nope"}"#);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));
    // A missing required argument never reaches the server.
    let out = call("py__add", r#"{"a":2}"#);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(r#"(input error: "b" is a required property)"#),
        "{}",
        stderr(&out)
    );
    // An image block is kept as an image.
    let out = call("everything__get-tiny-image", "{}");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("image (image/png,"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn piton_list_marks_upstream_hints_declared_and_wasm_hints_enforced() {
    let dir = folder_with_upstreams();
    let out = run(piton().args(["list", "--plugins"]).arg(dir.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} listed:\n{text}"))
            .to_owned()
    };
    assert!(line("word_count").contains("enforced"), "{text}");
    assert!(line("everything__echo").contains("declared"), "{text}");
    assert!(line("py__add").contains("declared"), "{text}");
    assert!(
        line("py__add").contains("read_only, idempotent, closed_world"),
        "{text}"
    );
    // No annotations: the worst case.
    assert!(
        line("py__shout").contains("destructive, open_world"),
        "{text}"
    );

    let out = run(piton()
        .args(["list", "--json", "--plugins"])
        .arg(dir.path()));
    let tools: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let shout = tools
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "py__shout"))
        .expect("py__shout listed");
    assert_eq!(shout["hints_are"], "declared");
    assert_eq!(shout["source"], "mcp:py");
    assert_eq!(
        shout["hints"],
        json!({"read_only": false, "destructive": true, "idempotent": false, "open_world": true})
    );
}

#[test]
fn a_python_sdk_client_gets_upstream_tools_re_served_with_their_annotations() {
    let dir = folder_with_upstreams();
    let command: Vec<&OsStr> = vec![
        OsStr::new(piton_bin()),
        OsStr::new("serve"),
        // Upstream tools' hints are not trusted: without this every call is asked about.
        OsStr::new("--approve"),
        OsStr::new("never"),
        OsStr::new("--plugins"),
        dir.path().as_os_str(),
    ];
    let report = sdk_client(
        Target::Stdio(&command),
        "auto",
        &[
            ("everything__echo", json!({"message": "hi"})),
            ("py__add", json!({"a": 20, "b": 22})),
            ("word_count", json!({"text": "a b c"})),
        ],
    );
    let echo = listed(&report, "everything__echo");
    assert_eq!(echo["annotations"]["readOnlyHint"], true, "{echo:#}");
    let shout = listed(&report, "py__shout");
    assert_eq!(
        shout["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}),
        "the worst case is served explicitly: {shout:#}"
    );
    assert_eq!(only_text(call_result(&report, 0)), "Echo: hi");
    assert_eq!(only_text(call_result(&report, 1)), "42");
    assert_eq!(only_text(call_result(&report, 2)), "3");
}

/// A raw JSON-RPC session with `piton serve` over stdio.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Session {
    fn start(folder: &Path) -> Self {
        let mut child = piton()
            .args(["serve", "--approve", "never", "--plugins"])
            .arg(folder)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("piton serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut session = Self {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = session.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("piton reads");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and returns its response (notifications are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .expect("piton answers");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, name: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": args}))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn killing_an_upstream_mid_session_is_a_connection_error_and_the_next_call_reconnects() {
    let dir = folder_with_upstreams();
    let mut session = Session::start(dir.path());
    let pid = session.call("py__pid", json!({}));
    let pid = pid["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a pid: {pid}"))
        .to_owned();
    let add = json!({"a": 2, "b": 3});
    assert_eq!(
        session.call("py__add", add.clone())["result"]["content"][0]["text"],
        "5"
    );

    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    std::thread::sleep(Duration::from_millis(300));
    let lost = session.call("py__add", add.clone());
    let message = lost["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{lost}"));
    assert!(
        message.contains("MCP server `py`") && message.contains("connection was lost"),
        "{message}"
    );
    // The other upstream and the wasm tools are untouched; the next call reconnects.
    assert_eq!(
        session.call("word_count", json!({"text": "x y"}))["result"]["content"][0]["text"],
        "2"
    );
    let again = session.call("py__add", add);
    assert_eq!(again["result"]["content"][0]["text"], "5", "{again}");
    let new_pid = session.call("py__pid", json!({}));
    assert_ne!(
        new_pid["result"]["content"][0]["text"],
        pid.as_str(),
        "a new process"
    );
}
