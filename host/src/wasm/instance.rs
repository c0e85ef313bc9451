//! A fresh instance of a tool's component, made for one guest function and dropped
//! after it: the sandbox it gets, the memory limit, deadline and hostcall fuel it
//! runs under, and how its failures become traps. Loading reads a component's specs
//! and hints through it; a [`WasmTool`](super::tool::WasmTool) runs `hints-for` and
//! `run` through it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::Store;

use super::bindings::{self, Guest};
use super::code::{Code, Linking, Now};
use super::engine::Tier;
use super::fs::Pins;
use super::ready::{Made, ReadyPool};
use super::runtime::{Admitted, WasmRuntime};
use super::sandbox::Sandbox;
use super::trap::{answer_of, arm};
use crate::call::notes::Denials;
use crate::error::{CallError, Trap};
use crate::grants::Capabilities;
use crate::limits::Limits;
use piton_wit::Hints;

/// The most bytes the host copies out of a guest's `spec` (its name, description and
/// input schema together): the limits of [`check_spec_size`](crate::tool::check_spec_size)
/// and room for the name. A guest that returns more is refused at load before its
/// text is copied.
pub(super) const SPEC_FUEL: usize =
    crate::tool::MAX_DESCRIPTION + crate::tool::MAX_INPUT_SCHEMA + 64 * 1024;

/// The most bytes the host copies out of a toolbox's `tools` (every spec together).
pub(super) const TOOLBOX_FUEL: usize = 8 << 20;

/// Room in a call's hostcall fuel beyond its output limit (list headers, a guest's
/// own host calls); `hints-for` gets this alone.
const CALL_FUEL_SLACK: usize = 1024 * 1024;

/// What wasmtime says when a guest hands the host more than its hostcall fuel.
pub(super) const FUEL_EXHAUSTED: &str = "fuel allocated for hostcalls has been exhausted";

/// Which tool of its component an [`Instances`] runs.
#[derive(Clone)]
pub(super) enum Role {
    /// A `plugin`'s one tool.
    Plugin,
    /// One tool of a `toolbox-plugin`.
    Toolbox {
        /// The name the toolbox gave the tool (piton.toml may rename it; the guest
        /// still knows it by this one).
        tool: Arc<str>,
        /// Whether the tool's `hints-for` can answer anything but none.
        has_hints_for: bool,
    },
}

/// What to do inside a fresh instance.
pub(super) type GuestOp<R> = Box<
    dyn for<'s> FnOnce(
            &'s mut Store<Sandbox>,
            Guest,
        ) -> Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 's>>
        + Send,
>;

/// What a call's `run` gives back: the guest's content or its tool error, not yet
/// checked against the output limit.
pub(super) type RunAnswer = Result<Vec<bindings::Content>, bindings::ToolError>;

/// Makes fresh instances of one component's code on its runtime.
#[derive(Clone)]
pub(super) struct Instances {
    runtime: WasmRuntime,
    code: Arc<Code>,
    role: Role,
    /// Instances of the component made ahead, shared by a toolbox's tools.
    ready: Arc<ReadyPool>,
}

impl Instances {
    /// Instances of `code`, made on `runtime`, for the tool `role` says.
    pub(super) fn new(runtime: WasmRuntime, code: Arc<Code>, role: Role) -> Self {
        Self {
            runtime,
            code,
            role,
            ready: Arc::default(),
        }
    }

    /// Instances of the same component for another tool (of the same toolbox),
    /// sharing the instances made ahead.
    pub(super) fn sibling(&self, role: Role) -> Self {
        Self {
            runtime: self.runtime.clone(),
            code: self.code.clone(),
            role,
            ready: self.ready.clone(),
        }
    }

    /// Counts of the instances made ahead of calls of this component.
    pub(super) fn made_ahead(&self) -> super::ready::MadeAhead {
        super::ready::MadeAhead(self.ready.clone())
    }

    /// Whether its calls run the optimised code now.
    pub(super) fn optimised(&self) -> bool {
        matches!(self.code.now(), Now::Ready(linking) if linking.tier() == Tier::Optimised)
    }

    /// The code to run now: when there is none yet (the tools were made from kept
    /// specs), a baseline compile is started and its specs checked, and this waits.
    async fn linking(&self, name: &str) -> Result<Arc<Linking>, CallError> {
        let now = match self.code.now() {
            Now::Awaiting => {
                self.code.want();
                self.runtime.compile_for_call(&self.code);
                self.code.settled().await
            }
            now => now,
        };
        match now {
            Now::Ready(linking) => Ok(linking),
            Now::Refused(why) => Err(host_fault(
                name,
                format!(
                    "its specs kept in the compile cache (or written into it by `piton \
                     build`) are not the ones its code gives ({why}); piton loads its \
                     tools again from its code: list them again and retry"
                ),
            )),
            Now::Awaiting => Err(host_fault(name, "its code is not compiled")),
        }
    }

    /// Whether the component is a `toolbox-plugin` (else it is a `plugin`).
    pub(super) fn in_toolbox(&self) -> bool {
        matches!(self.role, Role::Toolbox { .. })
    }

    /// Counts a call of the tool `name` in flight until dropped, or refuses it as
    /// busy (see [`WasmRuntime::admit`]). Load's spec reads are not counted: they
    /// wait, so a flood of calls cannot make a reload drop tools.
    pub(super) fn admit(&self, name: &str) -> Result<Admitted<'_>, CallError> {
        self.runtime.admit().map_err(|busy| CallError::Busy {
            tool: name.to_owned(),
            instances: busy.instances,
            queued: busy.queued,
        })
    }

    /// A `plugin`'s spec and hints, asked in an instance with no capabilities under
    /// the default limits, copying at most [`SPEC_FUEL`] bytes.
    pub(super) async fn read_plugin(
        &self,
    ) -> Result<
        (
            bindings::plugin::piton::tool::types::ToolSpec,
            bindings::ToolHints,
        ),
        CallError,
    > {
        self.in_fresh_instance(
            Whose::loading(),
            &Pins::default(),
            &Limits::default(),
            &Capabilities::default(),
            SPEC_FUEL,
            Box::new(|store, guest| {
                Box::pin(async move {
                    let Guest::Plugin(plugin) = guest else {
                        return Err(wasmtime::Error::msg("not a plugin"));
                    };
                    let guest = plugin.piton_tool_tool();
                    let spec = guest.call_spec(&mut *store).await?;
                    let hints = guest.call_hints(&mut *store).await?;
                    Ok((spec, hints))
                })
            }),
        )
        .await
    }

    /// A toolbox's declarations of its tools, asked in an instance with no
    /// capabilities under the default limits, copying at most [`TOOLBOX_FUEL`] bytes.
    pub(super) async fn read_toolbox(&self) -> Result<Vec<bindings::ToolDecl>, CallError> {
        self.in_fresh_instance(
            Whose::loading(),
            &Pins::default(),
            &Limits::default(),
            &Capabilities::default(),
            TOOLBOX_FUEL,
            Box::new(|store, guest| {
                Box::pin(async move {
                    let Guest::Toolbox(toolbox) = guest else {
                        return Err(wasmtime::Error::msg("not a toolbox"));
                    };
                    toolbox.piton_tool_toolbox().call_tools(store).await
                })
            }),
        )
        .await
    }

    /// The tool `name`'s `hints-for` on the arguments `args` (JSON text), asked in an
    /// instance with no capabilities under `limits`. Hints that contradict
    /// themselves are a trap.
    pub(super) async fn hints_for(
        &self,
        name: &str,
        denials: Denials,
        limits: &Limits,
        args: String,
    ) -> Result<Option<Hints>, CallError> {
        let tool = self.toolbox_name();
        let answer = self
            .in_fresh_instance(
                Whose { name, denials },
                &Pins::default(),
                limits,
                &Capabilities::default(),
                CALL_FUEL_SLACK,
                Box::new(move |store, guest| {
                    Box::pin(async move {
                        match guest {
                            Guest::Plugin(p) => {
                                p.piton_tool_tool().call_hints_for(store, &args).await
                            }
                            Guest::Toolbox(b) => {
                                b.piton_tool_toolbox()
                                    .call_hints_for(store, &tool, &args)
                                    .await
                            }
                        }
                    })
                }),
            )
            .await?;
        answer
            .map(|hints| {
                from_wit_hints(hints).map_err(|e| {
                    CallError::trap(name, Trap::Guest(format!("hints-for returned {e}")))
                })
            })
            .transpose()
    }

    /// Whether asking `hints-for` can give anything but none: false for a toolbox's
    /// tool that declared it has none.
    pub(super) fn has_hints_for(&self) -> bool {
        !matches!(
            self.role,
            Role::Toolbox {
                has_hints_for: false,
                ..
            }
        )
    }

    /// The tool `name`'s `run` on the arguments `args` (JSON text), in an instance
    /// with `caps` (its mounts' folders as `pins` holds them) under `limits`. A guest
    /// that hands the host more than its output limit in one go is stopped before
    /// the host copies it.
    pub(super) async fn run(
        &self,
        name: &str,
        denials: Denials,
        pins: &Pins,
        limits: &Limits,
        caps: &Capabilities,
        args: String,
    ) -> Result<RunAnswer, CallError> {
        let tool = self.toolbox_name();
        self.in_fresh_instance(
            Whose { name, denials },
            pins,
            limits,
            caps,
            usize::try_from(limits.max_output)
                .unwrap_or(usize::MAX)
                .saturating_add(CALL_FUEL_SLACK),
            Box::new(move |store, guest| {
                Box::pin(async move {
                    match guest {
                        Guest::Plugin(p) => p.piton_tool_tool().call_run(store, &args).await,
                        Guest::Toolbox(b) => {
                            b.piton_tool_toolbox().call_run(store, &tool, &args).await
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
                    crate::limits::format_size(limits.max_output)
                )),
            },
            other => other,
        })
    }

    /// The name the toolbox knows this tool by; empty for a `plugin`.
    fn toolbox_name(&self) -> Arc<str> {
        match &self.role {
            Role::Plugin => Arc::from(""),
            Role::Toolbox { tool, .. } => tool.clone(),
        }
    }

    /// Runs `op` in a fresh instance with `caps` and nothing else, under `limits`: a
    /// memory limit, a deadline (epoch callback for running code, a timer for code
    /// waiting in a host call), and captured output logged with the tool's `name`.
    /// `pins` holds the folders of the mounts `caps` may give. The sandbox reports
    /// what it is granted and refuses to `denials`.
    ///
    /// `fuel` bounds the bytes the host copies out of the guest in one go (a result,
    /// or the arguments of one host call): see [`Store::set_hostcall_fuel`].
    async fn in_fresh_instance<R: Send>(
        &self,
        whose: Whose<'_>,
        pins: &Pins,
        limits: &Limits,
        caps: &Capabilities,
        fuel: usize,
        op: GuestOp<R>,
    ) -> Result<R, CallError> {
        let Whose { name, denials } = whose;
        // The code there is now, for the whole of this instance's life.
        let linking = self.linking(name).await?;
        let optimised = linking.tier() == Tier::Optimised;
        // A call takes an instance made ahead when one waits and fits its memory
        // limit; loading's reads make their own. Instances are made ahead only of
        // optimised code, which is never replaced.
        let calling = !name.is_empty();
        if calling && !optimised {
            self.code.want();
        }
        let reaper = &self.runtime.inner.reaper;
        let ready = match (calling && optimised).then(|| self.ready.take()).flatten() {
            Some(made) if made.store.data().limiter.used() <= limits.memory => Some(made.take()),
            Some(too_big) => {
                let (store, _, slot) = too_big.take();
                reaper.drop_later(store, slot);
                None
            }
            None => None,
        };
        let (ready, slot) = match ready {
            Some((store, guest, slot)) => (Some((store, guest)), slot),
            None => {
                let slot = self.runtime.inner.slots.clone().acquire_owned().await;
                (None, slot.map_err(|e| host_fault(name, e))?)
            }
        };
        let sandbox = match Sandbox::new(limits, caps, pins, denials) {
            Ok(sandbox) => sandbox,
            Err(e) => {
                if let Some((store, _)) = ready {
                    reaper.drop_later(store, slot);
                }
                return Err(host_fault(name, e));
            }
        };
        let (mut store, guest) = match ready {
            Some((mut store, guest)) => {
                // The instance's memory so far counts against the call's limit.
                let used = store.data().limiter.used();
                *store.data_mut() = sandbox;
                store.data_mut().limiter.count_used(used);
                arm(&mut store, limits.timeout);
                (store, Some(guest))
            }
            None => (new_store(&linking, limits, sandbox), None),
        };
        store.set_hostcall_fuel(fuel);
        let outcome = tokio::time::timeout(limits.timeout, async {
            let guest = match guest {
                Some(guest) => guest,
                None => {
                    let started = Instant::now();
                    let guest = linking.instantiate(&mut store).await?;
                    if calling && optimised {
                        self.ready.instantiated_in(started.elapsed());
                    }
                    guest
                }
            };
            op(&mut store, guest).await
        })
        .await;
        let answer = answer_of(name, limits, store.data(), outcome);
        reaper.drop_later(store, slot);
        if calling && optimised {
            self.make_ahead(linking, limits);
        }
        answer
    }

    /// Makes one more instance of `linking` ahead in the background, for the calls
    /// to come, when the component is slow to instantiate (see ready.rs), fewer than
    /// two wait or are being made for this component, a place among the runtime's
    /// instances kept ahead is free, and an instance slot is free now (never waiting
    /// for one: calls come first). It grants nothing; a component whose
    /// instantiation reaches the host is never made ahead (see ready.rs).
    fn make_ahead(&self, linking: Arc<Linking>, limits: &Limits) {
        if !self
            .ready
            .start_making(self.runtime.config().made_ahead_above)
        {
            return;
        }
        let inner = &self.runtime.inner;
        let (Ok(kept), Ok(slot)) = (
            inner.kept_ahead.clone().try_acquire_owned(),
            inner.slots.clone().try_acquire_owned(),
        ) else {
            self.ready.finish_making(None);
            return;
        };
        let this = self.clone();
        let limits = *limits;
        tokio::spawn(async move {
            let nothing = Sandbox::new(
                &limits,
                &Capabilities::default(),
                &Pins::default(),
                Denials::default(),
            );
            let made = match nothing {
                Ok(sandbox) => {
                    let mut store = new_store(&linking, &limits, sandbox);
                    let started = Instant::now();
                    let made =
                        tokio::time::timeout(limits.timeout, linking.instantiate(&mut store)).await;
                    this.ready.instantiated_in(started.elapsed());
                    match made {
                        Ok(Ok(guest)) if store.data().host_calls == 0 => {
                            Some(Made::new(store, guest, slot, kept))
                        }
                        // Its start code asked the empty sandbox something (see
                        // ready.rs): this component's calls instantiate with their own.
                        Ok(Ok(_)) => {
                            this.ready.never_ahead();
                            this.runtime.inner.reaper.drop_later(store, slot);
                            None
                        }
                        _ => None,
                    }
                }
                Err(_) => None,
            };
            this.ready.finish_making(made);
        });
    }
}

/// A store for `linking`'s code with no capabilities, the memory limiter, and a
/// deadline checked at every epoch tick.
fn new_store(linking: &Linking, limits: &Limits, sandbox: Sandbox) -> Store<Sandbox> {
    let mut store = Store::new(linking.engine(), sandbox);
    store.limiter(|sandbox| &mut sandbox.limiter);
    arm(&mut store, limits.timeout);
    store
}

/// A fault of the host's own (no instance slot, a mount that vanished) in a call of
/// the tool `name`: what the registry may retry for an idempotent call.
/// Whose instance one is: the tool's name (for its log lines and errors) and where its
/// sandbox reports what it is granted and refuses.
struct Whose<'a> {
    name: &'a str,
    denials: Denials,
}

impl Whose<'_> {
    /// An instance made while loading: no tool name yet, and no call to report to.
    fn loading() -> Self {
        Whose {
            name: "",
            denials: Denials::default(),
        }
    }
}

pub(super) fn host_fault(name: &str, error: impl std::fmt::Display) -> CallError {
    CallError::Host {
        tool: name.to_owned(),
        message: error.to_string(),
    }
}

/// The host's hints from the guest's, or why they contradict themselves.
pub(super) fn from_wit_hints(h: bindings::ToolHints) -> Result<Hints, piton_wit::HintsError> {
    Hints::new(h.read_only, h.destructive, h.idempotent, h.open_world)
}
