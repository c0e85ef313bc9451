//! What `piton serve` serves and how it follows changes: the current registry,
//! swapped whole when the plugins folder changes, and a generation counter that
//! every session watches to send `notifications/tools/list_changed`; and its calls in
//! flight, which a stop waits for (see stop.rs).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::rounds::Waiting;
use super::stop::{Calls, Drained, FLUSH};
use crate::plugins::FolderWatch;
use crate::registry::Registry;

/// The registry being served, shared by every session, and its changes.
///
/// A call takes a snapshot ([`Served::registry`]) and runs on it to the end, so a
/// reload never cuts a call short; the next request sees the new registry.
pub struct Served {
    current: RwLock<Arc<Registry>>,
    /// Bumped on every change of the tool set; sessions watch it.
    generation: Arc<watch::Sender<u64>>,
    /// Follows the current registry's own sources of change (upstream servers).
    upstreams: Mutex<Option<JoinHandle<()>>>,
    /// Never sent: dropped with this, which wakes whoever follows changes for it.
    alive: watch::Sender<()>,
    /// Whether `/readyz` says ready: from the start (the registry is loaded) until
    /// [`Served::set_ready`] says otherwise (shutdown has begun).
    ready: AtomicBool,
    /// The calls in flight on any registry served, and whether new ones are taken.
    calls: Arc<Calls>,
    /// 2026-07-28 calls waiting for the answer to an upstream server's question.
    waiting: Arc<Waiting>,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("registry", &*self.registry())
            .field("generation", &self.generation())
            .finish()
    }
}

impl Served {
    /// Serves `registry`, at generation 0. Call it inside a Tokio runtime when the
    /// registry has upstream MCP servers: a task follows their changes.
    pub fn new(registry: Registry) -> Arc<Self> {
        let served = Arc::new(Self {
            current: RwLock::new(Arc::new(registry)),
            generation: Arc::new(watch::Sender::new(0)),
            upstreams: Mutex::new(None),
            alive: watch::Sender::new(()),
            ready: AtomicBool::new(true),
            calls: Arc::default(),
            waiting: Arc::default(),
        });
        served.follow(&served.registry());
        served
    }

    /// The registry now. Keep it for the length of one request: a reload swaps in
    /// another one and this one lives on until its last call ends.
    pub fn registry(&self) -> Arc<Registry> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether `piton serve --http` answers `/readyz` with 200 (ready) or 503. A
    /// server is ready once its registry is loaded; a shutdown that begins turns this
    /// off first, so a load balancer stops sending it requests.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Whether `/readyz` says ready: see [`Served::set_ready`]; never once a stop has
    /// begun ([`Served::stopping`]).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed) && !self.stopping()
    }

    /// Serves `registry` from now on and tells every session the tools changed.
    pub fn replace(&self, registry: Registry) {
        let registry = Arc::new(registry);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = registry.clone();
        self.follow(&registry);
        self.changed();
    }

    /// Tells every session the tool set changed (it re-lists the tools).
    pub fn changed(&self) {
        self.generation.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// How many changes there have been.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// How many receivers of [`Served::changes`] are alive: one per session that
    /// has not ended.
    pub fn listeners(&self) -> usize {
        self.generation.receiver_count()
    }

    /// A receiver that wakes on every change after this call.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// The calls in flight, and whether new ones are taken.
    pub(super) fn calls(&self) -> &Arc<Calls> {
        &self.calls
    }

    /// The 2026-07-28 calls waiting for the answer to an upstream server's question.
    pub(super) fn waiting(&self) -> &Arc<Waiting> {
        &self.waiting
    }

    /// Whether a stop has begun ([`Served::drain`]): no new calls are taken.
    ///
    /// An HTTP readiness check (`/readyz`) answers 503 from the moment this turns true
    /// ([`Served::is_ready`]), so that a load balancer sends no more work here.
    pub fn stopping(&self) -> bool {
        self.calls.stopping()
    }

    /// Stops: takes no new calls (each is answered with an error saying piton is
    /// shutting down), waits for the calls in flight to end, at most `grace`, then
    /// ends those still running, which answer with an error naming the grace.
    /// Resolves once every call has answered (or, for a call that does not end when
    /// told, after a few seconds more).
    pub async fn drain(&self, grace: Duration) -> Drained {
        self.calls.stop_taking();
        let in_flight = self.calls.in_flight().now();
        // Logged once new calls are refused (tests wait for it before sending one).
        tracing::info!(
            in_flight,
            "stopping: no new calls; waiting up to {grace:?} for the calls in flight"
        );
        let finished = tokio::time::timeout(grace, self.calls.in_flight().none())
            .await
            .is_ok();
        let cut = if finished { 0 } else { self.cut(grace).await };
        Drained { in_flight, cut }
    }

    /// Ends the calls still running, the grace of `grace` being over: each answers
    /// with an error. Gives how many there were.
    pub(super) async fn cut(&self, grace: Duration) -> usize {
        let cut = self.calls.in_flight().now();
        self.calls.cut_now(grace);
        if tokio::time::timeout(FLUSH, self.calls.in_flight().none())
            .await
            .is_err()
        {
            tracing::warn!("calls told to stop did not end within {FLUSH:?}");
        }
        cut
    }

    /// Loads again with `reload` each time `watch` (if any) reports a change, or
    /// `refused` counts specs kept in the compile cache that their code contradicts
    /// (see [`WasmRuntime::specs_refused`](crate::wasm::WasmRuntime::specs_refused)),
    /// and serves what it gives; `None` (it could not load; `reload` says why) keeps
    /// the tools served now until the next change. Ends when `served` is dropped, at
    /// once, or when watching ends.
    pub async fn reload_on_change<F, Fut>(
        served: Weak<Served>,
        mut watch: Option<FolderWatch>,
        mut refused: watch::Receiver<u64>,
        mut reload: F,
    ) where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<Registry>>,
    {
        let Some(mut gone) = served.upgrade().map(|s| s.alive.subscribe()) else {
            return;
        };
        let folder = watch.as_ref().map_or_else(
            || "(bundled)".to_owned(),
            |w| w.folder().display().to_string(),
        );
        loop {
            let why = tokio::select! {
                change = async {
                    match &mut watch {
                        Some(watch) => watch.changed().await,
                        None => std::future::pending().await,
                    }
                } => match change {
                    Some(()) => "the plugins changed",
                    None => return,
                },
                () = async {
                    // A runtime gone counts no more.
                    if refused.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                } => "specs kept in the compile cache or written by `piton build` were refused",
                // Never sent: this is the sender dropped with `served`.
                _ = gone.changed() => return,
            };
            let Some(served) = served.upgrade() else {
                return;
            };
            tracing::info!(%folder, "{why}: reloading");
            match reload().await {
                Some(registry) => {
                    tracing::info!(%folder, tools = registry.len(), "reloaded the plugins");
                    served.replace(registry);
                }
                None => tracing::warn!(
                    %folder,
                    "{why} but the plugins could not be loaded; still serving the tools \
                     loaded before"
                ),
            }
        }
    }

    /// Follows the change counters of `registry`'s sources for as long as it is the
    /// one served.
    fn follow(&self, registry: &Registry) {
        let sources = upstream_changes(registry);
        let task = (!sources.is_empty())
            .then(|| tokio::spawn(forward_changes(sources, self.generation.clone())));
        let old = std::mem::replace(
            &mut *self
                .upstreams
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            task,
        );
        if let Some(old) = old {
            old.abort();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(task) = self
            .upstreams
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

/// The change counters of the registry's tool groups, each bumped when that group's
/// tools change (an upstream server's `notifications/tools/list_changed`).
fn upstream_changes(registry: &Registry) -> Vec<watch::Receiver<u64>> {
    registry
        .groups()
        .filter_map(|group| group.changes())
        .collect()
}

/// Bumps `generation` whenever one of `sources` changes, until every source is gone
/// (or the task is aborted because its registry was replaced).
async fn forward_changes(
    mut sources: Vec<watch::Receiver<u64>>,
    generation: Arc<watch::Sender<u64>>,
) {
    while !sources.is_empty() {
        let (changed, index) = {
            let next = sources.iter_mut().map(|source| Box::pin(source.changed()));
            let (changed, index, _rest) = futures::future::select_all(next).await;
            (changed, index)
        };
        match changed {
            Ok(()) => generation.send_modify(|g| *g = g.wrapping_add(1)),
            // That source is gone (its server was dropped): stop following it.
            Err(_) => drop(sources.swap_remove(index)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn replace_swaps_the_registry_and_bumps_the_generation() {
        let served = Served::new(Registry::new());
        let before = served.registry();
        let mut changes = served.changes();
        served.replace(Registry::new());
        assert!(!Arc::ptr_eq(&before, &served.registry()));
        assert_eq!(served.generation(), 1);
        changes.changed().await.expect("a change");
        assert_eq!(*changes.borrow_and_update(), 1);
    }

    #[tokio::test]
    async fn a_source_change_bumps_the_generation_until_the_source_is_gone() {
        let (tx_a, rx_a) = watch::channel(0);
        let (tx_b, rx_b) = watch::channel(0);
        let generation = Arc::new(watch::Sender::new(0u64));
        let task = tokio::spawn(forward_changes(vec![rx_a, rx_b], generation.clone()));
        let mut seen = generation.subscribe();
        tx_b.send_modify(|g| *g += 1);
        tokio::time::timeout(Duration::from_secs(5), seen.wait_for(|g| *g == 1))
            .await
            .expect("in time")
            .expect("alive");
        tx_a.send_modify(|g| *g += 1);
        tokio::time::timeout(Duration::from_secs(5), seen.wait_for(|g| *g == 2))
            .await
            .expect("in time")
            .expect("alive");
        drop((tx_a, tx_b));
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the task ends once every source is gone")
            .expect("no panic");
    }

    #[tokio::test]
    async fn a_change_reloads_once_a_failed_reload_keeps_the_registry_and_dropping_ends_it() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

        use crate::plugins::Watched;

        let dir = tempfile::tempdir().expect("temp dir");
        let served = Served::new(Registry::new());
        let reloads = Arc::new(AtomicUsize::new(0));
        let fail = Arc::new(AtomicBool::new(false));
        let refusals = tokio::sync::watch::Sender::new(0_u64);
        let watch = FolderWatch::start(Watched {
            folder: dir.path().to_path_buf(),
            files: Vec::new(),
        });
        let follower = {
            let (reloads, fail) = (reloads.clone(), fail.clone());
            let refused = refusals.subscribe();
            tokio::spawn(Served::reload_on_change(
                Arc::downgrade(&served),
                Some(watch),
                refused,
                move || {
                    reloads.fetch_add(1, Ordering::SeqCst);
                    let fail = fail.load(Ordering::SeqCst);
                    async move { (!fail).then(Registry::new) }
                },
            ))
        };
        let reaches = |generation: u64| {
            let mut changes = served.changes();
            async move {
                tokio::time::timeout(
                    Duration::from_secs(5),
                    changes.wait_for(|g| *g >= generation),
                )
                .await
                .expect("the change arrives in time")
                .expect("the sender lives");
            }
        };

        std::fs::write(dir.path().join("a.wasm"), "x").expect("write");
        reaches(1).await;
        assert_eq!(reloads.load(Ordering::SeqCst), 1);

        fail.store(true, Ordering::SeqCst);
        let kept = served.registry();
        std::fs::remove_file(dir.path().join("a.wasm")).expect("remove");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while reloads.load(Ordering::SeqCst) < 2 {
            assert!(tokio::time::Instant::now() < deadline, "no reload");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            Arc::ptr_eq(&kept, &served.registry()),
            "a failed reload swapped"
        );
        assert_eq!(served.generation(), 1);
        assert_eq!(
            reloads.load(Ordering::SeqCst),
            2,
            "no retry until the next change"
        );

        // Dropping what is served ends the follower at once, with no file change.
        drop((kept, served));
        tokio::time::timeout(Duration::from_secs(5), follower)
            .await
            .expect("the follower ends with the served registry")
            .expect("no panic");
    }
}
