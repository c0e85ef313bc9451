//! Native tools for the tests of the serving paths (stdio/lean_tests.rs,
//! http/lean_tests.rs): each answers one way (text, JSON, nothing, a failure, a trap,
//! its trace context) or waits to be released, so that a test sees what a transport
//! does with each kind of answer and with a call dropped midway.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::call::CallContext;
use crate::error::{CallError, Trap};
use crate::registry::Registry;
use crate::tool::{Args, Content, Tool, ToolError, ToolResult, ToolSpec};
use piton_wit::Hints;

/// What a test tool does when called.
#[derive(Clone)]
pub(super) enum Does {
    Text,
    /// Answers as `Text`, but says it changes things (not read-only): consent asks
    /// about it where it lets read-only calls through.
    Change,
    Object,
    Empty,
    /// 64 KiB of text.
    Big,
    Fail,
    Trap,
    /// Answers with the trace context it was called in.
    Trace,
    /// Tells `started`, then waits for `release`; sets `dropped` if the call is
    /// dropped before it ends.
    Wait {
        started: Arc<Notify>,
        release: Arc<Notify>,
        dropped: Arc<AtomicBool>,
    },
}

pub(super) struct TestTool {
    spec: ToolSpec,
    does: Does,
}

/// Sets its flag when dropped unless disarmed: the call future went away early.
struct DropFlag(Arc<AtomicBool>, bool);

impl Drop for DropFlag {
    fn drop(&mut self) {
        if self.1 {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

#[async_trait::async_trait]
impl Tool for TestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn hints(&self) -> Hints {
        match self.does {
            Does::Change => Hints::worst().open_world(false),
            _ => Hints::read_only().open_world(false),
        }
    }

    async fn call(
        &self,
        ctx: &CallContext,
        args: &Args,
        _hints: Hints,
    ) -> Result<ToolResult, CallError> {
        match &self.does {
            Does::Trace => Ok(Ok(vec![Content::text(format!(
                "{:?} {:?}",
                ctx.trace.map(|t| t.to_string()),
                ctx.tracestate.as_ref().map(|s| s.as_str())
            ))])),
            Does::Text | Does::Change => Ok(Ok(vec![Content::text(format!(
                "got {}",
                Value::from(args.clone())
            ))])),
            Does::Object => Ok(Ok(vec![Content::Json {
                json: json!({"words": 3, "list": [1, "two"]}),
            }])),
            Does::Empty => Ok(Ok(Vec::new())),
            Does::Big => Ok(Ok(vec![Content::text("x".repeat(64 * 1024))])),
            Does::Fail => Ok(Err(ToolError::Failed("it did not work".into()))),
            Does::Trap => Err(CallError::trap(
                self.spec.name.clone(),
                Trap::Guest("boom".into()),
            )),
            Does::Wait {
                started,
                release,
                dropped,
            } => {
                let mut flag = DropFlag(dropped.clone(), true);
                started.notify_one();
                release.notified().await;
                flag.1 = false;
                Ok(Ok(vec![Content::text("released")]))
            }
        }
    }
}

pub(super) fn tool(name: &str, does: Does) -> TestTool {
    TestTool {
        spec: ToolSpec {
            name: name.into(),
            description: format!("the {name} tool"),
            input_schema: json!({"type": "object"}),
            parallel: true,
        },
        does,
    }
}

pub(super) struct Waiter {
    pub(super) started: Arc<Notify>,
    pub(super) release: Arc<Notify>,
    pub(super) dropped: Arc<AtomicBool>,
}

/// A registry of one tool of each kind: `text`, `object`, `empty`, `big`, `fail`,
/// `trap`, `trace` and `wait` (released through the [`Waiter`]).
pub(super) fn registry() -> (Registry, Waiter) {
    let waiter = Waiter {
        started: Arc::default(),
        release: Arc::default(),
        dropped: Arc::default(),
    };
    let mut registry = Registry::new();
    let tools = [
        tool("text", Does::Text),
        tool("object", Does::Object),
        tool("empty", Does::Empty),
        tool("big", Does::Big),
        tool("fail", Does::Fail),
        tool("trap", Does::Trap),
        tool("trace", Does::Trace),
        tool(
            "wait",
            Does::Wait {
                started: waiter.started.clone(),
                release: waiter.release.clone(),
                dropped: waiter.dropped.clone(),
            },
        ),
    ];
    for tool in tools {
        registry.add(tool).expect("a valid tool");
    }
    (registry, waiter)
}
