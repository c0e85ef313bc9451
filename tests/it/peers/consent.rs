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

const KEY: &str = "consent-tests-shared-key-0123456789abcdef";
const OTHER_KEY: &str = "another-replica-key-0123456789abcdefghijk";

/// A plugins folder with `files` (and `word_count`), `files` granted `data/` for
/// writing, and `extra` added to its piton.toml.
struct Setup {
    dir: tempfile::TempDir,
    /// The folder granted: outside the plugins folder, which no tool may write.
    data: tempfile::TempDir,
}

impl Setup {
    fn new(extra: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temp folder");
        std::fs::copy(plugins::FILES, dir.path().join("files.wasm")).expect("copy files");
        std::fs::copy(plugins::WORD_COUNT, dir.path().join("word_count.wasm"))
            .expect("copy word_count");
        // Another tool that is asked about: its hints_for makes `write` destructive.
        std::fs::copy(guests::HOSTILE_FS_WRITE, dir.path().join("fs_write.wasm"))
            .expect("copy fs_write");
        let data = tempfile::tempdir().expect("a data folder");
        let setup = Self { dir, data };
        setup.write_toml(extra);
        setup
    }

    fn write_toml(&self, extra: &str) {
        let toml = format!(
            "[tools.files]\nmounts = [{{ host = {:?}, guest = \"/data\", mode = \"write\" }}]\n{extra}",
            self.data.path()
        );
        std::fs::write(self.dir.path().join("piton.toml"), toml).expect("piton.toml");
    }

    fn plugins(&self) -> &Path {
        self.dir.path()
    }

    fn data(&self, name: &str) -> PathBuf {
        self.data.path().join(name)
    }

    fn stdio(&self) -> [&OsStr; 4] {
        [
            OsStr::new(piton_bin()),
            OsStr::new("serve"),
            OsStr::new("--plugins"),
            self.plugins().as_os_str(),
        ]
    }

    fn http(&self, key: &str) -> HttpServer {
        self.http_with(key, &[])
    }

    fn http_with(&self, key: &str, flags: &[&str]) -> HttpServer {
        let mut command: Command = piton();
        command
            .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
            .arg(self.plugins())
            .args(flags)
            .env("PITON_APPROVAL_KEY", key);
        HttpServer::start_command(command)
    }
}

fn create(name: &str) -> (&'static str, Value) {
    (
        "files",
        json!({"op": "create", "path": format!("/data/{name}"), "content": "made"}),
    )
}

/// Runs the Python SDK client with `calls`, answering questions with `answers`
/// (none: the client declares no elicitation).
fn client(
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

fn asked(report: &Value) -> &[Value] {
    report["asked"].as_array().map_or(&[], Vec::as_slice)
}

/// Each mode (2025-11-25 sessions, 2026-07-28 rounds) over stdio and HTTP.
fn each_target(setup: &Setup, mut check: impl FnMut(Target<'_>, &str, &str)) {
    let server = setup.http(KEY);
    let stdio = setup.stdio();
    for mode in ["legacy", "2026-07-28"] {
        check(Target::Stdio(&stdio), mode, "stdio");
        check(Target::Url(&server.url), mode, "http");
    }
}

#[test]
fn the_person_is_asked_and_accept_decline_cancel_and_deny_do_what_they_say() {
    let setup = Setup::new("");
    each_target(&setup, |target, mode, how| {
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
        let digest = hex::encode(Sha256::digest(canonical(args).as_bytes()));
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
    });
}

/// The arguments as piton digests them: keys sorted, no spaces.
fn canonical(args: &Value) -> String {
    // serde_json's map sorts its keys unless preserve_order is on; these arguments
    // have sorted keys already.
    serde_json::to_string(args).expect("JSON")
}

#[test]
fn allowed_for_a_while_the_next_calls_are_not_asked() {
    let setup = Setup::new("");
    each_target(&setup, |target, mode, how| {
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
    });
}

#[test]
fn a_client_that_cannot_be_asked_is_refused_and_nothing_runs() {
    let setup = Setup::new("");
    each_target(&setup, |target, mode, how| {
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
    });
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

/// One 2026-07-28 round by hand: the result of `tools/call` with `state` and
/// `answer` (`-` for none).
fn round(url: &str, call: &(&str, Value), state: &str, answer: &str) -> Value {
    let args = call.1.to_string();
    let report = sdk_client_with(
        Target::Url(url),
        "2026-07-28",
        &[],
        &["--round", call.0, &args, state, answer],
    );
    let round = &report["rounds"][0];
    round
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("the round ended in a JSON-RPC error: {report:#}"))
}

/// The `requestState` of an `input_required` answer.
fn state_of(result: &Value) -> String {
    assert_eq!(result["resultType"], "input_required", "{result:#}");
    assert!(
        result["inputRequests"]["piton_approval"]["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Allow `files` to run?")),
        "{result:#}"
    );
    result["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned()
}

fn refused_with(result: &Value, words: &str) {
    assert_eq!(result["isError"], true, "{result:#}");
    let text = only_text(result);
    assert!(text.contains(words), "{words:?} not in {text}");
}

#[test]
fn tampered_retries_are_refused_and_replicas_with_the_key_accept_each_other() {
    let setup = Setup::new("");
    let a = setup.http(KEY);
    let b = setup.http(KEY);
    let other = setup.http(OTHER_KEY);
    let call = create("approved");
    let state = state_of(&round(&a.url, &call, "-", "-"));
    // Another call with this approval: other arguments, another answer key's state.
    refused_with(
        &round(&a.url, &create("sneaked"), &state, "allow_once"),
        "other arguments",
    );
    assert!(!setup.data("sneaked").exists());
    let mut forged = state.clone();
    forged.insert(
        3,
        if forged.as_bytes()[3] == b'A' {
            'B'
        } else {
            'A'
        },
    );
    refused_with(&round(&a.url, &call, &forged, "allow_once"), "altered");
    refused_with(
        &round(&other.url, &call, &state, "allow_once"),
        "made with another approval key",
    );
    // Another tool with this approval: refused before anything of it runs.
    let other_tool = (
        "fs_write",
        json!({"mode": "write", "op": "write", "path": "/data/approved", "content": "x"}),
    );
    refused_with(
        &round(&a.url, &other_tool, &state, "allow_once"),
        "another tool",
    );
    // No answer at all is no approval.
    refused_with(&round(&a.url, &call, &state, "-"), "carried no answer");
    assert!(!setup.data("approved").exists());
    // Asked by one replica, allowed on another with the same key: it runs, once.
    let state = state_of(&round(&a.url, &call, "-", "-"));
    let done = round(&b.url, &call, &state, "allow_once");
    assert_eq!(done["isError"], false, "{done:#}");
    assert!(setup.data("approved").exists());
    refused_with(&round(&b.url, &call, &state, "allow_once"), "already used");
    // Expired: a question open for 1 s, answered after 3.
    let brief = Setup::new("[approve]\nanswer_within = \"1s\"\n");
    let server = brief.http(KEY);
    let late = create("late");
    let state = state_of(&round(&server.url, &late, "-", "-"));
    std::thread::sleep(std::time::Duration::from_secs(3));
    refused_with(&round(&server.url, &late, &state, "allow_once"), "expired");
    assert!(!brief.data("late").exists());
}

#[test]
fn a_grant_changed_between_the_rounds_voids_the_approval() {
    let setup = Setup::new("");
    let server = setup.http(KEY);
    let call = create("regranted");
    let state = state_of(&round(&server.url, &call, "-", "-"));
    // piton.toml changes: the tool now also gets an environment variable.
    setup.write_toml("env = { LANG = \"C\" }\n");
    // Reloaded once a new question shows the new grant.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let probe = round(&server.url, &create("probe"), "-", "-");
        let message = probe["inputRequests"]["piton_approval"]["params"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if message.contains("environment variable LANG") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "piton.toml was not reloaded in 60 s: {probe:#}\n{}",
            server.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let result = round(&server.url, &call, &state, "allow_once");
    refused_with(&result, "other grants");
    assert!(!setup.data("regranted").exists());
}

/// The audit records (JSON lines) a server wrote to its stderr.
fn audit_records(server: &HttpServer) -> Vec<Value> {
    server
        .log()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record.get("consent").is_some())
        .collect()
}

/// The replicas' audit records of the call whose arguments' SHA-256 is `digest`: for
/// each replica, the consent decisions it recorded.
fn decisions(replicas: &[&HttpServer], digest: &str) -> Vec<Vec<String>> {
    replicas
        .iter()
        .map(|server| {
            audit_records(server)
                .iter()
                .filter(|r| r["arguments_sha256"] == digest)
                .filter_map(|r| r["consent"].as_str().map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn behind_haproxy_replicas_sharing_the_key_take_each_others_approvals() {
    let Some(haproxy) = crate::replicas::haproxy() else {
        return;
    };
    for (keys, shared) in [([KEY, KEY], true), ([KEY, OTHER_KEY], false)] {
        let setup = Setup::new("[audit]\nto = \"stderr\"\n");
        let lb_port = crate::replicas::free_port();
        let allow = format!("127.0.0.1:{lb_port}");
        let replicas = keys.map(|key| setup.http_with(key, &["--allow-host", &allow]));
        let addrs: Vec<std::net::SocketAddr> = replicas
            .iter()
            .map(|r| {
                let hostport = r.url.trim_start_matches("http://").trim_end_matches("/mcp");
                hostport.parse().expect("a replica's address")
            })
            .collect();
        let _lb = crate::replicas::Haproxy::start(haproxy, lb_port, &addrs, false);
        let url = format!("http://127.0.0.1:{lb_port}/mcp");
        let names = ["one", "two", "three", "four"].map(|n| format!("{shared}-{n}"));
        let calls = names.each_ref().map(|n| create(n));
        let answers = ["allow_once"; 4];
        let report = client(Target::Url(&url), "2026-07-28", &calls, Some(&answers));
        let at = format!("{report:#}");
        // Round robin sends a call's two rounds to different replicas.
        let mut crossed = 0;
        for (index, (name, call)) in names.iter().zip(&calls).enumerate() {
            let digest = hex::encode(Sha256::digest(canonical(&call.1).as_bytes()));
            let by_replica = decisions(&[&replicas[0], &replicas[1]], &digest);
            let asked_on = by_replica
                .iter()
                .position(|d| d.iter().any(|d| d == "asked"));
            let decided_on = by_replica
                .iter()
                .position(|d| d.iter().any(|d| d != "asked"));
            let result = call_result(&report, index);
            if asked_on.is_some() && decided_on.is_some() && asked_on != decided_on {
                crossed += 1;
                if shared {
                    assert_eq!(result["isError"], false, "{name}: {at}");
                    assert!(setup.data(name).exists(), "{name}");
                } else {
                    refused_with(result, "made with another approval key");
                    assert!(!setup.data(name).exists(), "{name}");
                }
            }
        }
        assert!(
            crossed > 0,
            "no call was asked on one replica and retried on the other: {at}\n{}\n{}",
            replicas[0].log(),
            replicas[1].log()
        );
    }
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
