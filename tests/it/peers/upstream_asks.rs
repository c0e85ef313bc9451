//! An upstream server's own questions: the Python SDK server's `greet` tool
//! (tests/peers/py_server.py) asks its client a name with `elicitation/create`;
//! `piton serve` passes the question to the person who made the call (the Python
//! SDK client, over stdio and Streamable HTTP) with the server's name on it, and
//! their answer back; a client that cannot be asked gets the question declined. A
//! 2026-07-28 client is asked with `input_required`, and its retry goes on with the
//! call that asked.

use std::ffi::OsStr;

use piton_tests::plugins;
use serde_json::{Value, json};

use super::{
    HttpServer, Target, call_result, only_text, peers, peers_file, piton_bin, sdk_client_with,
};

use crate::support::plugins_folder;

/// A plugins folder with word_count and the Python server as `[mcp.py]`, and the
/// audit log its piton.toml names.
pub(super) struct Folder {
    dir: tempfile::TempDir,
    logs: tempfile::TempDir,
}

impl Folder {
    fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The `upstream_questions` outcomes of each audit record of `tool`, in the log's
    /// order, once there are `n` records of it (or after 20 s, those there are).
    pub(super) fn questions(&self, tool: &str, n: usize) -> Vec<Vec<String>> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let text =
                std::fs::read_to_string(self.logs.path().join("audit.log")).unwrap_or_default();
            let records: Vec<Vec<String>> = text
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|record| record["tool"] == tool)
                .map(|record| {
                    record["upstream_questions"]
                        .as_array()
                        .map(|questions| {
                            questions
                                .iter()
                                .map(|q| q["outcome"].as_str().unwrap_or("?").to_owned())
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect();
            if records.len() >= n || std::time::Instant::now() > deadline {
                return records;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

fn folder() -> Folder {
    folder_with("")
}

/// As [`folder`], with `more` lines in the `[mcp.py]` section.
pub(super) fn folder_with(more: &str) -> Folder {
    let dir = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let logs = tempfile::tempdir().expect("a log folder");
    let config = format!(
        "[mcp.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout = \"120s\"\n{more}[audit]\nto = {:?}\n",
        peers().python().display().to_string(),
        peers_file("py_server.py").display().to_string(),
        logs.path().join("audit.log"),
    );
    std::fs::write(dir.path().join("piton.toml"), config).expect("piton.toml written");
    Folder { dir, logs }
}

/// `piton serve --approve never` over stdio and over HTTP, each given to `check`
/// with its name; the HTTP server, for its metrics.
pub(super) fn each_target(dir: &Folder, mut check: impl FnMut(Target<'_>, &str)) -> HttpServer {
    let stdio = [
        OsStr::new(piton_bin()),
        OsStr::new("serve"),
        OsStr::new("--approve"),
        OsStr::new("never"),
        OsStr::new("--plugins"),
        dir.path().as_os_str(),
    ];
    check(Target::Stdio(&stdio), "stdio");
    // HttpServer::start serves with --approve never.
    let server = HttpServer::start(dir.path());
    check(Target::Url(&server.url), "http");
    server
}

/// `piton_upstream_questions_total{tool, outcome}` of the server at `url`; 0 when
/// absent.
pub(super) fn counted(url: &str, tool: &str, outcome: &str) -> f64 {
    let metrics = super::consent::metrics(url);
    crate::observe::metric(
        &metrics,
        "piton_upstream_questions_total",
        &[("tool", tool), ("outcome", outcome)],
    )
    .unwrap_or(0.0)
}

/// `records`, each sorted, sorted: what became of the questions, whatever the
/// order the two servers wrote their records in.
pub(super) fn sorted(mut records: Vec<Vec<String>>) -> Vec<Vec<String>> {
    for record in &mut records {
        record.sort();
    }
    records.sort();
    records
}

pub(super) fn words(records: &[&[&str]]) -> Vec<Vec<String>> {
    sorted(
        records
            .iter()
            .map(|r| r.iter().map(|w| (*w).to_owned()).collect())
            .collect(),
    )
}

pub(super) fn asked(report: &Value) -> &[Value] {
    report["asked"].as_array().map_or(&[], Vec::as_slice)
}

fn greet(times: u32) -> (&'static str, Value) {
    ("py__greet", json!({"times": times}))
}

pub(super) const QUESTION: &str = "MCP server `py` asks: What is your name?";

#[test]
fn an_upstream_question_reaches_the_caller_with_its_name_and_the_answer_goes_back() {
    let dir = folder();
    let server = each_target(&dir, |target, how| {
        let report = sdk_client_with(
            target,
            "legacy",
            &[greet(1), greet(1), greet(1)],
            &[
                "--elicit-content",
                r#"{"name": "Ada"}"#,
                "--elicit",
                "decline",
                "--elicit",
                "cancel",
            ],
        );
        let texts: Vec<&str> = (0..3).map(|i| only_text(call_result(&report, i))).collect();
        assert_eq!(
            texts,
            ["hello Ada", "declined", "cancelled"],
            "{how}: {report:#}"
        );
        let asked = asked(&report);
        assert_eq!(asked.len(), 3, "{how}: {report:#}");
        for question in asked {
            assert_eq!(question["message"], QUESTION, "{how}");
            assert_eq!(
                question["requested_schema"]["required"],
                json!(["name"]),
                "{how}"
            );
            assert_eq!(
                question["requested_schema"]["properties"]["name"]["type"], "string",
                "{how}"
            );
        }
    });
    // What became of each question is in its call's audit record, and counted.
    let each = [["accepted"], ["declined"], ["cancelled"]];
    let both: Vec<&[&str]> = each.iter().chain(&each).map(|r| &r[..]).collect();
    assert_eq!(sorted(dir.questions("py__greet", 6)), words(&both));
    for outcome in ["accepted", "declined", "cancelled"] {
        assert_eq!(counted(&server.url, "py__greet", outcome), 1.0, "{outcome}");
    }
}

#[test]
fn a_caller_that_cannot_be_asked_gets_the_upstream_question_declined() {
    let dir = folder();
    let server = each_target(&dir, |target, how| {
        // No elicitation declared.
        let report = sdk_client_with(target, "legacy", &[greet(1)], &[]);
        assert_eq!(only_text(call_result(&report, 0)), "declined", "{how}");
    });
    assert_eq!(
        sorted(dir.questions("py__greet", 2)),
        words(&[&["not_passed_on"], &["not_passed_on"]])
    );
    assert_eq!(counted(&server.url, "py__greet", "not_passed_on"), 1.0);
}

#[test]
fn a_2026_07_28_caller_is_asked_the_upstream_question_with_input_required() {
    let dir = folder();
    let server = each_target(&dir, |target, how| {
        // No session to send elicitation/create in: each question is one round.
        let report = sdk_client_with(
            target,
            "2026-07-28",
            &[greet(2), greet(1)],
            &[
                "--elicit-content",
                r#"{"name": "Ada"}"#,
                "--elicit",
                "decline",
                "--elicit",
                "cancel",
            ],
        );
        assert_eq!(report["protocol_version"], "2026-07-28", "{how}");
        assert_eq!(
            only_text(call_result(&report, 0)),
            "hello Ada; declined",
            "{how}: {report:#}"
        );
        assert_eq!(only_text(call_result(&report, 1)), "cancelled", "{how}");
        let asked = asked(&report);
        assert_eq!(asked.len(), 3, "{how}: {report:#}");
        for question in asked {
            assert_eq!(question["message"], QUESTION, "{how}");
        }
    });
    // The calls' own records, written when each ended on its last round.
    let each: [&[&str]; 2] = [&["accepted", "declined"], &["cancelled"]];
    assert_eq!(
        sorted(dir.questions("py__greet", 4)),
        words(&[each[0], each[1], each[0], each[1]])
    );
    for outcome in ["accepted", "declined", "cancelled"] {
        assert_eq!(counted(&server.url, "py__greet", outcome), 1.0, "{outcome}");
    }
}

/// The rounds of a 2026-07-28 client that makes each `tools/call` by hand (see
/// tests/peers/client.py `--round`), answering under the upstream question's key.
fn rounds(target: Target<'_>, rounds: &[[&str; 4]]) -> Value {
    let mut options = vec!["--round-key", "piton_upstream"];
    for round in rounds {
        options.push("--round");
        options.extend(round);
    }
    let report = sdk_client_with(target, "2026-07-28", &[], &options);
    report["rounds"].clone()
}

fn round_text(rounds: &Value, i: usize) -> &str {
    let result = &rounds[i]["result"];
    assert_ne!(
        result["resultType"], "input_required",
        "round {i}: {rounds:#}"
    );
    only_text(result)
}

#[test]
fn a_retry_goes_on_only_with_the_call_it_was_asked_for() {
    let dir = folder();
    let answer = r#"content:{"name": "Ada"}"#;
    let server = each_target(&dir, |target, how| {
        let one = r#"{"times": 1}"#;
        let rounds = rounds(
            target,
            &[
                // 0: asked.
                ["py__greet", one, "-", "-"],
                // 1: the same state for other arguments, then another tool: refused.
                ["py__greet", r#"{"times": 2}"#, "@0", answer],
                ["word_count", r#"{"text": "a"}"#, "@0", answer],
                // 3: a state piton never gave.
                [
                    "py__greet",
                    one,
                    "piton-upstream.AAAAAAAAAAAAAAAAAAAAAA",
                    answer,
                ],
                // 4: no answer: asked again, with a new state.
                ["py__greet", one, "@0", "-"],
                // 5: the answer, with the new state: the call's result.
                ["py__greet", one, "@4", answer],
                // 6: the used state again.
                ["py__greet", one, "@4", answer],
            ],
        );
        for i in [0, 4] {
            let result = &rounds[i]["result"];
            assert_eq!(
                result["resultType"], "input_required",
                "{how} {i}: {rounds:#}"
            );
            let question = &result["inputRequests"]["piton_upstream"];
            assert_eq!(
                question["method"], "elicitation/create",
                "{how}: {result:#}"
            );
            assert_eq!(question["params"]["message"], QUESTION, "{how}");
            let state = result["requestState"].as_str().unwrap_or_default();
            assert!(state.starts_with("piton-upstream."), "{how}: {result:#}");
        }
        assert_ne!(
            rounds[0]["result"]["requestState"], rounds[4]["result"]["requestState"],
            "{how}: a state is good once"
        );
        for (i, refusal) in [
            (1, "other arguments"),
            (2, "was for a call of `py__greet`"),
            (3, "no longer waiting"),
            (6, "no longer waiting"),
        ] {
            assert_eq!(
                rounds[i]["result"]["isError"], true,
                "{how} {i}: {rounds:#}"
            );
            let text = round_text(&rounds, i);
            assert!(text.contains(refusal), "{how} {i}: {text}");
        }
        assert_eq!(round_text(&rounds, 5), "hello Ada", "{how}: {rounds:#}");
    });
    // Each refused retry is audited and counted as a call whose answer was refused;
    // the call that was answered has its question's outcome.
    let refused: &[&str] = &["answer_refused"];
    assert_eq!(
        sorted(dir.questions("py__greet", 8)),
        words(&[refused, refused, refused, &["accepted"]].repeat(2))
    );
    assert_eq!(
        sorted(dir.questions("word_count", 2)),
        words(&[refused, refused])
    );
    for (tool, outcome, count) in [
        ("py__greet", "answer_refused", 3.0),
        ("word_count", "answer_refused", 1.0),
        ("py__greet", "accepted", 1.0),
    ] {
        assert_eq!(
            counted(&server.url, tool, outcome),
            count,
            "{tool} {outcome}"
        );
    }
}

#[test]
fn a_2026_07_28_caller_approves_then_answers_the_upstream_question() {
    let dir = folder();
    // The default policy: an upstream tool that does not have `trust_hints` is asked
    // about, then its server asks its own question.
    let stdio = [
        OsStr::new(piton_bin()),
        OsStr::new("serve"),
        OsStr::new("--plugins"),
        dir.path().as_os_str(),
    ];
    let report = sdk_client_with(
        Target::Stdio(&stdio),
        "2026-07-28",
        &[greet(1)],
        &[
            "--elicit",
            "allow_once",
            "--elicit-content",
            r#"{"name": "Ada"}"#,
        ],
    );
    assert_eq!(
        only_text(call_result(&report, 0)),
        "hello Ada",
        "{report:#}"
    );
    let asked = asked(&report);
    assert_eq!(asked.len(), 2, "{report:#}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("py__greet"),
        "piton's own question first: {report:#}"
    );
    assert_eq!(asked[1]["message"], QUESTION, "{report:#}");
}

#[test]
fn an_upstream_may_ask_four_questions_per_call_and_no_more() {
    let dir = folder();
    let content = r#"{"name": "Ada"}"#;
    let options: Vec<&str> = (0..6).flat_map(|_| ["--elicit-content", content]).collect();
    let server = each_target(&dir, |target, how| {
        let report = sdk_client_with(target, "legacy", &[greet(6)], &options);
        assert_eq!(
            only_text(call_result(&report, 0)),
            "hello Ada; hello Ada; hello Ada; hello Ada; declined; declined",
            "{how}"
        );
        assert_eq!(asked(&report).len(), 4, "{how}: {report:#}");
    });
    let one: &[&str] = &[
        "accepted",
        "accepted",
        "accepted",
        "accepted",
        "not_passed_on",
        "not_passed_on",
    ];
    assert_eq!(sorted(dir.questions("py__greet", 2)), words(&[one, one]));
    assert_eq!(counted(&server.url, "py__greet", "accepted"), 4.0);
    assert_eq!(counted(&server.url, "py__greet", "not_passed_on"), 2.0);
}

/// py_server.py over Streamable HTTP on a free port, killed on drop, and a plugins
/// folder whose piton.toml reaches it as `[mcp.py]`.
pub(super) fn http_upstream(more: &str) -> (crate::support::Running, tempfile::TempDir) {
    let port = crate::replicas::free_port();
    let child = std::process::Command::new(peers().python())
        .arg(peers_file("py_server.py"))
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("py_server.py --http starts");
    let server = crate::support::Running::new(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "py_server.py --http {port} did not listen:\n{}",
            server.stderr.text()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let dir = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let config =
        format!("[mcp.py]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout = \"120s\"\n{more}");
    std::fs::write(dir.path().join("piton.toml"), config).expect("piton.toml written");
    (server, dir)
}

#[test]
fn two_callers_of_one_http_upstream_each_get_their_own_question_and_answer() {
    let (_upstream, dir) = http_upstream("");
    let server = HttpServer::start(dir.path());
    for mode in ["legacy", "2026-07-28"] {
        // Each call of greet waits in the server until both are in, then asks: both
        // questions are asked while both calls are in flight on one connection.
        let call = ("py__greet", json!({"times": 1, "together": 2}));
        let reports: Vec<Value> = std::thread::scope(|scope| {
            let callers: Vec<_> = ["Ada", "Bob"]
                .map(|name| {
                    let (url, call) = (&server.url, call.clone());
                    scope.spawn(move || {
                        let content = format!(r#"{{"name": "{name}"}}"#);
                        sdk_client_with(
                            Target::Url(url),
                            mode,
                            &[call],
                            &["--elicit-content", &content],
                        )
                    })
                })
                .into_iter()
                .collect();
            callers
                .into_iter()
                .map(|caller| caller.join().expect("a client"))
                .collect()
        });
        for (report, name) in reports.iter().zip(["Ada", "Bob"]) {
            assert_eq!(
                only_text(call_result(report, 0)),
                format!("hello {name}"),
                "{mode}: {report:#}\n{}",
                server.log()
            );
            let asked = asked(report);
            assert_eq!(asked.len(), 1, "{mode}: {report:#}");
            assert_eq!(asked[0]["message"], QUESTION, "{mode}");
        }
    }
}
