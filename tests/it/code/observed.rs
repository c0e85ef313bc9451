//! What the operator and the person see of a program's calls: each one has its
//! own audit record naming the run and is counted in its tool's metrics, and each
//! one the consent policy asks about is asked about, on its own, through the
//! client of the person who made the run.

use std::sync::{Arc, Mutex};

use piton_host::CallContext;
use piton_host::call::{Elicit, ElicitError, Question};
use piton_tests::plugins;
use serde_json::{Value, json};

use super::{Code, code_toml};
use crate::observe::{metric, records};

#[tokio::test]
async fn each_call_of_a_program_is_audited_naming_the_run_and_counted() {
    let toml = format!(
        "{}[audit]\nto = \"{{DATA}}/audit.log\"\narguments = true\n",
        code_toml("")
    );
    let code = Code::load_with(&[("word_count.wasm", plugins::WORD_COUNT)], &toml, |_| {}).await;
    let run = CallContext::new();
    let program = "word_count(text='a b') + word_count(text='c')";
    let answer = code
        .registry()
        .call_with(&run, "run_python", json!({ "code": program }))
        .await;
    assert_eq!(crate::support::texts(&answer.expect("no trap")), ["3"]);
    let observer = code.loader.observer().expect("an observer");
    observer.flush();
    let records = records(&code.data.path().join("audit.log"), 3);
    let nested: Vec<&Value> = records
        .iter()
        .filter(|r| r["tool"] == "word_count")
        .collect();
    assert_eq!(nested.len(), 2, "{records:#?}");
    for record in &nested {
        assert_eq!(
            record["made_by"],
            json!({"tool": "run_python", "run": run.id().get()}),
            "{record:#}"
        );
        assert_eq!(record["outcome"], "ok");
        assert_ne!(record["call"], json!(run.id().get()), "a call of its own");
    }
    assert_eq!(nested[0]["arguments"], json!({"text": "a b"}));
    let own = records
        .iter()
        .find(|r| r["tool"] == "run_python")
        .expect("the run's record");
    assert_eq!(own["call"], json!(run.id().get()));
    assert!(
        own.get("made_by").is_none(),
        "a client made the run: {own:#}"
    );
    assert_eq!(own["arguments"], json!({ "code": program }));
    let text = observer.metrics_text();
    for (tool, calls) in [("word_count", 2.0), ("run_python", 1.0)] {
        assert_eq!(
            metric(&text, "piton_tool_calls_total", &[("tool", tool)]),
            Some(calls),
            "{text}"
        );
    }
}

/// An asker that answers every question with `decision` and keeps the questions.
struct Person {
    decision: &'static str,
    asked: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Elicit for Person {
    async fn elicit(&self, question: &Question) -> Result<Value, ElicitError> {
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(question.message.clone());
        Ok(json!({"action": "accept", "content": {"decision": self.decision}}))
    }
}

/// files, with a write mount on the data folder holding `a.txt` and `b.txt`, served
/// as `piton serve` serves it: asking before calls that are not read-only.
async fn files_asking() -> Code {
    let toml = format!(
        "{}[tools.files]\nmounts = [{{ host = \"{{DATA}}\", guest = \"/data\", mode = \"write\" }}]\n",
        code_toml("")
    );
    let prepare = |data: &std::path::Path| {
        std::fs::write(data.join("a.txt"), "a").expect("a.txt");
        std::fs::write(data.join("b.txt"), "b").expect("b.txt");
    };
    Code::load_as(&[("files.wasm", plugins::FILES)], &toml, prepare, true).await
}

const DELETE_BOTH: &str = "names = sorted(files(op='list', path='/data'))\nfor n in names:\n    files(op='delete', path='/data/' + n)\nnames";

#[tokio::test]
async fn each_call_the_policy_asks_about_is_asked_about_on_its_own() {
    let code = files_asking().await;
    let person = Arc::new(Person {
        decision: "allow_once",
        asked: Mutex::default(),
    });
    let run = CallContext::new()
        .with_asker(person.clone())
        .with_scope("session-test");
    let answer = code
        .registry()
        .call_with(&run, "run_python", json!({ "code": DELETE_BOTH }))
        .await;
    assert_eq!(
        crate::support::texts(&answer.expect("no trap")),
        [r#"["a.txt","b.txt"]"#]
    );
    let asked = person
        .asked
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    // Two deletes asked about, each naming its file; the list is read-only and the
    // run itself does nothing but its calls, so neither is asked about.
    assert_eq!(asked.len(), 2, "{asked:#?}");
    for (question, name) in asked.iter().zip(["a.txt", "b.txt"]) {
        assert!(question.starts_with("Allow `files` to run?"), "{question}");
        assert!(question.contains(&format!("/data/{name}")), "{question}");
    }
    assert!(!code.data.path().join("a.txt").exists() && !code.data.path().join("b.txt").exists());
}

#[tokio::test]
async fn a_declined_call_ends_the_run_and_nothing_after_it_runs() {
    let code = files_asking().await;
    let person = Arc::new(Person {
        decision: "deny",
        asked: Mutex::default(),
    });
    let run = CallContext::new().with_asker(person.clone());
    let answer = code
        .registry()
        .call_with(&run, "run_python", json!({ "code": DELETE_BOTH }))
        .await
        .expect("no trap");
    let Err(piton_host::ToolError::Failed(text)) = answer else {
        panic!("an error result: {answer:?}");
    };
    assert!(
        text.starts_with("the program's run ended at a tool call (line 3)"),
        "{text}"
    );
    assert!(
        text.contains("`files` was not run: the user declined"),
        "{text}"
    );
    assert_eq!(
        person.asked.lock().unwrap_or_else(|e| e.into_inner()).len(),
        1
    );
    assert!(code.data.path().join("a.txt").exists() && code.data.path().join("b.txt").exists());
}

#[tokio::test]
async fn a_client_that_cannot_be_asked_gets_the_refusal_and_nothing_changes() {
    let code = files_asking().await;
    // No asker: as a client without the elicitation capability.
    let text = code.fails(DELETE_BOTH).await;
    assert!(
        text.starts_with("the program's run ended at a tool call (line 3)"),
        "{text}"
    );
    assert!(text.contains("this MCP client cannot be asked"), "{text}");
    assert!(code.data.path().join("a.txt").exists());
    // Read-only calls are not asked about, so they run.
    assert_eq!(
        code.ok("sorted(files(op='list', path='/data'))").await,
        [r#"["a.txt","b.txt"]"#]
    );
}

/// The same through `piton serve` on stdio, as a client's run is made: the audit log
/// holds the run's record and one per call of its program, each naming the run.
#[test]
fn serve_on_stdio_audits_each_call_of_a_program_naming_the_run() {
    let folder = crate::support::plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let toml = format!("[audit]\nto = {:?}\n", log.display().to_string());
    std::fs::write(folder.path().join("piton.toml"), toml).expect("write piton.toml");
    let mut command = crate::support::piton();
    command
        .args(["serve", "--code-mode", "--approve", "never", "--plugins"])
        .arg(folder.path());
    let mut piton = crate::mcp_client::StdioPiton::run(command);
    let program = "sum([word_count(text=t) for t in ['a', 'a b', 'a b c']])";
    let answer = piton.request(
        1,
        "tools/call",
        json!({"name": "run_python", "arguments": {"code": program}}),
    );
    assert_eq!(answer["result"]["content"][0]["text"], "6", "{answer}");
    let records = records(&log, 4);
    assert_eq!(records.len(), 4, "{records:#?}");
    let run = records
        .iter()
        .find(|r| r["tool"] == "run_python")
        .expect("the run's record");
    assert_eq!(run["outcome"], "ok", "{run:#}");
    assert!(
        run.get("made_by").is_none(),
        "a client made the run: {run:#}"
    );
    let nested: Vec<&Value> = records
        .iter()
        .filter(|r| r["tool"] == "word_count")
        .collect();
    assert_eq!(nested.len(), 3, "{records:#?}");
    for record in nested {
        assert_eq!(
            record["made_by"],
            json!({"tool": "run_python", "run": run["call"]}),
            "{record:#}"
        );
        assert_eq!(record["outcome"], "ok", "{record:#}");
        assert_ne!(record["call"], run["call"], "a call of its own");
    }
}
