//! A raw MCP client over stdio: one JSON-RPC request line written, one answer line
//! read, with blocking std I/O, so a figure is the server's and the pipe's, hardly the
//! client's.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::json;

/// The raw client: one JSON-RPC request line written, one answer line read.
pub struct RawClient {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl RawClient {
    /// Starts `cmd` (a `piton serve`, or another MCP server on stdio) and initializes
    /// the session.
    pub fn spawn(mut cmd: std::process::Command) -> Self {
        let mut child = cmd
            .stderr(Stdio::inherit())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("piton serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut client = Self {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 0,
            line: String::new(),
        };
        let init = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "piton-bench", "version": "0"},
        });
        client.request("initialize", &init.to_string());
        client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        client
    }

    pub fn send(&mut self, line: &str) {
        // One write per message: the line and its newline together.
        let mut message = String::with_capacity(line.len() + 1);
        message.push_str(line);
        message.push('\n');
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(message.as_bytes()).expect("write");
    }

    /// Sends a request and returns its answer line (notifications are skipped).
    pub fn request(&mut self, method: &str, params: &str) -> &str {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ));
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).expect("read");
            assert!(n > 0, "piton serve closed its stdout");
            if self.line.contains(r#""id":"#) {
                return &self.line;
            }
        }
    }

    /// A `tools/call` with `params`, whose answer must be the one text `text`.
    pub fn call(&mut self, params: &str, text: &str) {
        let answer = self.request("tools/call", params);
        assert!(
            answer.contains(&format!(r#""text":"{text}""#))
                && !answer.contains(r#""isError":true"#),
            "{answer}"
        );
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        // Closing stdin ends `piton serve`; reap it.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
