//! A tool that is a WebAssembly component (a `plugin`, or one tool of a
//! `toolbox-plugin`): loaded once, run in a fresh instance per call.

use super::bindings;
use super::instance::{Instances, RunAnswer, host_fault};
use crate::call::CallContext;
use crate::config::ToolConfig;
use crate::error::{CallError, Trap};
use crate::grants::Grants;
use crate::limits::{Limits, OnTrap};
use crate::source::ToolSource;
use crate::tool::{
    Args, ComponentInfo, Content, HintsTrust, SandboxReport, Tool, ToolError, ToolResult, ToolSpec,
};
use piton_wit::{Hints, NarrowError};

/// A wasm tool: its spec and hints, read once at load, and its pre-linked component
/// (shared by the tools of one toolbox).
pub struct WasmTool {
    instances: Instances,
    spec: ToolSpec,
    hints: Hints,
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

impl WasmTool {
    /// The tool whose `spec` and `hints` its component gave, run by `instances`,
    /// with piton.toml's `settings` for it: grants, limits and trap handling, then
    /// the overrides of name, description, parallel and hints (which can only narrow
    /// the tool's own). The caller checks the new name; a
    /// [`Registry`](crate::registry::Registry) does. The error names the key at fault.
    pub(super) fn new(
        instances: Instances,
        source: ToolSource,
        info: ComponentInfo,
        mut spec: ToolSpec,
        hints: Hints,
        settings: &ToolConfig,
    ) -> Result<Self, NarrowError> {
        let hints = settings.hints.narrow(hints)?;
        if let Some(name) = &settings.name {
            spec.name.clone_from(name);
        }
        if let Some(description) = &settings.description {
            spec.description.clone_from(description);
        }
        if let Some(parallel) = settings.parallel {
            spec.parallel = parallel;
        }
        let grants = settings.grants.clone();
        Ok(Self {
            instances,
            spec,
            hints,
            source,
            limits: settings.limits,
            // Each mount's folder, opened now: a call later refuses a mount whose
            // folder is no longer this one (replaced by a link, say).
            pins: super::fs::Pins::new(grants.mounts.iter().map(|m| m.host.as_path())),
            grants,
            on_trap: settings.on_trap,
            info,
        })
    }

    /// The component's hash, size and imports.
    pub fn info(&self) -> &ComponentInfo {
        &self.info
    }

    /// Whether its calls run the component's optimised code; else its baseline code,
    /// until the optimised compile queued at load is done (see
    /// [`WasmRuntime::optimised`](super::WasmRuntime::optimised)).
    pub fn optimised(&self) -> bool {
        self.instances.optimised()
    }

    /// Whether the tool is one of a `toolbox-plugin`'s (else it is a `plugin`).
    pub fn in_toolbox(&self) -> bool {
        self.instances.in_toolbox()
    }

    /// Whether the tool's `hints-for` may answer anything but none: always for a
    /// `plugin` (the world exports it), as declared for a toolbox's tool.
    pub fn has_hints_for(&self) -> bool {
        self.instances.has_hints_for()
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// How many instances were made ahead of this tool's calls, and how many calls
    /// took one: each call still runs in an instance nobody used before.
    pub fn made_ahead(&self) -> super::ready::MadeAhead {
        self.instances.made_ahead()
    }

    /// The user's grants, which each call's hints bound.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// What a trap of this tool does.
    pub fn on_trap(&self) -> OnTrap {
        self.on_trap
    }

    /// This tool with piton.toml's `settings` for it, as [`WasmTool::new`] applies
    /// them to its spec and hints: grants, limits and trap handling replaced, then
    /// the overrides of name, description, parallel and hints (which can only narrow
    /// the tool's own). The caller checks the new name; a
    /// [`Registry`](crate::registry::Registry) does. The error names the key at fault.
    pub fn configured(self, settings: &ToolConfig) -> Result<Self, NarrowError> {
        Self::new(
            self.instances,
            self.source,
            self.info,
            self.spec,
            self.hints,
            settings,
        )
    }

    /// The arguments as the JSON text the guest gets, serialized from the borrowed
    /// map (a JSON object always serializes; the error path only keeps this honest).
    fn args_text(&self, args: &Args) -> Result<String, CallError> {
        serde_json::to_string(args).map_err(|e| host_fault(&self.spec.name, e))
    }

    fn guest_trap(&self, message: String) -> CallError {
        CallError::trap(self.spec.name.clone(), Trap::Guest(message))
    }

    /// Turns the guest's content into the host's, enforcing the output limit.
    fn convert(&self, result: RunAnswer) -> Result<ToolResult, CallError> {
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
        if !self.instances.has_hints_for() {
            return Ok(None);
        }
        let _admitted = self.admit()?;
        let text = self.args_text(args)?;
        self.instances
            .hints_for(&self.spec.name, ctx.denials(), &self.limits, text)
            .await
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
    /// Counts a call in flight until dropped, or refuses it as busy.
    fn admit(&self) -> Result<super::runtime::Admitted<'_>, CallError> {
        self.instances.admit(&self.spec.name)
    }

    async fn run(
        &self,
        ctx: &CallContext,
        args: &Args,
        hints: Hints,
    ) -> Result<ToolResult, CallError> {
        let text = self.args_text(args)?;
        let result = self
            .instances
            .run(
                &self.spec.name,
                ctx.denials(),
                &self.pins,
                &self.limits,
                &self.grants.for_call(hints),
                text,
            )
            .await?;
        self.convert(result)
    }
}
