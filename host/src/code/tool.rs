//! Code mode's tool (`run_python`): its spec, made from the tools its programs may
//! call, and a call of it, which runs the program in a fresh interpreter instance
//! while its tool calls go through the registry's call path.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

use super::bindings::{Callable, RunLimits};
use super::calls::{Budget, Calls};
use super::describe::description;
use super::interpreter::{Interpreter, Program};
use super::signature::Function;
use crate::call::CallContext;
use crate::config::code::CodeSettings;
use crate::error::CallError;
use crate::limits::Limits;
use crate::tool::{Args, Caller, DynTool, HintsTrust, Nested, Tool, ToolResult, ToolSpec};
use piton_wit::Hints;

/// How much longer than the run's deadline its instance may live: the interpreter
/// notices the deadline itself (and names the line); this stops it if it did not.
const GRACE: Duration = Duration::from_secs(1);

/// Bytes of the interpreter's memory kept for itself, out of the program's heap.
const INTERPRETER_OWN: u64 = 16 << 20;

/// How deep a program's own function calls may nest (CPython's default).
const MAX_DEPTH: u32 = 1000;

/// Code mode's tool.
pub struct CodeTool {
    spec: ToolSpec,
    hints: Hints,
    trust: HintsTrust,
    settings: CodeSettings,
    callables: Vec<Callable>,
    allowed: BTreeSet<String>,
    interpreter: Arc<Interpreter>,
    /// Runs at once: each holds an instance while its tool calls need others.
    runs: Arc<Semaphore>,
}

impl std::fmt::Debug for CodeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeTool")
            .field("name", &self.spec.name)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

impl CodeTool {
    /// The tool `settings` describe, whose programs may call those of `tools` that
    /// the settings allow (never a code-mode tool), on `interpreter`, at most
    /// `max_runs` at once.
    pub(crate) fn new(
        settings: &CodeSettings,
        tools: &[DynTool],
        interpreter: Arc<Interpreter>,
        max_runs: usize,
    ) -> Self {
        let mut functions: Vec<Function> = Vec::new();
        for tool in tools.iter().filter(|t| callable(t.as_ref(), settings)) {
            let taken: Vec<String> = functions.iter().map(|f| f.name.clone()).collect();
            functions.push(Function::of(tool.as_ref(), &taken));
        }
        let allowed = functions.iter().map(|f| f.tool.clone()).collect();
        let chosen = || {
            tools
                .iter()
                .filter(|t| functions.iter().any(|f| f.tool == t.spec().name))
        };
        let hints = combined_hints(chosen().map(|t| t.hints()));
        let trust = if chosen().all(|t| t.hints_trust().is_reliable()) {
            HintsTrust::Native
        } else {
            HintsTrust::Declared
        };
        let callables = functions
            .iter()
            .map(|f| Callable {
                function: f.name.clone(),
                tool: f.tool.clone(),
                params: f.keys(),
            })
            .collect();
        let spec = ToolSpec {
            name: settings.name.clone(),
            description: description(&functions, settings),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "The Python program. Its last expression is the result."
                    }
                },
                "required": ["code"],
                "additionalProperties": false,
            }),
            parallel: true,
        };
        Self {
            spec,
            hints,
            trust,
            settings: settings.clone(),
            callables,
            allowed,
            interpreter,
            runs: Arc::new(Semaphore::new(max_runs.max(1))),
        }
    }

    /// The tools its programs may call, by registry name.
    pub fn callable_tools(&self) -> &BTreeSet<String> {
        &self.allowed
    }

    /// Runs the program in `args` with its tool calls made through `caller`.
    async fn run(
        &self,
        caller: &dyn Caller,
        ctx: &CallContext,
        args: &Args,
    ) -> Result<ToolResult, CallError> {
        let code = args.get("code").and_then(Value::as_str).unwrap_or_default();
        let name = self.spec.name.as_str();
        let _turn = self.runs.acquire().await.map_err(|e| CallError::Host {
            tool: name.to_owned(),
            message: e.to_string(),
        })?;
        let settings = &self.settings;
        let started = Instant::now();
        let program = Program {
            code,
            callables: &self.callables,
            limits: RunLimits {
                deadline_ms: u64::try_from(settings.deadline.as_millis()).unwrap_or(u64::MAX),
                heap: settings.memory.saturating_sub(INTERPRETER_OWN),
                max_depth: MAX_DEPTH,
                max_printed: u32::try_from(settings.max_printed).unwrap_or(u32::MAX),
            },
            instance: Limits {
                memory: settings.memory,
                timeout: settings.deadline + GRACE,
                ..Limits::default()
            },
        };
        let (to_host, from_run) = mpsc::channel(1);
        let mut calls = Calls::new(
            caller,
            ctx,
            name,
            Budget {
                allowed: &self.allowed,
                max_calls: settings.max_calls,
                deadline: started + settings.deadline,
                took: settings.deadline,
            },
        );
        let (outcome, ()) = tokio::join!(
            self.interpreter.run(name, ctx, program, to_host),
            calls.serve(from_run)
        );
        tracing::debug!(
            tool = name,
            calls = calls.made(),
            took_ms = started.elapsed().as_millis() as u64,
            "program run"
        );
        super::answer::answer(outcome)
    }
}

/// Whether a program may call `tool` under `settings`: not a code-mode tool
/// itself, named by `tools` if that is given, and read-only (held to it, not only
/// declared) when `read_only_only` says so.
fn callable(tool: &dyn Tool, settings: &CodeSettings) -> bool {
    let name = &tool.spec().name;
    if tool.only_calls_tools() || *name == settings.name {
        return false;
    }
    if let Some(tools) = &settings.tools
        && !tools.contains(name)
    {
        return false;
    }
    !settings.read_only_only || (tool.hints().is_read_only() && tool.hints_trust().is_reliable())
}

/// The hints of a run that may call tools with each of `hints`: read-only if every
/// one is, destructive or open-world if any is, idempotent if every one is.
fn combined_hints(hints: impl Iterator<Item = Hints>) -> Hints {
    let (mut read_only, mut destructive, mut idempotent, mut open_world) =
        (true, false, true, false);
    for h in hints {
        read_only &= h.is_read_only();
        destructive |= h.is_destructive();
        idempotent &= h.is_idempotent();
        open_world |= h.is_open_world();
    }
    let combined = if read_only {
        Hints::read_only()
    } else {
        Hints::new(false, destructive, idempotent, true).unwrap_or_else(|_| Hints::default())
    };
    combined.open_world(open_world)
}

/// A caller for a run made without the registry (a [`Tool::call`]): it refuses
/// every tool call.
struct NoRegistry;

#[async_trait::async_trait]
impl Caller for NoRegistry {
    async fn call_nested(&self, _ctx: &CallContext, name: &str, _args: Value) -> Nested {
        Nested::Refused(format!(
            "`{name}` cannot be called: this run was not made through a registry"
        ))
    }
}

#[async_trait::async_trait]
impl Tool for CodeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn hints(&self) -> Hints {
        self.hints
    }

    fn hints_trust(&self) -> HintsTrust {
        self.trust
    }

    fn deadline(&self) -> Option<Duration> {
        Some(self.settings.deadline + GRACE)
    }

    fn source(&self) -> crate::source::ToolSource {
        crate::source::ToolSource::Bundled("code-mode".into())
    }

    fn only_calls_tools(&self) -> bool {
        true
    }

    async fn call(
        &self,
        ctx: &CallContext,
        args: &Args,
        _hints: Hints,
    ) -> Result<ToolResult, CallError> {
        self.run(&NoRegistry, ctx, args).await
    }

    async fn call_through(
        &self,
        caller: &dyn Caller,
        ctx: &CallContext,
        args: &Args,
        _hints: Hints,
    ) -> Result<ToolResult, CallError> {
        self.run(caller, ctx, args).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_s_hints_are_the_worst_of_its_tools() {
        let read = Hints::read_only().open_world(false);
        assert_eq!(combined_hints([read, read].into_iter()), read);
        assert_eq!(
            combined_hints(std::iter::empty()),
            read,
            "no tool: nothing happens"
        );
        let adds = Hints::new(false, false, false, false).unwrap();
        let web = Hints::read_only();
        let both = combined_hints([adds, web].into_iter());
        assert!(!both.is_read_only() && !both.is_destructive() && !both.is_idempotent());
        assert!(both.is_open_world());
        let deletes = Hints::new(false, true, true, false).unwrap();
        assert!(combined_hints([read, deletes].into_iter()).is_destructive());
    }
}
