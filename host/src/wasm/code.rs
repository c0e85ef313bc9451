//! One component's code as its tools run it, shared by a toolbox's tools: linked
//! against the WASI linker of the engine that compiled it. A component the compile
//! cache lacked starts on its baseline code and moves to its optimised code once
//! that is compiled (see `optimise`); each call takes the code there is when it
//! starts, so a call never waits for the optimised compile and never runs half on
//! one code and half on the other.
//!
//! A component whose tools were made from specs kept in the cache (see `specs`) has
//! no code at first: its first call waits for one (a baseline compile it starts),
//! and no call runs until the specs the code gives were found to be the kept ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

use super::bindings::{Guest, PluginPre, ToolboxPluginPre};
use super::diagnose::World;
use super::engine::Tier;
use super::sandbox::Sandbox;
use super::specs::Specs;

/// A component linked and checked against one engine's linker, ready to instantiate.
pub(crate) struct Linking {
    linked: Linked,
    tier: Tier,
}

/// The pre-linked component, of its world.
enum Linked {
    Plugin(PluginPre<Sandbox>),
    Toolbox(ToolboxPluginPre<Sandbox>),
}

impl Linking {
    /// `component` (compiled by `linker`'s engine, of `tier`) linked with `linker` as
    /// a component of `world`; the error says what of it does not fit.
    pub(super) fn new(
        linker: &Linker<Sandbox>,
        component: &Component,
        world: World,
        tier: Tier,
    ) -> wasmtime::Result<Self> {
        let pre = linker.instantiate_pre(component)?;
        let linked = match world {
            World::Plugin => Linked::Plugin(PluginPre::new(pre)?),
            World::Toolbox => Linked::Toolbox(ToolboxPluginPre::new(pre)?),
        };
        Ok(Self { linked, tier })
    }

    /// The engine its stores must be made on.
    pub(super) fn engine(&self) -> &Engine {
        match &self.linked {
            Linked::Plugin(pre) => pre.engine(),
            Linked::Toolbox(pre) => pre.engine(),
        }
    }

    /// Which compiler its code comes from.
    pub(super) fn tier(&self) -> Tier {
        self.tier
    }

    /// A fresh instance in `store` (made on [`Linking::engine`]).
    pub(super) async fn instantiate(&self, store: &mut Store<Sandbox>) -> wasmtime::Result<Guest> {
        Ok(match &self.linked {
            Linked::Plugin(pre) => Guest::Plugin(pre.instantiate_async(store).await?),
            Linked::Toolbox(pre) => Guest::Toolbox(pre.instantiate_async(store).await?),
        })
    }
}

/// Where a component's code is.
#[derive(Clone)]
pub(crate) enum Now {
    /// Not compiled yet: its tools were made from kept specs.
    Awaiting,
    /// This code, its specs checked.
    Ready(Arc<Linking>),
    /// Its kept specs are not what its code gives: its tools must be loaded again.
    Refused(Arc<str>),
}

/// A component's code now: none yet, baseline, then optimised.
pub(crate) struct Code {
    world: World,
    /// The interfaces the component imports.
    imports: Vec<String>,
    now: tokio::sync::watch::Sender<Now>,
    /// A call ran on the baseline code (or waits for code): the optimised compile of
    /// this component goes before those of components nobody called yet.
    wanted: AtomicBool,
    /// The kept specs its tools were made from, when they were (then also its bytes,
    /// for a baseline compile when a call comes before the optimised one).
    kept: Option<(Specs, Arc<[u8]>)>,
    /// A call started that baseline compile.
    urgent: AtomicBool,
}

impl Code {
    /// The code of a component of `world` that imports `imports`, linked as
    /// `linking`.
    pub(super) fn new(world: World, linking: Linking, imports: Vec<String>) -> Self {
        Self::with(world, imports, Now::Ready(Arc::new(linking)), None)
    }

    /// The code to come of the component `bytes`, whose tools are made from the kept
    /// `specs`.
    pub(super) fn awaiting(specs: Specs, bytes: Arc<[u8]>) -> Self {
        let (world, imports) = (specs.world.into(), specs.imports.clone());
        Self::with(world, imports, Now::Awaiting, Some((specs, bytes)))
    }

    fn with(
        world: World,
        imports: Vec<String>,
        now: Now,
        kept: Option<(Specs, Arc<[u8]>)>,
    ) -> Self {
        Self {
            world,
            imports,
            now: tokio::sync::watch::Sender::new(now),
            wanted: AtomicBool::new(false),
            kept,
            urgent: AtomicBool::new(false),
        }
    }

    /// Its world.
    pub(super) fn world(&self) -> World {
        self.world
    }

    /// The interfaces its component imports.
    pub(super) fn imports(&self) -> &[String] {
        &self.imports
    }

    /// Where its code is now.
    pub(super) fn now(&self) -> Now {
        self.now.borrow().clone()
    }

    /// Where its code is once it is no longer awaited.
    pub(super) async fn settled(&self) -> Now {
        let mut now = self.now.subscribe();
        // The sender is `self`'s, alive while this borrow is.
        match now.wait_for(|now| !matches!(now, Now::Awaiting)).await {
            Ok(now) => now.clone(),
            Err(_) => Now::Refused(Arc::from("its code went away")),
        }
    }

    /// Moves its tools to `linking` for every call from now on, unless they run
    /// optimised code already (baseline code never replaces it) or were refused.
    pub(super) fn install(&self, linking: Arc<Linking>) {
        self.now.send_if_modified(|now| {
            let keep = match now {
                Now::Refused(_) => true,
                Now::Ready(running) => {
                    running.tier() == Tier::Optimised && linking.tier() == Tier::Baseline
                }
                Now::Awaiting => false,
            };
            if !keep {
                *now = Now::Ready(linking);
            }
            !keep
        });
    }

    /// Refuses its tools' calls for `why`; whether it was not refused before.
    pub(super) fn refuse(&self, why: &str) -> bool {
        self.now.send_if_modified(|now| {
            if matches!(now, Now::Refused(_)) {
                return false;
            }
            *now = Now::Refused(Arc::from(why));
            true
        })
    }

    /// The kept specs its tools were made from, while its code has not given its own.
    pub(super) fn unchecked(&self) -> Option<&Specs> {
        match self.now() {
            Now::Awaiting => self.kept.as_ref().map(|(specs, _)| specs),
            _ => None,
        }
    }

    /// The component's bytes for the baseline compile a call starts, the first time
    /// it is asked for; `None` after, or for code that was never awaited.
    pub(super) fn start_urgent(&self) -> Option<Arc<[u8]>> {
        let (_, bytes) = self.kept.as_ref()?;
        (!self.urgent.swap(true, Ordering::AcqRel)).then(|| bytes.clone())
    }

    /// Marks it asked for by a call.
    pub(super) fn want(&self) {
        self.wanted.store(true, Ordering::Relaxed);
    }

    /// Whether a call asked for it.
    pub(super) fn wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }
}
