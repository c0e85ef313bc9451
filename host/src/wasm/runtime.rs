//! The engine every wasm tool runs on: pooling allocator, epoch deadlines, the WASI
//! linker, the compile cache and the cap on concurrent instances.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache::{CacheCounts, CompileCache};
use super::sandbox::Sandbox;
use crate::config::runtime::RuntimeSettings;
use crate::limits::format_size;

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
/// Rust guest's memory starts with its stack, then its data: 1 MiB and 64 KiB with
/// Rust's default stack, 320 KiB with the 256 KiB piton builds Rust tools with
/// (`piton_guest_builder::STACK_SIZE`); a C guest's at 128 KiB. 2 MiB covers each,
/// and their calls make no system call to reset memory. (The figures below are
/// word_count with a 1 MiB stack.) Measured on 2 cores (load 1.2-1.6), 64 KiB against 2 MiB: word_count
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

/// How many calls may wait for an instance per instance, unless set: deep enough to
/// take a burst of several clients' parallel calls, short enough that the last one
/// waits about four calls' time, not past its client's patience. A waiting call holds
/// only its arguments and a future, so the bound is on waiting, not on memory.
const QUEUED_PER_INSTANCE: u32 = 4;

/// Settings of a [`WasmRuntime`]; piton.toml's `[runtime]` table sets the last three
/// (see [`RuntimeConfig::with_settings`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; `None` compiles on every load.
    /// Default: [`RuntimeConfig::default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// How many instances may exist at once: each call, each `hints_for` and each
    /// spec read at load holds one while it runs; further ones wait. Each reserves
    /// two memory slots of 4 GiB + 32 MiB of address space (not memory). Default 64.
    pub max_instances: u32,
    /// The largest memory any tool may be given, in bytes: the pooling allocator's
    /// limit per memory. At most 4 GiB, the default. Lowering it reserves no less
    /// address space (wasmtime checks 32-bit memories with 4 GiB of guard pages).
    pub max_memory: u64,
    /// How many calls may wait for an instance while `max_instances` run; one more
    /// fails at once with [`CallError::Busy`](crate::CallError::Busy). `None`: four
    /// per instance (256 for the default 64).
    pub max_queued: Option<u32>,
    /// How many instances may be kept made ahead of calls, over all tools (see
    /// [`WasmTool::made_ahead`](super::WasmTool::made_ahead)); 0 makes none. `None`:
    /// an eighth of `max_instances` (none below 8). At most half of `max_instances`
    /// is used, so calls always have the other half.
    pub made_ahead: Option<u32>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: Self::default_cache_dir(),
            max_instances: 64,
            max_memory: 4 << 30,
            max_queued: None,
            made_ahead: None,
        }
    }
}

impl RuntimeConfig {
    /// `$PITON_CACHE_DIR`, else `$XDG_CACHE_HOME/piton`, else `$HOME/.cache/piton`.
    pub fn default_cache_dir() -> Option<PathBuf> {
        CompileCache::default_dir()
    }

    /// This configuration with what piton.toml's `[runtime]` table sets.
    #[must_use]
    pub fn with_settings(mut self, settings: &RuntimeSettings) -> Self {
        if let Some(n) = settings.max_instances {
            self.max_instances = n;
        }
        if let Some(bytes) = settings.max_memory {
            self.max_memory = bytes;
        }
        if settings.max_queued.is_some() {
            self.max_queued = settings.max_queued;
        }
        if settings.made_ahead.is_some() {
            self.made_ahead = settings.made_ahead;
        }
        self
    }

    /// How many instances may be kept made ahead of calls: `made_ahead`, or its
    /// default, and at most half of `max_instances`.
    pub fn kept_ahead(&self) -> u32 {
        let n = self.max_instances.max(1);
        self.made_ahead.unwrap_or(n / 8).min(n / 2)
    }

    /// What of this configuration `running` does not have, each as `key = value
    /// (running with value)`.
    pub(crate) fn differences(&self, running: &RuntimeConfig) -> Vec<String> {
        let mut differ = Vec::new();
        if self.max_instances != running.max_instances {
            differ.push(format!(
                "max_instances = {} (running with {})",
                self.max_instances, running.max_instances
            ));
        }
        if self.max_memory != running.max_memory {
            differ.push(format!(
                "max_memory = {} (running with {})",
                format_size(self.max_memory),
                format_size(running.max_memory)
            ));
        }
        // Set or unset by the table; one that follows max_instances is said with it.
        if self.made_ahead != running.made_ahead {
            differ.push(format!(
                "made_ahead = {} (running with {})",
                self.kept_ahead(),
                running.kept_ahead()
            ));
        }
        if self.queued() != running.queued() {
            differ.push(format!(
                "max_queued = {} (running with {})",
                self.queued(),
                running.queued()
            ));
        }
        differ
    }

    /// How many calls may wait for an instance: `max_queued`, or its default.
    pub fn queued(&self) -> u32 {
        self.max_queued.unwrap_or_else(|| {
            self.max_instances
                .max(1)
                .saturating_mul(QUEUED_PER_INSTANCE)
        })
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
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    /// Places among the instances kept made ahead of calls (see [`super::ready`]).
    pub(crate) kept_ahead: Arc<tokio::sync::Semaphore>,
    /// Drops finished stores after their call has answered.
    pub(crate) reaper: super::ready::Reaper,
    /// Blocking work of loads (reading and hashing a file, looking it up in the
    /// cache): one job per core, so 100 plugins take a few threads, not 100.
    pub(crate) load_jobs: tokio::sync::Semaphore,
    /// Compiles at once: one per core (each also spreads its functions over the
    /// cores), so that 100 first-start compiles neither take 100 threads and their
    /// memory at once nor leave a core idle.
    compile_jobs: tokio::sync::Semaphore,
    /// Compiles asked for and finished since the runtime was made: [`Compiles`].
    compiles_asked: AtomicU32,
    compiles_done: AtomicU32,
    /// Compile cache hits and misses, for the metrics.
    cache_counts: Arc<CacheCounts>,
    /// Calls admitted (running or waiting for a slot), at most `max_in_flight`.
    in_flight: AtomicU32,
    max_in_flight: u32,
    config: RuntimeConfig,
}

/// Compiles since a runtime was made, for a progress bar: those asked for (cache
/// misses, waiting or running) and those finished (compiled or failed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compiles {
    /// Asked for.
    pub asked: u32,
    /// Finished.
    pub done: u32,
}

/// Counts one compile finished when dropped, so a failed or cancelled one counts too.
struct Finished<'a>(&'a AtomicU32);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A call counted among those in flight until dropped; see [`WasmRuntime::admit`].
pub(crate) struct Admitted<'a>(&'a AtomicU32);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Every instance is taken and `max_queued` calls wait for one.
#[derive(Debug)]
pub(crate) struct Busy {
    /// `max_instances`.
    pub(crate) instances: u32,
    /// `max_queued`.
    pub(crate) queued: u32,
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

        let cache =
            config
                .cache_dir
                .as_deref()
                .and_then(|dir| match CompileCache::open(dir, &engine) {
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
        let reaper = super::ready::Reaper::start()
            .map_err(|e| RuntimeError(format!("cannot start the reaper thread: {e}")))?;
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        Ok(Self {
            inner: Arc::new(Inner {
                engine,
                linker,
                cache,
                slots: Arc::new(tokio::sync::Semaphore::new(n as usize)),
                kept_ahead: Arc::new(tokio::sync::Semaphore::new(config.kept_ahead() as usize)),
                reaper,
                load_jobs: tokio::sync::Semaphore::new(cores),
                compile_jobs: tokio::sync::Semaphore::new(cores),
                compiles_asked: AtomicU32::new(0),
                compiles_done: AtomicU32::new(0),
                cache_counts: Arc::default(),
                in_flight: AtomicU32::new(0),
                max_in_flight: n.saturating_add(config.queued()),
                config,
            }),
        })
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Admits one call, or refuses it at once when `max_instances` calls run and
    /// `max_queued` wait: a flood then gets an answer it can retry, not a queue that
    /// grows until memory runs out.
    pub(crate) fn admit(&self) -> Result<Admitted<'_>, Busy> {
        let max = self.inner.max_in_flight;
        self.inner
            .in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .map(|_| Admitted(&self.inner.in_flight))
            .map_err(|_| Busy {
                instances: self.inner.config.max_instances.max(1),
                queued: self.inner.config.queued(),
            })
    }

    /// The folder compiled components are cached in, if any.
    pub fn cache_dir(&self) -> Option<&std::path::Path> {
        self.inner.cache.as_ref().map(CompileCache::dir)
    }

    /// Trims the compile cache, if there is one: removes the entries that no load
    /// used for a week, then, while it is over `max_size` bytes, those used longest
    /// ago but not since `used_since` (see [`super::cache`]). Blocking.
    pub fn trim_cache(
        &self,
        used_since: std::time::SystemTime,
        max_size: u64,
    ) -> Option<super::cache::Trimmed> {
        let cache = self.inner.cache.as_ref()?;
        Some(cache.trim(used_since, max_size))
    }

    /// The component whose bytes hash to `sha256`, if the compile cache holds it.
    /// Blocking: it maps the file.
    pub(crate) fn cached(&self, sha256: &str) -> Option<Component> {
        let found = self
            .inner
            .cache
            .as_ref()
            .and_then(|cache| cache.get(&self.inner.engine, sha256));
        if found.is_some() {
            self.inner.cache_counts.hit();
        }
        found
    }

    /// Compile cache hits (components taken from the cache) and misses (components
    /// compiled) since the runtime was made.
    pub fn cache_counts(&self) -> Arc<CacheCounts> {
        self.inner.cache_counts.clone()
    }

    /// Compiles `bytes` (whose hash is `sha256`) when a compile job is free, and
    /// caches the result; counted in [`WasmRuntime::compiles`].
    pub(crate) async fn compile(
        &self,
        bytes: Vec<u8>,
        sha256: String,
    ) -> wasmtime::Result<Component> {
        self.inner.compiles_asked.fetch_add(1, Ordering::Relaxed);
        self.inner.cache_counts.miss();
        let _finished = Finished(&self.inner.compiles_done);
        let _job = self.inner.compile_jobs.acquire().await?;
        let runtime = self.clone();
        tokio::task::spawn_blocking(move || {
            let engine = &runtime.inner.engine;
            match &runtime.inner.cache {
                Some(cache) => cache.compile(engine, &bytes, &sha256),
                None => Component::new(engine, &bytes),
            }
        })
        .await?
    }

    /// The compiles asked for and finished since the runtime was made. A load that
    /// finds every component in the cache asks for none.
    pub fn compiles(&self) -> Compiles {
        Compiles {
            asked: self.inner.compiles_asked.load(Ordering::Relaxed),
            done: self.inner.compiles_done.load(Ordering::Relaxed),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eighth_of_the_instances_are_made_ahead_and_never_more_than_half() {
        let kept = |max_instances, made_ahead| {
            RuntimeConfig {
                max_instances,
                made_ahead,
                ..RuntimeConfig::default()
            }
            .kept_ahead()
        };
        assert_eq!(kept(64, None), 8);
        assert_eq!(kept(8, None), 1);
        assert_eq!(kept(7, None), 0, "below 8 instances every one is for calls");
        assert_eq!(kept(64, Some(0)), 0);
        assert_eq!(kept(64, Some(20)), 20);
        assert_eq!(kept(64, Some(1000)), 32, "at most half");
        assert_eq!(kept(1, Some(1)), 0);
    }
}
