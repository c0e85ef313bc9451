//! Consent through real clients: `piton serve` asks the person, through the official
//! Python SDK client, before calls that change things, on both protocol revisions
//! (2025-11-25 `elicitation/create` in a session, 2026-07-28 `input_required` with a
//! sealed `requestState`), over stdio and Streamable HTTP; refuses what it cannot ask
//! about; and refuses retries whose state or call was tampered with.
//!
//! The tool is the bundled `files`: its `hints_for` makes `list` read-only, `create`
//! add-only and `delete` destructive, over a write mount of a temp folder.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use piton_tests::{guests, plugins};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::{HttpServer, Target, call_result, only_text, piton_bin, sdk_client_with};
use crate::support::piton;

pub(super) const KEY: &str = "consent-tests-shared-key-0123456789abcdef";
pub(super) const OTHER_KEY: &str = "another-replica-key-0123456789abcdefghijk";

/// A plugins folder with `files` (and `word_count`), `files` granted `data/` for
/// writing, and `extra` added to its piton.toml; and an audit log to a file.
pub(super) struct Setup {
    dir: tempfile::TempDir,
    /// The folder granted: outside the plugins folder, which no tool may write.
    data: tempfile::TempDir,
    /// Where the audit log is written (`None`: piton.toml says, in `extra`).
    logs: Option<tempfile::TempDir>,
}

impl Setup {
    pub(super) fn new(extra: &str) -> Self {
        Self::made(extra, true)
    }

    /// With `audit`, `[audit]` writes to a file of [`Setup::consents`].
    pub(super) fn made(extra: &str, audit: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temp folder");
        std::fs::copy(plugins::FILES, dir.path().join("files.wasm")).expect("copy files");
        std::fs::copy(plugins::WORD_COUNT, dir.path().join("word_count.wasm"))
            .expect("copy word_count");
        // Another tool that is asked about: its hints_for makes `write` destructive.
        std::fs::copy(guests::HOSTILE_FS_WRITE, dir.path().join("fs_write.wasm"))
            .expect("copy fs_write");
        let data = tempfile::tempdir().expect("a data folder");
        let logs = audit.then(|| tempfile::tempdir().expect("a log folder"));
        let setup = Self { dir, data, logs };
        setup.write_toml(extra);
        setup
    }

    pub(super) fn write_toml(&self, extra: &str) {
        let audit = match &self.logs {
            Some(logs) => format!("[audit]\nto = {:?}\n", logs.path().join("audit.log")),
            None => String::new(),
        };
        let toml = format!(
            "[tools.files]\nmounts = [{{ host = {:?}, guest = \"/data\", mode = \"write\" }}]\n{extra}\n{audit}",
            self.data.path()
        );
        std::fs::write(self.dir.path().join("piton.toml"), toml).expect("piton.toml");
    }

    /// The `consent` of each audit record of `call` (by its arguments' SHA-256), in
    /// the log's order, once there are `n` (or after 20 s: the records there are).
    pub(super) fn consents(&self, call: &(&str, Value), n: usize) -> Vec<String> {
        let logs = self.logs.as_ref().expect("an audit log");
        let digest = digest(&call.1);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(logs.path().join("audit.log")).unwrap_or_default();
            let found: Vec<String> = text
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|r| r["tool"] == call.0 && r["arguments_sha256"] == digest)
                .map(|r| r["consent"].as_str().unwrap_or("(none)").to_owned())
                .collect();
            if found.len() >= n || std::time::Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub(super) fn plugins(&self) -> &Path {
        self.dir.path()
    }

    pub(super) fn data(&self, name: &str) -> PathBuf {
        self.data.path().join(name)
    }

    pub(super) fn stdio(&self) -> [&OsStr; 4] {
        [
            OsStr::new(piton_bin()),
            OsStr::new("serve"),
            OsStr::new("--plugins"),
            self.plugins().as_os_str(),
        ]
    }

    pub(super) fn http(&self, key: &str) -> HttpServer {
        self.http_with(key, &[])
    }

    pub(super) fn http_with(&self, key: &str, flags: &[&str]) -> HttpServer {
        let mut command: Command = piton();
        command
            .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
            .arg(self.plugins())
            .args(flags)
            .env("PITON_APPROVAL_KEY", key);
        HttpServer::start_command(command)
    }
}

pub(super) fn create(name: &str) -> (&'static str, Value) {
    (
        "files",
        json!({"op": "create", "path": format!("/data/{name}"), "content": "made"}),
    )
}

/// Runs the Python SDK client with `calls`, answering questions with `answers`
/// (none: the client declares no elicitation).
pub(super) fn client(
    target: Target<'_>,
    mode: &str,
    calls: &[(&str, Value)],
    answers: Option<&[&str]>,
) -> Value {
    let mut options = Vec::new();
    match answers {
        None => {}
        Some([]) => options.extend(["--elicit", "none"]),
        Some(words) => {
            for word in words {
                options.extend(["--elicit", word]);
            }
        }
    }
    // "none" is no answer word: a question then fails the call, which a test sees.
    let options: Vec<&str> = options.into_iter().filter(|o| *o != "none").collect();
    sdk_client_with(target, mode, calls, &options)
}

pub(super) fn refused_with(result: &Value, words: &str) {
    assert_eq!(result["isError"], true, "{result:#}");
    let text = only_text(result);
    assert!(text.contains(words), "{words:?} not in {text}");
}

fn asked(report: &Value) -> &[Value] {
    report["asked"].as_array().map_or(&[], Vec::as_slice)
}

/// Each mode (2025-11-25 sessions, 2026-07-28 rounds) over stdio and HTTP; the HTTP
/// server, for its metrics.
fn each_target(setup: &Setup, mut check: impl FnMut(Target<'_>, &str, &str)) -> HttpServer {
    let server = setup.http(KEY);
    let stdio = setup.stdio();
    for mode in ["legacy", "2026-07-28"] {
        check(Target::Stdio(&stdio), mode, "stdio");
        check(Target::Url(&server.url), mode, "http");
    }
    server
}

/// The consent decisions the audit log holds for one call on `mode`: a 2026-07-28
/// call is first asked (its first round), then decided on its retry.
fn decided(mode: &str, decision: &str) -> Vec<String> {
    match mode {
        "legacy" => vec![decision.to_owned()],
        _ => vec!["asked".to_owned(), decision.to_owned()],
    }
}

#[test]
fn the_person_is_asked_and_accept_decline_cancel_and_deny_do_what_they_say() {
    let setup = Setup::new("");
    let server = each_target(&setup, |target, mode, how| {
        let tag = format!("{mode}-{how}");
        let names = ["allowed", "declined", "cancelled", "denied"].map(|n| format!("{tag}-{n}"));
        let calls = names.each_ref().map(|n| create(n));
        let report = client(
            target,
            mode,
            &calls,
            Some(&["allow_once", "decline", "cancel", "deny"]),
        );
        let at = format!("{tag}: {report:#}");
        assert_eq!(asked(&report).len(), 4, "{at}");
        assert_eq!(call_result(&report, 0)["isError"], false, "{at}");
        assert!(setup.data(&names[0]).exists(), "{at}");
        for (index, word) in [
            (1, "the user declined"),
            (2, "the user cancelled"),
            (3, "the user declined"),
        ] {
            let result = call_result(&report, index);
            assert_eq!(result["isError"], true, "{at}");
            assert!(only_text(result).contains(word), "{at}");
            assert!(!setup.data(&names[index]).exists(), "{at}");
        }
        // What the person saw: the tool, why, the grants of this call, the arguments
        // and their digest; the choices.
        let question = &asked(&report)[0];
        let message = question["message"].as_str().unwrap_or_default();
        let args = &calls[0].1;
        let digest = digest(args);
        for shown in [
            "Allow `files` to run?",
            "Asked because it is not read-only",
            "as /data (read, and add new files)",
            &digest,
            &names[0],
        ] {
            assert!(message.contains(shown), "{shown:?} not in {message}");
        }
        let choices: Vec<&str> = question["requested_schema"]["properties"]["decision"]["oneOf"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["const"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(choices, ["allow_once", "allow_for_a_while", "deny"], "{at}");
        // Each decision is in the audit log, beside the arguments' digest.
        for (call, decision) in calls
            .iter()
            .zip(["allowed_once", "denied", "cancelled", "denied"])
        {
            let want = decided(mode, decision);
            assert_eq!(setup.consents(call, want.len()), want, "{tag}: {call:?}");
        }
    });
    // And counted: two modes' calls over HTTP, one each way in each.
    let metrics = metrics(&server.url);
    for (decision, count) in [
        ("asked", 4.0),
        ("allowed_once", 2.0),
        ("denied", 4.0),
        ("cancelled", 2.0),
        ("could_not_ask", 0.0),
    ] {
        assert_eq!(
            approvals(&metrics, "files", decision),
            count,
            "{decision}\n{metrics}"
        );
    }
}

/// The arguments as piton digests them: keys sorted, no spaces.
fn canonical(args: &Value) -> String {
    // serde_json's map sorts its keys unless preserve_order is on; these arguments
    // have sorted keys already, and nothing piton escapes.
    serde_json::to_string(args).expect("JSON")
}

/// The SHA-256 of the arguments, in hex, as the question and the audit log give it.
pub(super) fn digest(args: &Value) -> String {
    hex::encode(Sha256::digest(canonical(args).as_bytes()))
}

/// The text of `/metrics` of the server whose MCP endpoint is `url`.
pub(super) fn metrics(url: &str) -> String {
    use std::io::{Read as _, Write as _};
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).expect("connect to /metrics");
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// `piton_approvals_total{tool, decision}` in `metrics`; 0 when absent.
pub(super) fn approvals(metrics: &str, tool: &str, decision: &str) -> f64 {
    crate::observe::metric(
        metrics,
        "piton_approvals_total",
        &[("tool", tool), ("decision", decision)],
    )
    .unwrap_or(0.0)
}

#[test]
fn allowed_for_a_while_the_next_calls_are_not_asked() {
    let setup = Setup::new("");
    let server = each_target(&setup, |target, mode, how| {
        let tag = format!("{mode}-{how}");
        let names = ["first", "second", "third"].map(|n| format!("{tag}-{n}"));
        let calls = names.each_ref().map(|n| create(n));
        // One answer only: a second question would fail its call.
        let report = client(target, mode, &calls, Some(&["allow_for_a_while"]));
        let at = format!("{tag}: {report:#}");
        assert_eq!(asked(&report).len(), 1, "{at}");
        for (index, name) in names.iter().enumerate() {
            assert_eq!(call_result(&report, index)["isError"], false, "{at}");
            assert!(setup.data(name).exists(), "{at}");
        }
        let want = decided(mode, "allowed_for_a_while");
        assert_eq!(setup.consents(&calls[0], want.len()), want, "{tag}");
        for call in &calls[1..] {
            assert_eq!(setup.consents(call, 1), ["allowed_earlier"], "{tag}");
        }
    });
    let metrics = metrics(&server.url);
    for (decision, count) in [
        ("asked", 1.0),
        ("allowed_for_a_while", 2.0),
        ("allowed_earlier", 4.0),
    ] {
        assert_eq!(
            approvals(&metrics, "files", decision),
            count,
            "{decision}\n{metrics}"
        );
    }
}

#[test]
fn a_client_that_cannot_be_asked_is_refused_and_nothing_runs() {
    let setup = Setup::new("");
    let server = each_target(&setup, |target, mode, how| {
        let canary = format!("{mode}-{how}-canary");
        let calls = [
            create(&canary),
            ("files", json!({"op": "list", "path": "/data"})),
            ("word_count", json!({"text": "a b c"})),
        ];
        let report = client(target, mode, &calls, None);
        let at = format!("{mode} {how}: {report:#}");
        let refused = call_result(&report, 0);
        assert_eq!(refused["isError"], true, "{at}");
        let text = only_text(refused);
        for said in [
            "`files` was not run",
            "did not declare the elicitation capability",
            "approve = \"never\"",
            "[approve] ask = \"not-read-only\"",
        ] {
            assert!(text.contains(said), "{said:?} not in {text}");
        }
        assert!(!setup.data(&canary).exists(), "the refused call ran: {at}");
        // Read-only calls, the enforced kind and one narrowed by hints_for, are not
        // asked about: they run.
        assert_eq!(call_result(&report, 1)["isError"], false, "{at}");
        assert_eq!(only_text(call_result(&report, 2)), "3", "{at}");
        assert_eq!(setup.consents(&calls[0], 1), ["could_not_ask"], "{at}");
    });
    for call in [
        ("files", json!({"op": "list", "path": "/data"})),
        ("word_count", json!({"text": "a b c"})),
    ] {
        assert_eq!(setup.consents(&call, 4), ["not_asked"; 4], "{call:?}");
    }
    let metrics = metrics(&server.url);
    assert_eq!(
        approvals(&metrics, "files", "could_not_ask"),
        2.0,
        "{metrics}"
    );
    // A call not asked about is not an approval.
    assert_eq!(
        approvals(&metrics, "word_count", "not_asked"),
        0.0,
        "{metrics}"
    );
}

#[test]
fn never_and_per_tool_modes_are_followed_and_serve_approve_overrides_them() {
    let setup = Setup::new("approve = \"never\"\n");
    let stdio = setup.stdio();
    let report = client(Target::Stdio(&stdio), "legacy", &[create("never")], None);
    assert_eq!(call_result(&report, 0)["isError"], false, "{report:#}");
    assert!(setup.data("never").exists());
    // --approve always asks about every call, read-only ones too, over the file.
    let mut always: Vec<&OsStr> = stdio.to_vec();
    always.extend([OsStr::new("--approve"), OsStr::new("always")]);
    let report = client(
        Target::Stdio(&always),
        "legacy",
        &[
            ("word_count", json!({"text": "a b"})),
            create("never-overridden"),
        ],
        None,
    );
    // The file's `approve = "never"` for `files` is not read under --approve: its
    // calls are refused too, and the refusal says that only the flag stops the asking.
    for index in [0, 1] {
        let text = only_text(call_result(&report, index));
        for said in [
            "serve --approve always",
            "serve this run with `--approve never`",
            "without `--approve` and with `approve = \"never\"`",
        ] {
            assert!(text.contains(said), "{said:?} not in {text}");
        }
    }
    assert!(!setup.data("never-overridden").exists());
    // Without the flag the fix is the file's line.
    let report = client(
        Target::Stdio(&stdio),
        "legacy",
        &[(
            "fs_write",
            json!({"mode": "write", "op": "write", "path": "/x", "content": "x"}),
        )],
        None,
    );
    let text = only_text(call_result(&report, 0));
    assert!(
        text.contains("set `approve = \"never\"` in [tools.fs_write] of piton.toml"),
        "{text}"
    );
    assert!(!text.contains("--approve never"), "{text}");
}

#[test]
fn an_upstream_tool_that_claims_read_only_is_asked_about_unless_its_hints_are_trusted() {
    let python = super::peers().python();
    let server = super::peers_file("py_server.py");
    for (trust, asked) in [("", true), ("trust_hints = true\n", false)] {
        let setup = Setup::new(&format!(
            "[mcp.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout = \"120s\"\n{trust}",
            python.display().to_string(),
            server.display().to_string(),
        ));
        let stdio = setup.stdio();
        // `add` says it is read-only; only trust_hints makes piton take it at its word.
        let report = client(
            Target::Stdio(&stdio),
            "legacy",
            &[("py__add", json!({"a": 2, "b": 3}))],
            None,
        );
        let result = call_result(&report, 0);
        if asked {
            refused_with(result, "did not declare the elicitation capability");
        } else {
            assert_eq!(only_text(result), "5", "{report:#}");
        }
    }
}

/// What a client may show as a line break, or that reorders or hides text.
fn breaks_or_hides(c: char) -> bool {
    matches!(
        c,
        '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{061c}'
            | '\u{feff}'
    )
}

#[test]
fn an_upstream_tool_description_cannot_forge_lines_of_the_question() {
    // py_server's `lookalike` has a description whose line separators, carriage
    // return and bidi marks bring in lines that look like piton's own.
    let setup = Setup::new(&format!(
        "[mcp.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout = \"120s\"\n",
        super::peers().python().display().to_string(),
        super::peers_file("py_server.py").display().to_string(),
    ));
    let stdio = setup.stdio();
    let report = client(
        Target::Stdio(&stdio),
        "legacy",
        &[("py__lookalike", json!({"a": 2, "b": 3}))],
        Some(&["deny"]),
    );
    let question = asked(&report)
        .first()
        .unwrap_or_else(|| panic!("not asked: {report:#}"));
    let message = question["message"].as_str().unwrap_or_default();
    assert!(!message.chars().any(breaks_or_hides), "{message:?}");
    let lines: Vec<&str> = message.lines().collect();
    for start in ["Granted for this call", "Asked because", "Arguments"] {
        let found = lines.iter().filter(|l| l.starts_with(start)).count();
        assert_eq!(found, 1, "{start:?} in {message:?}");
    }
    assert!(message.contains("Add two integers."), "{message:?}");
    refused_with(call_result(&report, 0), "the user declined");
}

#[test]
fn inspect_says_what_serve_will_ask_about_a_tool_and_why() {
    let setup = Setup::new(&format!(
        "[tools.fs_write]\napprove = \"always\"\n[approve]\nask = \"destructive\"\n\
         [mcp.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout = \"120s\"\n",
        super::peers().python().display().to_string(),
        super::peers_file("py_server.py").display().to_string(),
    ));
    let inspect = |tool: &str, json: bool| {
        let mut command = crate::support::piton();
        command
            .args(["inspect", tool, "--plugins"])
            .arg(setup.plugins());
        if json {
            command.arg("--json");
        }
        let out = crate::support::run(&mut command);
        assert!(out.status.success(), "{}", crate::support::stderr(&out));
        crate::support::stdout(&out)
    };
    for (tool, said) in [
        (
            "files",
            "asked before each call (piton.toml [approve] ask = \"destructive\"): it may \
             delete or overwrite; a call its hints-for narrows past that is not asked",
        ),
        (
            "fs_write",
            "asked before each call (piton.toml [tools.fs_write] approve = \"always\"): \
             every call is asked about",
        ),
        (
            "word_count",
            "never asked (piton.toml [approve] ask = \"destructive\")",
        ),
        // `add` says it is read-only; nothing holds it to that.
        (
            "py__add",
            "asked before each call (piton.toml [approve] ask = \"destructive\"): it may \
             delete or overwrite; its hints are declared, so every call counts as the worst \
             case",
        ),
    ] {
        let text = inspect(tool, false);
        let line = text
            .lines()
            .find(|line| line.starts_with("serve:"))
            .unwrap_or_else(|| panic!("no serve: line in {text}"));
        assert_eq!(
            line.strip_prefix("serve:").map(str::trim),
            Some(said),
            "{tool}"
        );
        let report: Value = serde_json::from_str(&inspect(tool, true)).expect("JSON");
        assert_eq!(report["approval"], said, "{report:#}");
    }
}
