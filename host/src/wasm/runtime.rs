//! The engine every wasm tool runs on: pooling allocator, epoch deadlines, the WASI
//! linker, the compile cache and the cap on concurrent instances; and the baseline
//! engine a component runs on until its optimised code is compiled (see `engine`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use super::cache::{CacheCounts, CompileCache};
use super::engine::Tier;
use super::queue::Optimiser;
use super::sandbox::Sandbox;
use crate::config::runtime::RuntimeSettings;
use crate::limits::format_size;

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
    /// Only a component whose quickest instantiation so far took at least this long
    /// is made ahead (see [`super::ready`]); quicker ones are made in their call,
    /// which costs less when calls come back to back or many at once. Default 100 µs:
    /// a Rust or C tool's component takes about 10 µs, a Python or JavaScript one a
    /// millisecond or more.
    pub made_ahead_above: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: Self::default_cache_dir(),
            max_instances: 64,
            max_memory: 4 << 30,
            max_queued: None,
            made_ahead: None,
            made_ahead_above: Duration::from_micros(100),
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
    /// every slot is taken. Shared by both engines' pools.
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    /// Places among the instances kept made ahead of calls (see [`super::ready`]).
    pub(crate) kept_ahead: Arc<tokio::sync::Semaphore>,
    /// Drops finished stores after their call has answered.
    pub(crate) reaper: super::ready::Reaper,
    /// Blocking work of loads (reading and hashing a file, looking it up in the
    /// cache): one job per core, so 100 plugins take a few threads, not 100.
    pub(crate) load_jobs: tokio::sync::Semaphore,
    /// Compiles a load waits for, at once: one per core (each also spreads its
    /// functions over the cores), so that 100 first-start compiles neither take 100
    /// threads and their memory at once nor leave a core idle.
    compile_jobs: tokio::sync::Semaphore,
    /// The baseline engine and its linker, made when a load first needs them and
    /// dropped when no optimised compile is left to wait for.
    baseline: Mutex<Option<Arc<Baseline>>>,
    /// Optimised compiles queued in the background.
    pub(crate) optimiser: Optimiser,
    /// Compiles asked for and finished since the runtime was made: [`Compiles`].
    pub(crate) compiles_asked: AtomicU32,
    pub(crate) compiles_done: AtomicU32,
    compiles_baseline: AtomicU32,
    /// Compile cache hits and misses, for the metrics.
    cache_counts: Arc<CacheCounts>,
    /// Kept specs refused so far: [`WasmRuntime::specs_refused`].
    pub(crate) refused: tokio::sync::watch::Sender<u64>,
    /// The components whose specs were refused: their `piton:specs` sections are not
    /// read again (see `section`).
    pub(crate) refused_digests: super::section::Refused,
    /// The threads optimised compiles run their functions on (see `optimise`), made
    /// with the first; `None` in it when they could not be made.
    pub(crate) optimise_pool: std::sync::OnceLock<Option<rayon::ThreadPool>>,
    /// The cores: how many threads that pool has.
    pub(crate) cores: usize,
    /// Calls admitted (running or waiting for a slot), at most `max_in_flight`.
    in_flight: AtomicU32,
    max_in_flight: u32,
    config: RuntimeConfig,
}

/// The baseline engine (Winch) and its WASI linker.
pub(crate) struct Baseline {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<Sandbox>,
}

/// Compiles since a runtime was made, for a progress bar: the optimised compiles
/// asked for (cache misses, waiting or running) and finished (compiled or failed),
/// and the baseline compiles done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compiles {
    /// Optimised compiles asked for.
    pub asked: u32,
    /// Optimised compiles finished.
    pub done: u32,
    /// Baseline compiles done (a load's, or a call's that found no code).
    pub baseline: u32,
}

/// Counts one compile finished when dropped, so a failed or cancelled one counts too.
struct Finished<'a>(&'a WasmRuntime);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.count_compile_done();
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
        let n = config.max_instances.max(1);
        let engine =
            super::engine::engine(config.max_instances, config.max_memory, Tier::Optimised)
                .map_err(RuntimeError)?;
        let linker = super::engine::linker(&engine).map_err(RuntimeError)?;
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
                baseline: Mutex::new(None),
                optimiser: Optimiser::new(cores),
                compiles_asked: AtomicU32::new(0),
                compiles_done: AtomicU32::new(0),
                compiles_baseline: AtomicU32::new(0),
                cache_counts: Arc::default(),
                refused: tokio::sync::watch::Sender::new(0),
                refused_digests: super::section::Refused::default(),
                optimise_pool: std::sync::OnceLock::new(),
                cores,
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

    /// The specs of the component `sha256` kept in the compile cache, if usable (see
    /// `specs`). Blocking.
    pub(super) fn kept_specs(&self, sha256: &str) -> Option<super::specs::Specs> {
        self.inner.cache.as_ref()?.get_specs(sha256)
    }

    /// Keeps `specs`, read from their component's code, in the compile cache (if any),
    /// off the load's path: done when the handle given is, and before
    /// [`WasmRuntime::optimised`] is.
    pub(super) fn keep_specs(
        &self,
        specs: super::specs::Specs,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let cache = self.inner.cache.clone()?;
        let pending = self.background_work();
        Some(tokio::task::spawn_blocking(move || {
            cache.keep_specs(&specs);
            drop(pending);
        }))
    }

    /// Compile cache hits (components taken from the cache) and misses (components
    /// compiled) since the runtime was made.
    pub fn cache_counts(&self) -> Arc<CacheCounts> {
        self.inner.cache_counts.clone()
    }

    /// Compiles `bytes` (whose hash is `sha256`) with the optimising compiler when a
    /// compile job is free, and caches the result; counted in
    /// [`WasmRuntime::compiles`].
    pub(crate) async fn compile(
        &self,
        bytes: Vec<u8>,
        sha256: String,
    ) -> wasmtime::Result<Component> {
        self.count_compile_asked();
        let _finished = Finished(self);
        let _job = self.inner.compile_jobs.acquire().await?;
        let runtime = self.clone();
        tokio::task::spawn_blocking(move || runtime.compile_blocking(&bytes, &sha256)).await?
    }

    /// Compiles `bytes` (whose hash is `sha256`) with the optimising compiler and
    /// caches the result, on this thread.
    pub(super) fn compile_blocking(
        &self,
        bytes: &[u8],
        sha256: &str,
    ) -> wasmtime::Result<Component> {
        self.inner.cache_counts.miss();
        let engine = &self.inner.engine;
        match &self.inner.cache {
            Some(cache) => cache.compile(engine, bytes, sha256),
            None => Component::new(engine, bytes),
        }
    }

    /// Compiles `bytes` with the baseline compiler when a compile job is free: the
    /// component and the engine (with its linker) it is for.
    pub(super) async fn compile_baseline(
        &self,
        bytes: Arc<[u8]>,
    ) -> wasmtime::Result<(Component, Arc<Baseline>)> {
        let _job = self.inner.compile_jobs.acquire().await?;
        let runtime = self.clone();
        tokio::task::spawn_blocking(move || {
            let baseline = runtime.baseline()?;
            let component = Component::new(&baseline.engine, &bytes)?;
            runtime
                .inner
                .compiles_baseline
                .fetch_add(1, Ordering::Relaxed);
            Ok((component, baseline))
        })
        .await?
    }

    /// The baseline engine, made if there is none. Blocking.
    fn baseline(&self) -> wasmtime::Result<Arc<Baseline>> {
        let mut baseline = self
            .inner
            .baseline
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(made) = &*baseline {
            return Ok(made.clone());
        }
        let config = &self.inner.config;
        let engine = super::engine::engine(config.max_instances, config.max_memory, Tier::Baseline)
            .map_err(wasmtime::Error::msg)?;
        let linker = super::engine::linker(&engine).map_err(wasmtime::Error::msg)?;
        let made = Arc::new(Baseline { engine, linker });
        *baseline = Some(made.clone());
        Ok(made)
    }

    /// Lets go of the baseline engine: it is dropped (with its instance pool) when the
    /// last code compiled by it is.
    pub(super) fn drop_baseline(&self) {
        self.inner
            .baseline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// The compiles asked for and finished since the runtime was made. A load that
    /// finds every component in the cache asks for none.
    pub fn compiles(&self) -> Compiles {
        Compiles {
            asked: self.inner.compiles_asked.load(Ordering::Relaxed),
            done: self.inner.compiles_done.load(Ordering::Relaxed),
            baseline: self.inner.compiles_baseline.load(Ordering::Relaxed),
        }
    }
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
