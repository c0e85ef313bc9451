//! The engine every wasm tool runs on: pooling allocator, epoch deadlines, the WASI
//! linker, the compile cache and the cap on concurrent instances.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache::CompileCache;
use super::sandbox::Sandbox;

/// How often the epoch advances: the granularity of deadlines, and how often a
/// running guest yields to the async executor so a busy guest cannot starve others.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// How much of each linear memory is reset in place (memset back to its initial
/// contents) when its instance is dropped, rather than handed back to the kernel.
///
/// What lies past it is reset with `madvise`, and each page the next instance touches
/// there faults in again: word_count writes 4 pages above its 1 MiB stack (5 faults a
/// call). Each `madvise` also makes the kernel interrupt every other core running one
/// of piton's threads to flush its TLB, so calls on two cores held each other up. A
/// Rust guest's memory starts at 1 MiB and 64 KiB (its stack, then its data), a C
/// guest's at 128 KiB: 2 MiB covers both, and their calls make no system call to
/// reset memory. Measured on 2 cores (load 1.2-1.6), 64 KiB against 2 MiB: word_count
/// from 2 concurrent callers 21 000-23 000 calls/s against 45 000-46 000, with
/// 500 000 TLB-flush interrupts in the run against 200; one caller alike (37-38 µs);
/// tally-c (C) 144 µs a call against 90; text-js 1.45 ms against 1.50, notes-py
/// 2.24 ms against 2.26 (their memories are larger: 2 MiB more to reset). A slot
/// keeps at most this much resident between its instances.
///
/// wasmtime's page scan (`PoolingAllocationConfig::pagemap_scan`), which resets
/// only the pages an instance wrote, halved word_count's call, but is not used: in
/// wasmtime 48 it skips a written page that is swapped out or being migrated at the
/// time (not `PRESENT`), so the next instance in the slot could read it.
const MEMORY_KEEP_RESIDENT: usize = 2 << 20;

/// Settings of a [`WasmRuntime`].
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; `None` compiles on every load.
    /// Default: [`RuntimeConfig::default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// How many instances may exist at once; further calls wait. Default 64.
    pub max_instances: u32,
    /// The largest memory any tool may be given, in bytes: the pooling allocator's
    /// slot size. Default 4 GiB.
    pub max_memory: u64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: Self::default_cache_dir(),
            max_instances: 64,
            max_memory: 4 << 30,
        }
    }
}

impl RuntimeConfig {
    /// `$PITON_CACHE_DIR`, else `$XDG_CACHE_HOME/piton`, else `$HOME/.cache/piton`.
    pub fn default_cache_dir() -> Option<PathBuf> {
        CompileCache::default_dir()
    }
}

/// Compiles and runs wasm tools. Cheap to clone; clones share one engine.
#[derive(Clone)]
pub struct WasmRuntime {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<Sandbox>,
    cache: Option<CompileCache>,
    /// One permit per pooled instance slot: calls wait here instead of failing when
    /// every slot is taken.
    pub(crate) slots: tokio::sync::Semaphore,
}

impl std::fmt::Debug for WasmRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmRuntime")
            .field("cache", &self.inner.cache)
            .finish_non_exhaustive()
    }
}

/// Why a runtime could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the wasm runtime: {0}")]
pub struct RuntimeError(String);

impl WasmRuntime {
    /// A runtime with `config`. Starts the epoch ticker thread, which ends when the
    /// last clone of the engine is dropped.
    pub fn new(config: RuntimeConfig) -> Result<Self, RuntimeError> {
        let mut pool = PoolingAllocationConfig::new();
        // Each tool instance is a component with a handful of core instances,
        // usually one memory and one table; a slot pool sized for `max_instances`
        // such components.
        let n = config.max_instances.max(1);
        pool.total_component_instances(n)
            .total_core_instances(n * 16)
            .total_memories(n * 2)
            .total_tables(n * 4)
            .total_stacks(n)
            .max_memory_size(usize::try_from(config.max_memory).unwrap_or(usize::MAX))
            .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
            .table_keep_resident(64 << 10);
        let mut wasm = Config::new();
        wasm.epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm).map_err(|e| RuntimeError(e.to_string()))?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| RuntimeError(e.to_string()))?;
        // The filesystem and network layers replace some of WASI's functions with
        // ones that hold a call to its capabilities.
        linker.allow_shadowing(true);
        super::fs::add_to_linker(&mut linker).map_err(|e| RuntimeError(e.to_string()))?;
        super::net::add_to_linker(&mut linker).map_err(|e| RuntimeError(e.to_string()))?;
        super::fds::add_to_linker(&mut linker).map_err(|e| RuntimeError(e.to_string()))?;
        linker.allow_shadowing(false);

        let cache = config
            .cache_dir
            .as_deref()
            .and_then(|dir| match CompileCache::open(dir) {
                Ok(cache) => Some(cache),
                Err(error) => {
                    tracing::warn!(dir = %dir.display(), %error, "compile cache disabled");
                    None
                }
            });
        // Raises the open-file limit and shares it out among the instances.
        super::fds::init(n as usize);
        spawn_ticker(&engine)
            .map_err(|e| RuntimeError(format!("cannot start the epoch ticker thread: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                engine,
                linker,
                cache,
                slots: tokio::sync::Semaphore::new(n as usize),
            }),
        })
    }

    /// The folder compiled components are cached in, if any.
    pub fn cache_dir(&self) -> Option<&std::path::Path> {
        self.inner.cache.as_ref().map(CompileCache::dir)
    }

    /// Compiles `bytes` (or takes them from the cache).
    pub(crate) fn compile(&self, bytes: &[u8], sha256: &str) -> wasmtime::Result<Component> {
        match &self.inner.cache {
            Some(cache) => cache.component(&self.inner.engine, bytes, sha256),
            None => Component::new(&self.inner.engine, bytes),
        }
    }
}

/// Without the ticker no deadline would fire and no guest would yield, so failing to
/// start it fails the runtime.
fn spawn_ticker(engine: &Engine) -> std::io::Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("piton-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .map(drop)
}
