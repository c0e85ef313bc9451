//! Optimised compiles in the background: a component the compile cache lacked is
//! compiled by the baseline engine at load, so its specs are read and its calls
//! answered at once, and queued (see `queue`) to be compiled by Cranelift, cached,
//! and its tools moved to that code (see `code`).
//!
//! The queue waits while a load of the plugins is under way
//! ([`WasmRuntime::hold_optimising`]), so a start's baseline compiles, the ones its
//! first answer waits for, have every core; then one worker thread per core
//! compiles, the components a call asked for first. A component loaded again while
//! its compile is queued (a reload) shares the queued compile. When the queue is
//! empty the baseline engine is dropped (its instance pool with it); the next load
//! that needs it makes it again.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::code::{Code, Linking};
use super::engine::Tier;
use super::queue::{Job, Next};
use super::runtime::WasmRuntime;

/// Optimised compiles held back (see [`WasmRuntime::hold_optimising`]) until it is
/// dropped.
#[must_use = "compiles are held back only until it is dropped"]
pub struct OptimisingHeld(WasmRuntime);

impl std::fmt::Debug for OptimisingHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptimisingHeld").finish_non_exhaustive()
    }
}

impl Drop for OptimisingHeld {
    fn drop(&mut self) {
        if self.0.inner.optimiser.release() {
            self.0.drop_baseline();
        }
    }
}

/// Background work counted until dropped: see [`WasmRuntime::background_work`].
pub(crate) struct Background(WasmRuntime);

impl Drop for Background {
    fn drop(&mut self) {
        self.0.inner.optimiser.finish_work();
    }
}

impl WasmRuntime {
    /// Holds optimised compiles back until the guard is dropped (they are queued
    /// meanwhile): a load of many components reads every spec on baseline code
    /// first, with every core, as [`Loader::load`](crate::loader::Loader::load)
    /// does. Tools run their baseline code until their optimised code is ready.
    pub fn hold_optimising(&self) -> OptimisingHeld {
        self.inner.optimiser.hold();
        OptimisingHeld(self.clone())
    }

    /// The code of the component `sha256` if its optimised compile is still to come:
    /// a second load of it shares that code and that compile.
    pub(super) fn pending_code(&self, sha256: &str) -> Option<Arc<Code>> {
        self.inner.optimiser.pending(sha256)
    }

    /// Queues the optimised compile of `bytes` (whose digest is `sha256`), whose
    /// tools run `code` meanwhile; counted in [`WasmRuntime::compiles`].
    pub(super) fn optimise_later(&self, sha256: String, bytes: Arc<[u8]>, code: &Arc<Code>) {
        self.count_compile_asked();
        let job = Job {
            sha256,
            bytes,
            code: Arc::downgrade(code),
        };
        if !self.inner.optimiser.push(job) {
            return;
        }
        let runtime = self.clone();
        let spawned = std::thread::Builder::new()
            .name("piton-optimise".into())
            .spawn(move || runtime.optimise_queued());
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start a compile thread: tools run baseline code");
            for _ in 0..self.inner.optimiser.worker_failed() {
                self.count_compile_done();
            }
        }
    }

    /// Counts work in the background (keeping specs) that [`WasmRuntime::optimised`]
    /// waits for, until the guard is dropped.
    pub(super) fn background_work(&self) -> Background {
        self.inner.optimiser.start_work();
        Background(self.clone())
    }

    /// Waits until every component loaded so far runs its optimised code (or failed
    /// to compile and keeps its baseline code), and what was read of them is kept:
    /// what a command that ends after one call or listing waits for, so the compile
    /// cache is filled for the next.
    pub async fn optimised(&self) {
        self.inner.optimiser.idle().await;
    }

    /// A worker thread: compiles queued components, once no load holds the queue,
    /// until none is left.
    fn optimise_queued(self) {
        loop {
            match self.inner.optimiser.next() {
                Next::Compile(job) => {
                    self.optimise(&job.sha256, &job.bytes, &job.code);
                    self.count_compile_done();
                    self.inner.optimiser.done(&job);
                }
                Next::End(idle) => {
                    if idle {
                        self.drop_baseline();
                    }
                    return;
                }
            }
        }
    }

    /// Compiles one component (caching it) and moves its tools to that code; a
    /// component whose tools are all gone (a reload replaced it) is not compiled.
    fn optimise(&self, sha256: &str, bytes: &[u8], code: &Weak<Code>) {
        if code.strong_count() == 0 {
            return;
        }
        let component = match self.in_optimise_pool(|| self.compile_blocking(bytes, sha256)) {
            Ok(component) => component,
            Err(error) => {
                let error = super::trap::root_message(&error);
                if let Some(code) = code.upgrade() {
                    self.no_code(&code, sha256, &format!("it does not compile: {error}"));
                }
                tracing::warn!(
                    sha256,
                    error,
                    "the optimised compile failed; its tools keep running baseline code"
                );
                return;
            }
        };
        let Some(code) = code.upgrade() else {
            return;
        };
        let linked = Linking::new(
            &self.inner.linker,
            &component,
            code.world(),
            Tier::Optimised,
        );
        match linked {
            Ok(linking) => {
                let imports = super::awaited::imports_of(&component, &self.inner.engine);
                block_on(self.install_checked(&code, linking, imports));
            }
            Err(error) => {
                let error = super::trap::root_message(&error);
                self.no_code(&code, sha256, &format!("it does not link: {error}"));
                tracing::warn!(
                    sha256,
                    error,
                    "the optimised code does not link; its tools keep running baseline code"
                );
            }
        }
    }

    /// When `code`'s tools were made from specs (kept, or written in by `piton build`)
    /// and still wait for code, refuses them for `why`: no code will come, and a call
    /// must fail rather than wait forever; a load again reads the component's code.
    fn no_code(&self, code: &Code, sha256: &str, why: &str) {
        if code.unchecked().is_some() {
            self.refuse(code, sha256, why);
        }
    }

    /// Runs `work` (an optimised compile) with its parallel parts on the threads kept
    /// for optimised compiles, not on the pool baseline compiles use: a call waiting
    /// for the baseline compile of its component then shares the cores with them,
    /// instead of waiting behind every function they had queued.
    fn in_optimise_pool<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        let pool = self.inner.optimise_pool.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.inner.cores)
                .thread_name(|i| format!("piton-optimise-{i}"))
                .build()
                .inspect_err(|error| {
                    tracing::warn!(%error, "cannot start the optimised compiles' threads");
                })
                .ok()
        });
        match pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }

    /// Counts an optimised compile asked for, for the progress bar.
    pub(super) fn count_compile_asked(&self) {
        self.inner.compiles_asked.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an optimised compile finished (or given up).
    pub(super) fn count_compile_done(&self) {
        self.inner.compiles_done.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `work` to its end on this worker thread, in a runtime of its own (the loads'
/// runtime may be gone: a worker outlives the load that queued its job).
fn block_on<F: std::future::Future>(work: F) -> Option<F::Output> {
    thread_local! {
        static RUNTIME: Option<tokio::runtime::Runtime> =
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .inspect_err(|error| {
                    tracing::warn!(%error, "cannot start a compile thread's runtime");
                })
                .ok();
    }
    RUNTIME.with(|runtime| runtime.as_ref().map(|runtime| runtime.block_on(work)))
}
