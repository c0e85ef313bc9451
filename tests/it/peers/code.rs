//! Code mode through the official Python SDK client: `piton serve --code-mode` lists
//! `run_python` and runs a program over stdio and Streamable HTTP, on both protocol
//! revisions; and a program's call that the consent policy asks about is asked
//! about through that client (2025-11-25 `elicitation/create` mid-run; 2026-07-28
//! `input_required` while the run waits), once per call.

use std::ffi::OsStr;
use std::path::Path;

use piton_tests::plugins;
use serde_json::{Value, json};

use super::{
    HttpServer, Target, call_result, listed, only_text, piton_bin, sdk_client, sdk_client_with,
};
use crate::support::piton;

/// word_count and files, files granted a data folder (outside the plugins folder)
/// holding `a.txt`.
struct Setup {
    dir: tempfile::TempDir,
    data: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = crate::support::plugins_folder(&[
            ("word_count.wasm", plugins::WORD_COUNT),
            ("files.wasm", plugins::FILES),
        ]);
        let data = tempfile::tempdir().expect("a data folder");
        std::fs::write(data.path().join("a.txt"), "one two three").expect("a.txt");
        let toml = format!(
            "[tools.files]\nmounts = [{{ host = {:?}, guest = \"/data\", mode = \"write\" }}]\n",
            data.path()
        );
        std::fs::write(dir.path().join("piton.toml"), toml).expect("piton.toml");
        Self { dir, data }
    }

    fn plugins(&self) -> &Path {
        self.dir.path()
    }

    /// `piton serve --code-mode [flags] --plugins DIR` over stdio.
    fn stdio<'a>(&'a self, flags: &'a [&'a str]) -> Vec<&'a OsStr> {
        let mut line = vec![
            OsStr::new(piton_bin()),
            OsStr::new("serve"),
            OsStr::new("--code-mode"),
        ];
        line.extend(flags.iter().map(OsStr::new));
        line.extend([OsStr::new("--plugins"), self.plugins().as_os_str()]);
        line
    }

    /// The same over Streamable HTTP.
    fn http(&self, flags: &[&str]) -> HttpServer {
        let mut command = piton();
        command
            .args(["serve", "--code-mode", "--http", "127.0.0.1:0"])
            .args(flags)
            .arg("--plugins")
            .arg(self.plugins());
        HttpServer::start_command(command)
    }
}

const PROGRAM: &str =
    "n = word_count(text=files(op='read', path='/data/a.txt'))\nprint('read it')\n{'words': n}";

fn run(code: &str) -> (&'static str, Value) {
    ("run_python", json!({ "code": code }))
}

/// What every client must see of `run_python` and of [`PROGRAM`]'s run.
fn assert_ran(report: &Value, how: &str) {
    let tool = listed(report, "run_python");
    let description = tool["description"].as_str().unwrap_or_default();
    assert!(
        description.contains("def word_count(text: str) -> Any:  # read-only."),
        "{how}: {description}"
    );
    assert_eq!(tool["inputSchema"]["required"], json!(["code"]), "{how}");
    assert_eq!(
        tool["annotations"]["destructiveHint"], true,
        "{how}: files may delete"
    );
    let result = call_result(report, 0);
    assert_eq!(result["isError"], false, "{how}: {result:#}");
    let blocks = result["content"].as_array().expect("content");
    assert_eq!(blocks[0]["text"], r#"{"words":3}"#, "{how}: {result:#}");
    assert_eq!(
        blocks[1]["text"], "printed:\nread it\n",
        "{how}: {result:#}"
    );
    let failed = call_result(report, 1);
    assert_eq!(failed["isError"], true, "{how}: {failed:#}");
    assert!(
        only_text(failed).starts_with("the program does not parse (line 1)"),
        "{how}: {failed:#}"
    );
}

#[test]
fn sdk_client_runs_a_program_over_stdio_and_http_on_both_revisions() {
    let setup = Setup::new();
    let calls = [run(PROGRAM), run("x +")];
    let stdio = setup.stdio(&["--approve", "never"]);
    for mode in ["auto", "legacy"] {
        let report = sdk_client(Target::Stdio(&stdio), mode, &calls);
        assert_ran(&report, &format!("stdio {mode}"));
    }
    let server = setup.http(&["--approve", "never"]);
    for mode in ["auto", "legacy"] {
        let report = sdk_client(Target::Url(&server.url), mode, &calls);
        assert_ran(&report, &format!("http {mode}"));
    }
    assert!(!server.log().contains("ERROR"), "{}", server.log());
}

const DELETE: &str = "files(op='delete', path='/data/a.txt')\n'deleted'";

/// The questions a report says the client was asked.
fn asked(report: &Value) -> Vec<String> {
    report["asked"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|q| q["message"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_program_s_call_is_asked_about_through_the_client_on_both_revisions() {
    // 2025-11-25 over stdio: elicitation/create during the run.
    let setup = Setup::new();
    let stdio = setup.stdio(&[]);
    let report = sdk_client_with(
        Target::Stdio(&stdio),
        "legacy",
        &[run(DELETE)],
        &["--elicit", "allow_once"],
    );
    assert_eq!(only_text(call_result(&report, 0)), "deleted", "{report:#}");
    let questions = asked(&report);
    assert_eq!(questions.len(), 1, "{report:#}");
    assert!(
        questions[0].starts_with("Allow `files` to run?"),
        "{questions:?}"
    );
    assert!(questions[0].contains("/data/a.txt"), "{questions:?}");
    assert!(!setup.data.path().join("a.txt").exists());

    // 2026-07-28 over HTTP: the run waits on the replica while the request answers
    // input_required; the retry carries the answer and gets the run's result.
    let setup = Setup::new();
    let server = setup.http(&[]);
    let report = sdk_client_with(
        Target::Url(&server.url),
        "2026-07-28",
        &[run(DELETE)],
        &["--elicit", "deny"],
    );
    assert_eq!(report["protocol_version"], "2026-07-28", "{report:#}");
    let result = call_result(&report, 0);
    assert_eq!(result["isError"], true, "{report:#}");
    assert!(
        only_text(result).contains("`files` was not run: the user declined"),
        "{report:#}"
    );
    assert_eq!(asked(&report).len(), 1, "{report:#}");
    assert!(
        setup.data.path().join("a.txt").exists(),
        "declined: nothing deleted"
    );
    let report = sdk_client_with(
        Target::Url(&server.url),
        "2026-07-28",
        &[run(DELETE)],
        &["--elicit", "allow_once"],
    );
    assert_eq!(only_text(call_result(&report, 0)), "deleted", "{report:#}");
    assert!(!setup.data.path().join("a.txt").exists());
}
