//! The tool calls of one run: each checked against what the run may call and its
//! budget, made through the registry's call path in a context of its own that names
//! the run, and bounded by what is left of the run's deadline; its outcome as the
//! interpreter reads it.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;

use super::bindings::{CallError, Content, Image, ToolError};
use super::interpreter::ToolCall;
use crate::call::CallContext;
use crate::error::CallError as HostCallError;
use crate::tool::{self, Caller, Nested};

/// What one run may call, and how much.
pub(crate) struct Budget<'a> {
    /// The tools it may call, by registry name.
    pub(crate) allowed: &'a BTreeSet<String>,
    /// The most calls it may make.
    pub(crate) max_calls: u32,
    /// When its deadline passes.
    pub(crate) deadline: Instant,
    /// Its deadline as configured, for messages.
    pub(crate) took: Duration,
}

/// The calls of one run in progress.
pub(crate) struct Calls<'a> {
    caller: &'a dyn Caller,
    run: &'a CallContext,
    /// The code-mode tool's name.
    tool: &'a str,
    budget: Budget<'a>,
    made: u32,
}

impl<'a> Calls<'a> {
    /// The calls of the run `run` of `tool`, made through `caller` within `budget`.
    pub(crate) fn new(
        caller: &'a dyn Caller,
        run: &'a CallContext,
        tool: &'a str,
        budget: Budget<'a>,
    ) -> Self {
        Self {
            caller,
            run,
            tool,
            budget,
            made: 0,
        }
    }

    /// How many calls were made (refused ones too).
    pub(crate) fn made(&self) -> u32 {
        self.made
    }

    /// Answers every call that arrives on `calls` until the run drops its end.
    pub(crate) async fn serve(&mut self, mut calls: mpsc::Receiver<ToolCall>) {
        while let Some(call) = calls.recv().await {
            let answer = self.call(&call.name, &call.arguments).await;
            // A run that stopped waiting (it trapped) needs no answer.
            let _gone = call.answer.send(answer);
        }
    }

    /// One call of the tool `name` with `arguments` (JSON text).
    async fn call(&mut self, name: &str, arguments: &str) -> Result<Vec<Content>, CallError> {
        self.made = self.made.saturating_add(1);
        if self.made > self.budget.max_calls {
            return Err(CallError::Exhausted(format!(
                "the run's budget of {} tool calls is used up ([code] max_calls); do more \
                 in one call, or in one more run",
                self.budget.max_calls
            )));
        }
        if !self.budget.allowed.contains(name) {
            return Err(CallError::Refused(format!(
                "`{name}` is not a tool this program may call ([code] tools, read_only_only)"
            )));
        }
        let Some(left) = self.budget.deadline.checked_duration_since(Instant::now()) else {
            return Err(self.past_deadline(name));
        };
        let args: Value = match serde_json::from_str(arguments) {
            Ok(args) => args,
            Err(e) => {
                return Err(CallError::Tool(ToolError::Input(format!(
                    "the arguments are not JSON: {e}"
                ))));
            }
        };
        let ctx = CallContext::made_by_program(self.run, self.tool);
        let nested =
            match tokio::time::timeout(left, self.caller.call_nested(&ctx, name, args)).await {
                Ok(nested) => nested,
                Err(_) => return Err(self.past_deadline(name)),
            };
        match nested {
            Nested::Ran(Ok(content)) => Ok(content.into_iter().map(content_of).collect()),
            Nested::Ran(Err(tool::ToolError::Input(message))) => {
                Err(CallError::Tool(ToolError::Input(message)))
            }
            Nested::Ran(Err(error)) => Err(CallError::Tool(ToolError::Failed(error.to_string()))),
            Nested::Refused(message) => Err(CallError::Refused(message)),
            Nested::Stopped(error @ HostCallError::UnknownTool { .. }) => {
                Err(CallError::Refused(error.to_string()))
            }
            Nested::Stopped(error) => Err(CallError::Failed(error.to_string())),
        }
    }

    fn past_deadline(&self, name: &str) -> CallError {
        CallError::Exhausted(format!(
            "the run's deadline of {:?} ([code] deadline) passed before `{name}` answered",
            self.budget.took
        ))
    }
}

/// A block of a tool's result as the interpreter takes it.
fn content_of(block: tool::Content) -> Content {
    match block {
        tool::Content::Text { text } => Content::Text(text),
        tool::Content::Json { json } => Content::Json(json.to_string()),
        tool::Content::Image { mime_type, data } => Content::Image(Image { mime_type, data }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A registry that answers every call with one text block and keeps the names.
    #[derive(Default)]
    struct Echo(Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl Caller for Echo {
        async fn call_nested(&self, ctx: &CallContext, name: &str, _args: Value) -> Nested {
            assert!(ctx.made_by().is_some(), "a program's call names its run");
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(name.to_owned());
            Nested::Ran(Ok(vec![tool::Content::text("ok")]))
        }
    }

    fn budget(allowed: &BTreeSet<String>, max_calls: u32) -> Budget<'_> {
        Budget {
            allowed,
            max_calls,
            deadline: Instant::now() + Duration::from_secs(60),
            took: Duration::from_secs(60),
        }
    }

    #[tokio::test]
    async fn the_host_refuses_what_the_interpreter_should_never_ask() {
        let echo = Echo::default();
        let run = CallContext::new();
        let allowed = BTreeSet::from(["word_count".to_owned()]);
        let mut calls = Calls::new(&echo, &run, "run_python", budget(&allowed, 2));
        // A name outside the run's tools: refused here, whatever the guest says.
        let refused = calls.call("files", "{}").await;
        assert!(
            matches!(&refused, Err(CallError::Refused(m)) if m.contains("`files` is not a tool")),
            "{refused:?}"
        );
        assert!(matches!(calls.call("word_count", "{}").await, Ok(content) if content.len() == 1));
        // The third call is over the budget of two (the refused one counts).
        let over = calls.call("word_count", "{}").await;
        assert!(
            matches!(&over, Err(CallError::Exhausted(m)) if m.contains("budget of 2 tool calls")),
            "{over:?}"
        );
        assert_eq!(
            *echo.0.lock().unwrap_or_else(|e| e.into_inner()),
            ["word_count"]
        );
        assert_eq!(calls.made(), 3);
    }

    #[tokio::test]
    async fn arguments_that_are_not_json_are_an_input_error_and_a_past_deadline_ends_the_run() {
        let echo = Echo::default();
        let run = CallContext::new();
        let allowed = BTreeSet::from(["t".to_owned()]);
        let mut calls = Calls::new(&echo, &run, "run_python", budget(&allowed, 10));
        let bad = calls.call("t", "{not json").await;
        assert!(
            matches!(bad, Err(CallError::Tool(ToolError::Input(_)))),
            "{bad:?}"
        );
        let mut late = budget(&allowed, 10);
        late.deadline = Instant::now();
        let mut calls = Calls::new(&echo, &run, "run_python", late);
        let past = calls.call("t", "{}").await;
        assert!(
            matches!(&past, Err(CallError::Exhausted(m)) if m.contains("deadline of 60s")),
            "{past:?}"
        );
        assert!(echo.0.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
    }
}
