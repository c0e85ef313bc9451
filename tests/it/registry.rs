//! The registry's call path with native tools: names, argument checks, batches.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use piton_host::{
    Args, CallContext, CallError, Content, Hints, LoadErrorKind, Registry, Tool, ToolError,
    ToolResult, ToolSpec,
};
use serde_json::{Value, json};

/// A native tool that records when each call starts and ends.
struct Recorder {
    spec: ToolSpec,
    hints: Hints,
    log: Arc<Mutex<Vec<String>>>,
}

fn recorder(name: &str, parallel: bool, log: &Arc<Mutex<Vec<String>>>) -> Recorder {
    Recorder {
        spec: ToolSpec {
            name: name.into(),
            description: format!("records {name}"),
            input_schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            parallel,
        },
        hints: Hints::default(),
        log: log.clone(),
    }
}

#[async_trait::async_trait]
impl Tool for Recorder {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn hints(&self) -> Hints {
        self.hints
    }

    async fn call(
        &self,
        _ctx: &CallContext,
        args: &Args,
        _hints: Hints,
    ) -> Result<ToolResult, CallError> {
        let name = &self.spec.name;
        self.log
            .lock()
            .expect("log lock")
            .push(format!("start {name}"));
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.log
            .lock()
            .expect("log lock")
            .push(format!("end {name}"));
        Ok(Ok(vec![Content::text(format!(
            "{name} {}",
            Value::Object(args.clone())
        ))]))
    }
}

fn log() -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(Vec::new()))
}

#[tokio::test]
async fn unknown_tools_name_the_known_ones() {
    let log = log();
    let mut registry = Registry::new();
    registry.add(recorder("a", true, &log)).unwrap();
    registry.add(recorder("b", true, &log)).unwrap();
    let error = registry.call("c", json!({})).await.unwrap_err();
    assert_eq!(error.to_string(), "unknown tool `c`; known tools: a, b");
}

#[tokio::test]
async fn arguments_that_break_the_schema_never_reach_the_tool() {
    let log = log();
    let mut registry = Registry::new();
    registry.add(recorder("a", true, &log)).unwrap();
    for args in [json!("text"), json!([1]), json!(null), json!({"n": "x"})] {
        let result = registry.call("a", args.clone()).await.unwrap();
        assert!(
            matches!(result, Err(ToolError::Input(_))),
            "{args}: {result:?}"
        );
    }
    assert!(log.lock().unwrap().is_empty(), "the tool was entered");
    assert_eq!(
        texts(&registry.call("a", json!({"n": 1})).await.unwrap()),
        [r#"a {"n":1}"#]
    );
}

#[test]
fn a_duplicate_name_is_an_error_not_an_override() {
    let log = log();
    let mut registry = Registry::new();
    registry.add(recorder("a", true, &log)).unwrap();
    let error = registry.add(recorder("a", false, &log)).unwrap_err();
    assert!(
        matches!(error.kind, LoadErrorKind::Duplicate { .. }),
        "{error}"
    );
    assert!(
        registry.get("a").unwrap().spec().parallel,
        "the first stays"
    );
}

#[test]
fn bad_names_schemas_and_hints_do_not_register() {
    let log = log();
    let mut registry = Registry::new();
    let mut bad_name = recorder("has space", true, &log);
    bad_name.spec.name = "has space".into();
    let mut bad_schema = recorder("s", true, &log);
    bad_schema.spec.input_schema = json!({"type": "string"});
    for (tool, expected) in [
        (bad_name, "tool name \"has space\" is not allowed"),
        (bad_schema, "the input schema must describe an object"),
    ] {
        let error = registry.add(tool).unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
    assert!(registry.is_empty());
    // Hints that contradict each other cannot even be made, so no tool has them.
    let error = Hints::new(true, true, true, false).unwrap_err();
    assert!(
        error.to_string().contains("hints contradict each other"),
        "{error}"
    );
}

#[tokio::test]
async fn a_batch_runs_parallel_tools_together_then_the_others_alone_in_order() {
    let log = log();
    let mut registry = Registry::new();
    registry.add(recorder("p1", true, &log)).unwrap();
    registry.add(recorder("p2", true, &log)).unwrap();
    registry.add(recorder("s1", false, &log)).unwrap();
    registry.add(recorder("s2", false, &log)).unwrap();
    let calls = ["s1", "p1", "s2", "p2", "nope"].map(|name| (name.to_owned(), json!({})));
    let results = registry.call_batch(calls.to_vec()).await;

    let texts: Vec<_> = results
        .iter()
        .take(4)
        .map(|r| texts(r.as_ref().unwrap())[0].clone())
        .collect();
    assert_eq!(
        texts,
        ["s1 {}", "p1 {}", "s2 {}", "p2 {}"],
        "results in call order"
    );
    assert!(matches!(results[4], Err(CallError::UnknownTool { .. })));

    let log = log.lock().unwrap().clone();
    let starts_before_ends = log[..2].iter().all(|e| e.starts_with("start p"))
        && log[2..4].iter().all(|e| e.starts_with("end p"));
    assert!(starts_before_ends, "parallel tools overlap: {log:?}");
    assert_eq!(
        log[4..],
        ["start s1", "end s1", "start s2", "end s2"],
        "then each alone, in order"
    );
}

use crate::support::texts;

/// A tool whose first call meets a host fault.
struct Flaky {
    spec: ToolSpec,
    hints: Hints,
    calls: Arc<Mutex<u32>>,
}

#[async_trait::async_trait]
impl Tool for Flaky {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn hints(&self) -> Hints {
        self.hints
    }

    async fn call(
        &self,
        _ctx: &CallContext,
        _args: &Args,
        _hints: Hints,
    ) -> Result<ToolResult, CallError> {
        let mut calls = self.calls.lock().expect("calls lock");
        *calls += 1;
        if *calls == 1 {
            return Err(CallError::Host {
                tool: self.spec.name.clone(),
                message: "no instance slot".into(),
            });
        }
        Ok(Ok(vec![Content::text("done")]))
    }
}

#[tokio::test]
async fn only_idempotent_calls_are_retried_once_after_a_host_fault() {
    for (idempotent, expect_ok) in [(true, true), (false, false)] {
        let calls = Arc::new(Mutex::new(0));
        let mut registry = Registry::new();
        registry
            .add(Flaky {
                spec: recorder("flaky", true, &log()).spec,
                hints: Hints::default().idempotent(idempotent),
                calls: calls.clone(),
            })
            .unwrap();
        let result = registry.call("flaky", json!({})).await;
        assert_eq!(
            result.is_ok(),
            expect_ok,
            "idempotent = {idempotent}: {result:?}"
        );
        assert_eq!(*calls.lock().unwrap(), if idempotent { 2 } else { 1 });
    }
}

#[tokio::test]
async fn a_wasm_tool_and_a_server_sharing_a_name_space_are_refused_naming_both_either_way() {
    use crate::support::load;
    use piton_host::upstream::{StdioCommand, UpstreamServer};
    use piton_tests::guests;
    let server = || {
        UpstreamServer::stdio("x", StdioCommand::new("true", Vec::<String>::new())).expect("a name")
    };
    let tool = || async {
        let settings = piton_host::config::ToolConfig {
            name: Some("x__y".into()),
            description: Some("Shadows x's tool y.".into()),
            ..Default::default()
        };
        load(guests::HOSTILE_COUNTER)
            .await
            .configured(&settings)
            .expect("renamed")
    };

    // The wasm tool first: the server is refused.
    let mut registry = Registry::new();
    registry.add(tool().await).expect("no server yet");
    let error = registry.add_group(server()).unwrap_err().to_string();
    for part in ["mcp:x", guests::HOSTILE_COUNTER, "`x__y`", "[mcp.x]"] {
        assert!(error.contains(part), "{part} in {error}");
    }

    // The server first: the wasm tool is refused.
    let mut registry = Registry::new();
    registry.add_group(server()).expect("no tool yet");
    let error = registry.add(tool().await).unwrap_err().to_string();
    for part in ["mcp:x", guests::HOSTILE_COUNTER, "`x__y`", "[mcp.x]"] {
        assert!(error.contains(part), "{part} in {error}");
    }
}
