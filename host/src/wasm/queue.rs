//! The queue of optimised compiles (see `optimise`, which runs it): the components
//! waiting, the worker threads running, the loads holding it back, and the count of
//! background work a command waits for before it ends.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};

use super::code::Code;

/// The queue of optimised compiles and its workers.
pub(crate) struct Optimiser {
    state: Mutex<Queue>,
    wake: Condvar,
    /// Compiles queued or running, and other background work (kept specs being
    /// written): 0 once every component loaded runs optimised code.
    outstanding: tokio::sync::watch::Sender<usize>,
    /// Worker threads at most: one per core.
    max_workers: usize,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Worker threads running.
    workers: usize,
    /// Loads under way that hold the queue.
    held: usize,
    /// The code of each component queued or compiling, by digest.
    pending: HashMap<String, Weak<Code>>,
}

/// One component to compile: exactly the bytes whose digest was checked at load.
pub(crate) struct Job {
    pub(crate) sha256: String,
    pub(crate) bytes: Arc<[u8]>,
    pub(crate) code: Weak<Code>,
}

/// What a worker is to do next.
pub(crate) enum Next {
    /// Compile this.
    Compile(Job),
    /// Nothing is queued: end; `true` when no other worker runs and no load holds
    /// the queue (the baseline engine may go).
    End(bool),
}

impl Optimiser {
    /// A queue with one worker per core.
    pub(crate) fn new(cores: usize) -> Self {
        Self {
            state: Mutex::default(),
            wake: Condvar::new(),
            outstanding: tokio::sync::watch::Sender::new(0),
            max_workers: cores.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One more load holds the queue.
    pub(crate) fn hold(&self) {
        self.lock().held += 1;
    }

    /// A load lets the queue go; `true` when nothing holds or works on it any more.
    pub(crate) fn release(&self) -> bool {
        let idle = {
            let mut queue = self.lock();
            queue.held -= 1;
            queue.held == 0 && queue.workers == 0
        };
        self.wake.notify_all();
        idle
    }

    /// The code of the component `sha256` if it is queued or compiling.
    pub(crate) fn pending(&self, sha256: &str) -> Option<Arc<Code>> {
        self.lock().pending.get(sha256).and_then(Weak::upgrade)
    }

    /// Queues `job`, counted outstanding; `true` when a worker is to be started for
    /// it (it is counted running).
    pub(crate) fn push(&self, job: Job) -> bool {
        self.outstanding.send_modify(|n| *n += 1);
        let start_worker = {
            let mut queue = self.lock();
            queue.pending.insert(job.sha256.clone(), job.code.clone());
            queue.jobs.push_back(job);
            let more = queue.workers < self.max_workers;
            if more {
                queue.workers += 1;
            }
            more
        };
        self.wake.notify_all();
        start_worker
    }

    /// A worker that could not be started: if it was the only one, the jobs queued
    /// are dropped (their components keep their baseline code), so nothing waits for
    /// them forever. How many were dropped.
    pub(crate) fn worker_failed(&self) -> usize {
        let dropped = {
            let mut queue = self.lock();
            queue.workers -= 1;
            if queue.workers > 0 {
                return 0;
            }
            queue.pending.clear();
            std::mem::take(&mut queue.jobs).len()
        };
        self.outstanding.send_modify(|n| *n -= dropped);
        dropped
    }

    /// The next job for a worker, once no load holds the queue (this waits).
    pub(crate) fn next(&self) -> Next {
        let mut queue = self.lock();
        loop {
            if queue.held == 0
                && let Some(job) = take_next(&mut queue.jobs)
            {
                return Next::Compile(job);
            }
            if queue.jobs.is_empty() {
                queue.workers -= 1;
                return Next::End(queue.workers == 0 && queue.held == 0);
            }
            queue = self
                .wake
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// `job` is done (compiled or not).
    pub(crate) fn done(&self, job: &Job) {
        {
            let mut queue = self.lock();
            if queue
                .pending
                .get(&job.sha256)
                .is_some_and(|queued| queued.ptr_eq(&job.code))
            {
                queue.pending.remove(&job.sha256);
            }
        }
        self.outstanding.send_modify(|n| *n -= 1);
    }

    /// Counts other background work, until [`Optimiser::finish_work`].
    pub(crate) fn start_work(&self) {
        self.outstanding.send_modify(|n| *n += 1);
    }

    /// Background work counted by [`Optimiser::start_work`] is done.
    pub(crate) fn finish_work(&self) {
        self.outstanding.send_modify(|n| *n -= 1);
    }

    /// Waits until nothing is queued, compiling or otherwise outstanding.
    pub(crate) async fn idle(&self) {
        let mut outstanding = self.outstanding.subscribe();
        // The sender lives as long as `self`.
        let _ = outstanding.wait_for(|n| *n == 0).await;
    }
}

/// The next job: the first one a call asked for, else the first queued.
fn take_next(jobs: &mut VecDeque<Job>) -> Option<Job> {
    let wanted = jobs
        .iter()
        .position(|job| job.code.upgrade().is_some_and(|code| code.wanted()));
    jobs.remove(wanted.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wasm::specs::{Specs, WorldName};

    fn code() -> Arc<Code> {
        let specs = Specs {
            sha256: String::new(),
            world: WorldName::Plugin,
            imports: Vec::new(),
            tools: Vec::new(),
        };
        Arc::new(Code::awaiting(specs, Arc::from(&[][..])))
    }

    fn job(name: &str, code: &Arc<Code>) -> Job {
        Job {
            sha256: name.to_owned(),
            bytes: Arc::from(&[][..]),
            code: Arc::downgrade(code),
        }
    }

    #[test]
    fn a_component_a_call_asked_for_is_compiled_first_then_the_queue_in_order() {
        let codes: Vec<_> = (0..3).map(|_| code()).collect();
        let mut jobs: VecDeque<Job> = ["a", "b", "c"]
            .iter()
            .zip(&codes)
            .map(|(name, code)| job(name, code))
            .collect();
        codes[2].want();
        let order: Vec<String> = std::iter::from_fn(|| take_next(&mut jobs))
            .map(|job| job.sha256)
            .collect();
        assert_eq!(order, ["c", "a", "b"]);
    }

    #[test]
    fn a_held_queue_gives_no_job_until_let_go_and_counts_what_is_outstanding() {
        let queue = Optimiser::new(2);
        let code = code();
        queue.hold();
        assert!(queue.push(job("a", &code)), "a worker starts");
        assert!(queue.pending("a").is_some());
        assert_eq!(*queue.outstanding.borrow(), 1);
        let worker = std::thread::scope(|scope| {
            let worker = scope.spawn(|| match queue.next() {
                Next::Compile(job) => job,
                Next::End(_) => panic!("a job is queued"),
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!worker.is_finished(), "held: no job given");
            assert!(!queue.release(), "a worker runs");
            worker.join().expect("the worker")
        });
        queue.done(&worker);
        assert!(queue.pending("a").is_none());
        assert_eq!(*queue.outstanding.borrow(), 0);
        assert!(matches!(queue.next(), Next::End(true)));
    }
}
