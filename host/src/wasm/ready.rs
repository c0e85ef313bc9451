//! Work around a call that need not delay its answer: instances made ahead of the
//! calls that will use them, and stores dropped after their call has answered.
//!
//! Every call still runs in an instance nobody used before. An instance made ahead
//! is instantiated in a store that grants nothing, and gets the call's own sandbox,
//! limits and deadline when a call takes it. That is only sound for a component
//! whose instantiation asks the host nothing: one whose start code reads its
//! world (Go's runtime reads its preopened folders and environment in `_initialize`,
//! which the component runs when it is instantiated; the preview1 adapter of a C or
//! Go module takes its stdio streams, handles in the store's table, which the call's
//! sandbox replaces) would keep what it got from the empty sandbox. So an instance whose instantiation reached the host is dropped,
//! and its component is never made ahead again: its calls instantiate with their
//! own sandbox. What moves off a call's path is the instantiation (a Python component's
//! thousands of table entries, its memory image mapped) and the reset of the
//! instance's memory when its store is dropped.
//!
//! Only a component slow to instantiate is made ahead (at least
//! [`RuntimeConfig::made_ahead_above`](super::RuntimeConfig::made_ahead_above), 100 µs
//! by default, for the quickest of its instantiations so far, in calls or ahead). An
//! instance made on another thread costs more CPU than one made in the call: a second
//! sandbox, a wake-up, and its memory written on another core's cache. For a Rust tool
//! that instantiates in about 10 µs it is a loss when calls come back to back:
//! `word_count` on 2 cores, in process, took 28-33 µs of CPU a call made in the call
//! against 48-58 µs made ahead, with a median no better and a p99 twice as long. (One
//! client calling over stdio, whose next call comes after a gap, was served with less
//! CPU made ahead, 52 µs against 58 µs: docs/performance.md.)

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::Store;

use super::bindings::Guest;
use super::sandbox::Sandbox;

/// How many instances one component keeps made ahead: two, so a call that asks
/// `hints-for` and then runs finds both of its instances ready.
const PER_COMPONENT: usize = 2;

/// An instance made ahead, with the instance slot it holds.
pub(super) struct Made {
    pub(super) store: Store<Sandbox>,
    pub(super) guest: Guest,
    /// The instance slot (of `max_instances`) it takes.
    slot: OwnedSemaphorePermit,
    /// Its place among the instances kept made ahead, runtime-wide.
    _kept: OwnedSemaphorePermit,
}

impl Made {
    /// An instance made ahead from its `store`, holding `slot` and `kept`.
    pub(super) fn new(
        store: Store<Sandbox>,
        guest: Guest,
        slot: OwnedSemaphorePermit,
        kept: OwnedSemaphorePermit,
    ) -> Self {
        Self {
            store,
            guest,
            slot,
            _kept: kept,
        }
    }

    /// Its store, guest and slot for a call; its place among those kept ahead is
    /// given back.
    pub(super) fn take(self) -> (Store<Sandbox>, Guest, OwnedSemaphorePermit) {
        (self.store, self.guest, self.slot)
    }
}

/// One component's instances made ahead, waiting for calls. Shared by a toolbox's
/// tools, dropped with the tool (a reload makes new ones from the new component).
pub(crate) struct ReadyPool {
    waiting: Mutex<Vec<Made>>,
    /// Instances being made for this pool, counted with those waiting.
    making: AtomicUsize,
    /// Instances made ahead, and taken by calls, since the pool was made.
    made: AtomicU64,
    taken: AtomicU64,
    /// The component's instantiation reaches the host: make none ahead.
    starts_with_host_calls: AtomicBool,
    /// Its quickest instantiation so far, in nanoseconds; `u64::MAX` before the
    /// first. The quickest, not the last: on a busy machine a thread may be held up
    /// in the middle of one, which says nothing of the component.
    quickest_made: AtomicU64,
}

impl Default for ReadyPool {
    fn default() -> Self {
        Self {
            waiting: Mutex::default(),
            making: AtomicUsize::new(0),
            made: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            starts_with_host_calls: AtomicBool::new(false),
            quickest_made: AtomicU64::new(u64::MAX),
        }
    }
}

impl ReadyPool {
    /// An instance made ahead, if one waits.
    pub(super) fn take(&self) -> Option<Made> {
        let made = self.waiting.lock().ok()?.pop();
        if made.is_some() {
            self.taken.fetch_add(1, Ordering::Relaxed);
        }
        made
    }

    /// Notes that instantiating the component took `took`.
    pub(super) fn instantiated_in(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX - 1);
        self.quickest_made.fetch_min(nanos, Ordering::Relaxed);
    }

    /// Whether one more instance should be made: the component's quickest
    /// instantiation took at least `above`, and fewer than [`PER_COMPONENT`] wait or
    /// are being made. Counts the one to be made when it answers yes.
    pub(super) fn start_making(&self, above: Duration) -> bool {
        let quickest = self.quickest_made.load(Ordering::Relaxed);
        let above = u64::try_from(above.as_nanos()).unwrap_or(u64::MAX);
        if self.starts_with_host_calls.load(Ordering::Relaxed)
            || quickest == u64::MAX
            || quickest < above
        {
            return false;
        }
        let waiting = self.waiting.lock().map_or(PER_COMPONENT, |w| w.len());
        self.making
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |making| {
                (waiting + making < PER_COMPONENT).then_some(making + 1)
            })
            .is_ok()
    }

    /// Never makes an instance ahead again: the component's instantiation reached the
    /// host, so it must see the call's own sandbox.
    pub(super) fn never_ahead(&self) {
        self.starts_with_host_calls.store(true, Ordering::Relaxed);
    }

    /// Puts a made instance to wait (or, on a poisoned lock, drops it) and counts it
    /// made.
    pub(super) fn finish_making(&self, made: Option<Made>) {
        if let Some(made) = made
            && let Ok(mut waiting) = self.waiting.lock()
        {
            waiting.push(made);
            self.made.fetch_add(1, Ordering::Relaxed);
        }
        self.making.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How many instances of a tool's component were made ahead of calls, and how many
/// calls took one (see [`WasmTool::made_ahead`](super::WasmTool::made_ahead)).
#[derive(Clone)]
pub struct MadeAhead(pub(super) Arc<ReadyPool>);

impl MadeAhead {
    /// Instances made ahead so far.
    pub fn made(&self) -> u64 {
        self.0.made.load(Ordering::Relaxed)
    }

    /// Calls (and `hints-for` questions) that ran in an instance made ahead.
    pub fn taken(&self) -> u64 {
        self.0.taken.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for MadeAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MadeAhead")
            .field("made", &self.made())
            .field("taken", &self.taken())
            .finish()
    }
}

/// Drops finished stores on a thread of its own, so that resetting an instance's
/// memory for the next one (a copy or an `madvise` of each page it touched) happens
/// after its call has answered. The slot is given back once the store is dropped.
#[derive(Clone)]
pub(crate) struct Reaper {
    to_drop: SyncSender<(Store<Sandbox>, OwnedSemaphorePermit)>,
}

/// Stores waiting to be dropped, at most; past it a call drops its own.
const REAPER_QUEUE: usize = 64;

impl Reaper {
    /// Starts the reaper's thread; it ends when the last clone is dropped.
    pub(crate) fn start() -> std::io::Result<Self> {
        let (to_drop, dropping) =
            std::sync::mpsc::sync_channel::<(Store<Sandbox>, OwnedSemaphorePermit)>(REAPER_QUEUE);
        std::thread::Builder::new()
            .name("piton-reaper".into())
            .spawn(move || {
                for (store, slot) in dropping {
                    drop(store);
                    drop(slot);
                }
            })?;
        Ok(Self { to_drop })
    }

    /// Drops `store`, then gives back `slot`: on the reaper's thread, or here when
    /// its queue is full.
    pub(super) fn drop_later(&self, store: Store<Sandbox>, slot: OwnedSemaphorePermit) {
        match self.to_drop.try_send((store, slot)) {
            Ok(()) => {}
            Err(TrySendError::Full((store, slot)) | TrySendError::Disconnected((store, slot))) => {
                drop(store);
                drop(slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABOVE: Duration = Duration::from_micros(100);

    #[test]
    fn a_pool_makes_at_most_two_ahead() {
        let pool = ReadyPool::default();
        pool.instantiated_in(ABOVE);
        assert!(pool.start_making(ABOVE));
        assert!(pool.start_making(ABOVE));
        assert!(!pool.start_making(ABOVE), "two are being made");
        pool.finish_making(None);
        assert!(pool.start_making(ABOVE), "one failed: another may be made");
    }

    #[test]
    fn only_a_component_slow_to_instantiate_is_made_ahead() {
        let pool = ReadyPool::default();
        assert!(
            !pool.start_making(ABOVE),
            "not yet instantiated: nothing is known"
        );
        assert!(
            !pool.start_making(Duration::ZERO),
            "nothing known, whatever the bar"
        );
        pool.instantiated_in(Duration::from_millis(2));
        assert!(pool.start_making(ABOVE), "slow: made ahead");
        pool.finish_making(None);
        pool.instantiated_in(Duration::from_micros(12));
        assert!(!pool.start_making(ABOVE), "quicker made in its call");
        pool.instantiated_in(Duration::from_millis(5));
        assert!(
            !pool.start_making(ABOVE),
            "a slow instantiation after a quick one was held up, not slow"
        );
        assert!(
            pool.start_making(Duration::ZERO),
            "a bar of zero makes every one ahead"
        );
    }
}
