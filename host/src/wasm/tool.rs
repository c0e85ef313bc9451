//! A tool that is a WebAssembly component (a `plugin`, or one tool of a
//! `toolbox-plugin`): loaded once, run in a fresh instance per call.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTableError;
use wasmtime::{Store, UpdateDeadline};

use super::bindings::{self, Plugin, PluginPre, ToolboxPlugin, ToolboxPluginPre};
use super::runtime::WasmRuntime;
use super::sandbox::Sandbox;
use crate::call::CallContext;
use crate::call::notes::Denials;
use crate::config::ToolConfig;
use crate::error::{CallError, Trap};
use crate::grants::{Capabilities, Grants};
use crate::limits::{Limits, OnTrap};
use crate::source::ToolSource;
use crate::tool::{
    Args, ComponentInfo, Content, HintsTrust, SandboxReport, Tool, ToolError, ToolResult, ToolSpec,
};
use piton_wit::Hints;

/// A wasm tool: its spec and hints, read once at load, and its pre-linked component
/// (shared by the tools of one toolbox).
pub struct WasmTool {
    runtime: WasmRuntime,
    pre: Pre,
    pub(super) spec: ToolSpec,
    pub(super) hints: Hints,
    source: ToolSource,
    limits: Limits,
    grants: Grants,
    /// The grants' mount folders, held open since they were set.
    pins: super::fs::Pins,
    on_trap: OnTrap,
    info: ComponentInfo,
}

impl std::fmt::Debug for WasmTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmTool")
            .field("name", &self.spec.name)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// The pre-linked component a tool runs from.
#[derive(Clone)]
pub(super) enum Pre {
    /// A `plugin`: the component is the tool.
    Plugin(Arc<PluginPre<Sandbox>>),
    /// One tool of a `toolbox-plugin`.
    Toolbox {
        /// The toolbox, shared by its tools.
        pre: Arc<ToolboxPluginPre<Sandbox>>,
        /// The name the toolbox gave the tool (piton.toml may rename it; the guest
        /// still knows it by this one).
        tool: Arc<str>,
        /// Whether the tool's `hints-for` can answer anything but none.
        has_hints_for: bool,
    },
}

/// A fresh instance of a tool's component.
pub(super) enum Guest {
    /// Of a `plugin`.
    Plugin(Plugin),
    /// Of a `toolbox-plugin`.
    Toolbox(ToolboxPlugin),
}

/// The most bytes the host copies out of a guest's `spec` (its name, description and
/// input schema together): the limits of [`check_spec_size`](crate::tool::check_spec_size)
/// and room for the name. A guest that returns more is refused at load before its
/// text is copied.
pub(super) const SPEC_FUEL: usize =
    crate::tool::MAX_DESCRIPTION + crate::tool::MAX_INPUT_SCHEMA + 64 * 1024;

/// Room in a call's hostcall fuel beyond its output limit (list headers, a guest's
/// own host calls); `hints-for` gets this alone.
const CALL_FUEL_SLACK: usize = 1024 * 1024;

/// What wasmtime says when a guest hands the host more than its hostcall fuel.
pub(super) const FUEL_EXHAUSTED: &str = "fuel allocated for hostcalls has been exhausted";

/// Raised by the epoch callback when a call's deadline has passed.
#[derive(Debug, thiserror::Error)]
#[error("deadline exceeded")]
struct DeadlineExceeded;

/// What to do inside a fresh instance.
pub(super) type GuestOp<R> = Box<
    dyn for<'s> FnOnce(
            &'s mut Store<Sandbox>,
            Guest,
        ) -> Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 's>>
        + Send,
>;

impl WasmTool {
    /// A tool of `pre` with no spec yet, no grants and the default limits.
    pub(super) fn new(
        runtime: WasmRuntime,
        pre: Pre,
        source: ToolSource,
        info: ComponentInfo,
    ) -> Self {
        Self {
            runtime,
            pre,
            spec: ToolSpec {
                name: String::new(),
                description: String::new(),
                input_schema: serde_json::Value::Null,
                parallel: true,
            },
            hints: Hints::default(),
            source,
            limits: Limits::default(),
            grants: Grants::default(),
            pins: super::fs::Pins::default(),
            on_trap: OnTrap::default(),
            info,
        }
    }

    /// The component's hash, size and imports.
    pub fn info(&self) -> &ComponentInfo {
        &self.info
    }

    /// Whether the tool is one of a `toolbox-plugin`'s (else it is a `plugin`).
    pub fn in_toolbox(&self) -> bool {
        matches!(self.pre, Pre::Toolbox { .. })
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The user's grants, which each call's hints bound.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Takes the user's grants, and opens each mount's folder: a call later refuses
    /// a mount whose folder is no longer this one (replaced by a link, say).
    fn set_grants(&mut self, grants: Grants) {
        self.pins = super::fs::Pins::new(grants.mounts.iter().map(|m| m.host.as_path()));
        self.grants = grants;
    }

    /// What a trap of this tool does.
    pub fn on_trap(&self) -> OnTrap {
        self.on_trap
    }

    /// This tool with piton.toml's settings for it: grants, limits and trap handling,
    /// then the overrides of name, description, parallel and hints (which can only
    /// narrow the tool's own). The caller checks the new name; a
    /// [`Registry`](crate::registry::Registry) does. The error names the key at fault.
    pub fn configured(mut self, settings: &ToolConfig) -> Result<Self, String> {
        self.hints = settings.hints.narrow(self.hints)?;
        if let Some(name) = &settings.name {
            self.spec.name.clone_from(name);
        }
        if let Some(description) = &settings.description {
            self.spec.description.clone_from(description);
        }
        if let Some(parallel) = settings.parallel {
            self.spec.parallel = parallel;
        }
        self.set_grants(settings.grants.clone());
        self.limits = settings.limits;
        self.on_trap = settings.on_trap;
        Ok(self)
    }

    /// Runs `op` in a fresh instance with `caps` and nothing else, under `limits`: a
    /// memory limit, a deadline (epoch callback for running code, a timer for code
    /// waiting in a host call), and captured output logged with the tool's name.
    /// The sandbox reports what it is granted and refuses to `denials`.
    ///
    /// `fuel` bounds the bytes the host copies out of the guest in one go (a result,
    /// or the arguments of one host call): see [`Store::set_hostcall_fuel`].
    pub(super) async fn in_fresh_instance<R: Send>(
        &self,
        denials: Denials,
        limits: &Limits,
        caps: &Capabilities,
        fuel: usize,
        op: GuestOp<R>,
    ) -> Result<R, CallError> {
        let name = self.spec.name.as_str();
        let _slot = self
            .runtime
            .inner
            .slots
            .acquire()
            .await
            .map_err(|e| self.host_fault(e))?;
        let sandbox =
            Sandbox::new(limits, caps, &self.pins, denials).map_err(|e| self.host_fault(e))?;
        let mut store = self.new_store(limits, sandbox);
        store.set_hostcall_fuel(fuel);
        let outcome = tokio::time::timeout(limits.timeout, async {
            let guest = match &self.pre {
                Pre::Plugin(pre) => Guest::Plugin(pre.instantiate_async(&mut store).await?),
                Pre::Toolbox { pre, .. } => {
                    Guest::Toolbox(pre.instantiate_async(&mut store).await?)
                }
            };
            op(&mut store, guest).await
        })
        .await;

        let sandbox = store.data();
        for (stream, captured) in [("stdout", &sandbox.stdout), ("stderr", &sandbox.stderr)] {
            if let Some(text) = captured.text() {
                // Debug-quoted, so a guest's newlines cannot forge log lines.
                tracing::info!(tool = name, stream, output = ?text, "guest output");
            }
        }
        let error = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Err(_elapsed) => return Err(CallError::trap(name, Trap::Deadline(limits.timeout))),
            Ok(Err(error)) => error,
        };
        let trap = if sandbox.limiter.exceeded {
            Trap::Memory(sandbox.limiter.limit())
        } else if error.is::<DeadlineExceeded>() {
            Trap::Deadline(limits.timeout)
        } else if error.chain().any(|e| {
            matches!(
                e.downcast_ref::<ResourceTableError>(),
                Some(ResourceTableError::Full)
            )
        }) {
            Trap::Resources(sandbox.table.max_capacity())
        } else {
            let mut message = root_message(&error);
            if ran_out_of_stack(&error) {
                message.push_str(&format!(
                    " (it was recursing: most likely it ran out of stack; piton builds \
                     Rust tools with {} KiB of stack, and building with RUSTFLAGS=\
                     \"-C link-arg=-zstack-size=BYTES\" gives more)",
                    piton_guest_builder::STACK_SIZE >> 10
                ));
            }
            if let Some(stderr) = sandbox.stderr.text() {
                let tail: String = stderr
                    .trim_end()
                    .chars()
                    .rev()
                    .take(500)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                message.push_str(&format!(" (stderr: {tail})"));
            }
            Trap::Guest(message)
        };
        Err(CallError::trap(name, trap))
    }

    /// A store with no capabilities, the memory limiter, and a deadline checked at
    /// every epoch tick.
    fn new_store(&self, limits: &Limits, sandbox: Sandbox) -> Store<Sandbox> {
        let mut store = Store::new(&self.runtime.inner.engine, sandbox);
        store.limiter(|sandbox| &mut sandbox.limiter);
        let deadline = Instant::now() + limits.timeout;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Err(wasmtime::Error::new(DeadlineExceeded))
            } else {
                // Yield at every tick so that a guest that never stops computing
                // still lets the executor run other calls.
                Ok(UpdateDeadline::Yield(1))
            }
        });
        store
    }

    /// A fault of the host's own (no instance slot, a mount that vanished): what the
    /// registry may retry for an idempotent call.
    fn host_fault(&self, error: impl std::fmt::Display) -> CallError {
        CallError::Host {
            tool: self.spec.name.clone(),
            message: error.to_string(),
        }
    }

    /// The arguments as the JSON text the guest gets, serialized from the borrowed
    /// map (a JSON object always serializes; the error path only keeps this honest).
    fn args_text(&self, args: &Args) -> Result<String, CallError> {
        serde_json::to_string(args).map_err(|e| self.host_fault(e))
    }

    fn guest_trap(&self, message: String) -> CallError {
        CallError::trap(self.spec.name.clone(), Trap::Guest(message))
    }

    /// Turns the guest's content into the host's, enforcing the output limit.
    fn convert(
        &self,
        result: Result<Vec<bindings::Content>, bindings::ToolError>,
    ) -> Result<ToolResult, CallError> {
        let limit = self.limits.max_output;
        let size: usize = match &result {
            Ok(list) => list
                .iter()
                .map(|c| match c {
                    bindings::Content::Text(t) | bindings::Content::Json(t) => t.len(),
                    bindings::Content::Image(i) => i.data.len() + i.mime_type.len(),
                })
                .sum(),
            Err(bindings::ToolError::Input(m) | bindings::ToolError::Failed(m)) => m.len(),
        };
        if size as u64 > limit {
            return Err(CallError::trap(
                self.spec.name.clone(),
                Trap::Output {
                    limit,
                    actual: size as u64,
                },
            ));
        }
        let list = match result {
            Ok(list) => list,
            Err(bindings::ToolError::Input(m)) => return Ok(Err(ToolError::Input(m))),
            Err(bindings::ToolError::Failed(m)) => return Ok(Err(ToolError::Failed(m))),
        };
        let mut content = Vec::with_capacity(list.len());
        for block in list {
            content.push(match block {
                bindings::Content::Text(text) => Content::Text { text },
                bindings::Content::Json(text) => Content::Json {
                    json: serde_json::from_str(&text).map_err(|e| {
                        self.guest_trap(format!("returned JSON content that does not parse: {e}"))
                    })?,
                },
                bindings::Content::Image(image) => Content::Image {
                    mime_type: image.mime_type,
                    data: image.data,
                },
            });
        }
        Ok(Ok(content))
    }
}

#[async_trait::async_trait]
impl Tool for WasmTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn hints(&self) -> Hints {
        self.hints
    }

    /// Enforced, unless the tool may open raw TCP connections (a grant with
    /// `tcp = true`): nothing checks what it sends there, so a read-only call is
    /// only declared read-only.
    fn hints_trust(&self) -> HintsTrust {
        if self.hints.is_open_world() && self.grants.network.iter().any(|g| g.tcp) {
            HintsTrust::Unenforced
        } else {
            HintsTrust::Enforced
        }
    }

    fn deadline(&self) -> Option<std::time::Duration> {
        Some(self.limits.timeout)
    }

    fn sandbox(&self) -> Option<SandboxReport> {
        Some(SandboxReport {
            component: self.info.clone(),
            limits: self.limits,
            on_trap: self.on_trap,
            capabilities: self.grants.for_call(self.hints),
        })
    }

    fn source(&self) -> ToolSource {
        self.source.clone()
    }

    async fn hints_for(&self, ctx: &CallContext, args: &Args) -> Result<Option<Hints>, CallError> {
        if let Pre::Toolbox {
            has_hints_for: false,
            ..
        } = &self.pre
        {
            return Ok(None);
        }
        let _admitted = self.admit()?;
        let text = self.args_text(args)?;
        let tool = self.toolbox_name();
        let answer = self
            .in_fresh_instance(
                ctx.denials(),
                &self.limits,
                &Capabilities::default(),
                CALL_FUEL_SLACK,
                Box::new(move |store, guest| {
                    Box::pin(async move {
                        match guest {
                            Guest::Plugin(p) => {
                                p.piton_tool_tool().call_hints_for(store, &text).await
                            }
                            Guest::Toolbox(b) => {
                                b.piton_tool_toolbox()
                                    .call_hints_for(store, &tool, &text)
                                    .await
                            }
                        }
                    })
                }),
            )
            .await?;
        answer
            .map(|hints| {
                from_wit_hints(hints)
                    .map_err(|e| self.guest_trap(format!("hints-for returned {e}")))
            })
            .transpose()
    }

    async fn call(
        &self,
        ctx: &CallContext,
        args: &Args,
        hints: Hints,
    ) -> Result<ToolResult, CallError> {
        let _admitted = self.admit()?;
        match (self.run(ctx, args, hints).await, self.on_trap) {
            (Err(CallError::Trap { trap, .. }), OnTrap::Error) => {
                let message = format!("the tool {trap}");
                ctx.notes().trap_as_error(trap);
                Ok(Err(ToolError::Failed(message)))
            }
            (result, _) => result,
        }
    }
}

impl WasmTool {
    /// Counts a call in flight until dropped, or refuses it as busy (see
    /// [`WasmRuntime::admit`]). Load's spec reads are not counted: they wait, so a
    /// flood of calls cannot make a reload drop tools.
    fn admit(&self) -> Result<super::runtime::Admitted<'_>, CallError> {
        self.runtime.admit().map_err(|busy| CallError::Busy {
            tool: self.spec.name.clone(),
            instances: busy.instances,
            queued: busy.queued,
        })
    }

    /// The name the toolbox knows this tool by; empty for a `plugin`.
    fn toolbox_name(&self) -> Arc<str> {
        match &self.pre {
            Pre::Plugin(_) => Arc::from(""),
            Pre::Toolbox { tool, .. } => tool.clone(),
        }
    }

    async fn run(
        &self,
        ctx: &CallContext,
        args: &Args,
        hints: Hints,
    ) -> Result<ToolResult, CallError> {
        let text = self.args_text(args)?;
        let tool = self.toolbox_name();
        let result = self
            .in_fresh_instance(
                ctx.denials(),
                &self.limits,
                &self.grants.for_call(hints),
                usize::try_from(self.limits.max_output)
                    .unwrap_or(usize::MAX)
                    .saturating_add(CALL_FUEL_SLACK),
                Box::new(move |store, guest| {
                    Box::pin(async move {
                        match guest {
                            Guest::Plugin(p) => p.piton_tool_tool().call_run(store, &text).await,
                            Guest::Toolbox(b) => {
                                b.piton_tool_toolbox().call_run(store, &tool, &text).await
                            }
                        }
                    })
                }),
            )
            .await
            .map_err(|error| match error {
                CallError::Trap {
                    tool,
                    trap: Trap::Guest(message),
                } if message.contains(FUEL_EXHAUSTED) => CallError::Trap {
                    tool,
                    trap: Trap::Guest(format!(
                        "returned (or passed in one host call) data over its output limit of {}; \
                         stopped before piton copied it",
                        crate::limits::format_size(self.limits.max_output)
                    )),
                },
                other => other,
            })?;
        self.convert(result)
    }
}

pub(super) fn from_wit_hints(h: bindings::ToolHints) -> Result<Hints, piton_wit::HintsError> {
    Hints::new(h.read_only, h.destructive, h.idempotent, h.open_world)
}

/// The innermost cause of a wasmtime error: the trap or the reason, without the
/// backtrace and context lines that wrap it.
/// Whether a trap looks like the guest running out of stack: an access out of its
/// memory's bounds while recursing (a backtrace of many frames among a few functions).
/// A Rust or C guest's stack lies first in its memory, so overflowing it goes below
/// address 0, which is out of bounds. wasmtime keeps the innermost 20 frames.
fn ran_out_of_stack(error: &wasmtime::Error) -> bool {
    /// A backtrace at least this long, of at most [`FEW`] functions, is recursion.
    const LONG: usize = 16;
    const FEW: usize = 3;
    if error.downcast_ref::<wasmtime::Trap>() != Some(&wasmtime::Trap::MemoryOutOfBounds) {
        return false;
    }
    let Some(backtrace) = error.downcast_ref::<wasmtime::WasmBacktrace>() else {
        return false;
    };
    let frames = backtrace.frames();
    let functions: std::collections::BTreeSet<_> = frames
        .iter()
        .map(|f| (f.module().name(), f.func_index()))
        .collect();
    frames.len() >= LONG && functions.len() <= FEW
}

pub(super) fn root_message(error: &wasmtime::Error) -> String {
    match error.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => error.root_cause().to_string(),
    }
}

pub(super) fn trap_text(error: CallError) -> String {
    match error {
        CallError::Trap { trap, .. } => trap.to_string(),
        other => other.to_string(),
    }
}
