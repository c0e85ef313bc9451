//! Code mode's interpreter component (guest-sdk/code/interpreter, carried in the
//! binary): compiled once per runtime (or taken from the compile cache, like any
//! component), linked with WASI that grants nothing and with the `registry` import,
//! and run in a fresh instance for each program.
//!
//! The instance's tool calls leave it through [`ToolCall`]s on a channel: whoever
//! runs the program ([`super::tool`]) answers them through the registry's call
//! path, so the store holds no reference to the registry.

use sha2::{Digest as _, Sha256};
use tokio::sync::{mpsc, oneshot};
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};
use wasmtime_wasi::{WasiCtxView, WasiView};

use super::bindings::{
    CallError, Callable, CodeMode, CodeModePre, Content, Finished, RunError, RunLimits,
};
use crate::call::CallContext;
use crate::error::CallError as HostCallError;
use crate::grants::Capabilities;
use crate::limits::Limits;
use crate::wasm::WasmRuntime;
use crate::wasm::fs::Pins;
use crate::wasm::sandbox::Sandbox;
use crate::wasm::trap::{answer_of, arm};

/// The most bytes the host copies out of the interpreter in one go: a tool call's
/// arguments, or the run's result.
const FUEL: usize = 17 << 20;

/// One tool call of a running program, waiting for its answer.
pub(crate) struct ToolCall {
    /// The tool's name in the registry.
    pub(crate) name: String,
    /// Its arguments, JSON text as the program made it.
    pub(crate) arguments: String,
    /// Where the answer goes.
    pub(crate) answer: oneshot::Sender<Result<Vec<Content>, CallError>>,
}

/// One run's store: a sandbox that grants nothing, and where its tool calls go.
pub(crate) struct CodeStore {
    sandbox: Sandbox,
    calls: mpsc::Sender<ToolCall>,
}

impl WasiView for CodeStore {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.sandbox.ctx()
    }
}

impl super::bindings::piton::tool::types::Host for CodeStore {}

impl super::bindings::piton::tool::registry::Host for CodeStore {
    async fn call(&mut self, name: String, arguments: String) -> Result<Vec<Content>, CallError> {
        let (answer, answered) = oneshot::channel();
        let call = ToolCall {
            name,
            arguments,
            answer,
        };
        if self.calls.send(call).await.is_err() {
            return Err(CallError::Failed(
                "the run is over: no tool is called".into(),
            ));
        }
        answered.await.unwrap_or_else(|_| {
            Err(CallError::Failed(
                "the run ended before the tool call answered".into(),
            ))
        })
    }
}

/// Why code mode's interpreter cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("code mode's interpreter cannot be loaded: {0}")]
pub struct InterpreterError(String);

/// The compiled interpreter, ready to be instantiated. Cheap to share.
pub(crate) struct Interpreter {
    runtime: WasmRuntime,
    pre: CodeModePre<CodeStore>,
}

impl std::fmt::Debug for Interpreter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpreter").finish_non_exhaustive()
    }
}

/// What one run is given: the program, its functions, its limits.
pub(crate) struct Program<'a> {
    pub(crate) code: &'a str,
    pub(crate) callables: &'a [Callable],
    pub(crate) limits: RunLimits,
    /// The instance's own limits: its memory, and the deadline past which it is
    /// stopped whatever it is doing.
    pub(crate) instance: Limits,
}

impl Interpreter {
    /// The interpreter carried in the binary, compiled for `runtime` (or taken
    /// from its compile cache) and linked.
    pub(crate) async fn load(runtime: &WasmRuntime) -> Result<Self, InterpreterError> {
        let fail = |e: &dyn std::fmt::Display| InterpreterError(e.to_string());
        let bytes = crate::bundled::code_interpreter().to_vec();
        let cache = runtime.clone();
        let (bytes, sha256, cached) = tokio::task::spawn_blocking(move || {
            let sha256 = hex::encode(Sha256::digest(&bytes));
            let cached = cache.cached(&sha256);
            (bytes, sha256, cached)
        })
        .await
        .map_err(|e| fail(&e))?;
        let component = match cached {
            Some(component) => component,
            None => runtime.compile(bytes, sha256).await.map_err(|e| fail(&e))?,
        };
        let mut linker = Linker::new(&runtime.inner.engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| fail(&e))?;
        CodeMode::add_to_linker::<CodeStore, HasSelf<CodeStore>>(&mut linker, |store| store)
            .map_err(|e| fail(&e))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(CodeModePre::new)
            .map_err(|e| fail(&e))?;
        Ok(Self {
            runtime: runtime.clone(),
            pre,
        })
    }

    /// Runs `program` in a fresh instance that grants nothing (what it is granted,
    /// nothing, is noted in the run's `ctx`); its tool calls are sent to `calls`.
    /// `tool` names the run in errors and logs. An instance that traps (its memory
    /// limit, its deadline) is an `Err`.
    pub(crate) async fn run(
        &self,
        tool: &str,
        ctx: &CallContext,
        program: Program<'_>,
        calls: mpsc::Sender<ToolCall>,
    ) -> Result<Result<Finished, RunError>, HostCallError> {
        let host_fault = |e: &dyn std::fmt::Display| HostCallError::Host {
            tool: tool.to_owned(),
            message: e.to_string(),
        };
        let _admitted = self.runtime.admit().map_err(|busy| HostCallError::Busy {
            tool: tool.to_owned(),
            instances: busy.instances,
            queued: busy.queued,
        })?;
        let slot =
            (self.runtime.inner.slots.clone().acquire_owned().await).map_err(|e| host_fault(&e))?;
        let limits = program.instance;
        let sandbox = Sandbox::new(
            &limits,
            &Capabilities::default(),
            &Pins::default(),
            ctx.denials(),
        )
        .map_err(|e| host_fault(&e))?;
        let mut store = Store::new(&self.runtime.inner.engine, CodeStore { sandbox, calls });
        store.limiter(|store| &mut store.sandbox.limiter);
        arm(&mut store, limits.timeout);
        store.set_hostcall_fuel(FUEL);
        let outcome = tokio::time::timeout(limits.timeout, async {
            let guest = self.pre.instantiate_async(&mut store).await?;
            guest
                .piton_tool_program()
                .call_run(&mut store, program.code, program.callables, program.limits)
                .await
        })
        .await;
        let answer = answer_of(tool, &limits, &store.data().sandbox, outcome);
        drop(store);
        drop(slot);
        answer
    }
}
