//! How `piton serve` stops without cutting calls short: on a signal it takes no new
//! calls, lets the calls in flight finish for up to a grace period, and answers those
//! still running then with an error that says so, rather than dropping them.
//!
//! [`Calls`] counts the calls in flight (each holds an [`InFlight`] entry for as
//! long as it runs) and says whether new ones are taken; [`Served::drain`] runs the
//! stop. The HTTP server counts its requests in flight the same way ([`Count`]), so
//! that it exits only once their answers are written.
//!
//! [`Served::drain`]: super::Served::drain

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// How long calls in flight get to finish once `piton serve` is told to stop, unless
/// `--shutdown-grace` says otherwise: above the default 10 s tool deadline, so a call
/// within its own limits finishes, and below the 30 s Kubernetes waits before it
/// kills a pod.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(15);

/// How long the answers to calls that ended (or were cut at the grace's end) get to
/// be written out before piton exits anyway.
pub const FLUSH: Duration = Duration::from_secs(5);

/// A count of things in flight that can be waited on until it is zero.
#[derive(Debug)]
pub(super) struct Count(watch::Sender<usize>);

impl Default for Count {
    fn default() -> Self {
        Self(watch::Sender::new(0))
    }
}

impl Count {
    /// One more in flight, until the returned entry is dropped.
    pub(super) fn enter(self: &Arc<Self>) -> InFlight {
        self.0.send_modify(|n| *n += 1);
        InFlight(self.clone())
    }

    /// How many are in flight now.
    pub(super) fn now(&self) -> usize {
        *self.0.borrow()
    }

    /// Resolves once none are in flight.
    pub(super) async fn none(&self) {
        let mut count = self.0.subscribe();
        // The sender lives in `self`, so this never errs.
        let _ = count.wait_for(|n| *n == 0).await;
    }
}

/// One thing in flight: it counts until dropped.
#[derive(Debug)]
pub(super) struct InFlight(Arc<Count>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Where the server is in stopping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Calls are taken.
    Serving,
    /// A signal arrived: no new calls; those in flight run on.
    Draining,
    /// The grace (this long) is over: the calls still running end with an error.
    Cut(Duration),
}

/// Why a call was not taken: the server is stopping.
#[derive(Debug, thiserror::Error)]
#[error(
    "tool `{tool}` was not run: piton is shutting down (it was told to stop); send the \
     call again, to another replica or once piton has restarted"
)]
pub(super) struct Refused {
    tool: String,
}

/// The calls of one served registry (all its sessions, across reloads): how many
/// are in flight, and whether new ones are taken.
#[derive(Debug)]
pub(super) struct Calls {
    in_flight: Arc<Count>,
    stage: watch::Sender<Stage>,
}

impl Default for Calls {
    fn default() -> Self {
        Self {
            in_flight: Arc::default(),
            stage: watch::Sender::new(Stage::Serving),
        }
    }
}

impl Calls {
    /// A call of `tool` starting: it counts until the entry is dropped; refused once
    /// the server is stopping.
    pub(super) fn start(&self, tool: &str) -> Result<InFlight, Refused> {
        // Entered before the stage is read: a stop that starts in between then
        // waits for this call rather than missing it.
        let entry = self.in_flight.enter();
        if *self.stage.borrow() == Stage::Serving {
            Ok(entry)
        } else {
            Err(Refused {
                tool: tool.to_owned(),
            })
        }
    }

    /// Resolves when the calls still running must end: the grace is over. Gives the
    /// grace, for the error the call answers with.
    pub(super) async fn cut(&self) -> Duration {
        let mut stage = self.stage.subscribe();
        let cut = stage
            .wait_for(|s| matches!(s, Stage::Cut(_)))
            .await
            .ok()
            .map(|stage| *stage);
        match cut {
            Some(Stage::Cut(grace)) => grace,
            // The sender lives in `self`, so it never closes: this waits forever.
            _ => std::future::pending().await,
        }
    }

    /// Whether a stop has begun.
    pub(super) fn stopping(&self) -> bool {
        *self.stage.borrow() != Stage::Serving
    }

    /// Takes no new calls from now on.
    pub(super) fn stop_taking(&self) {
        self.stage.send_if_modified(|stage| {
            let serving = *stage == Stage::Serving;
            if serving {
                *stage = Stage::Draining;
            }
            serving
        });
    }

    /// Ends the calls still running: the grace of `grace` is over.
    pub(super) fn cut_now(&self, grace: Duration) {
        self.stage.send_replace(Stage::Cut(grace));
    }

    /// The calls in flight.
    pub(super) fn in_flight(&self) -> &Count {
        &self.in_flight
    }
}

/// What a stop found: how many calls were in flight when it began, and how many of
/// them were still running at the end of the grace and were cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drained {
    /// Calls in flight when the stop began.
    pub in_flight: usize,
    /// Calls still running when the grace was over, answered with an error.
    pub cut: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_refuses_new_calls_and_lets_those_in_flight_run() {
        let calls = Calls::default();
        let first = calls.start("a").expect("taken while serving");
        assert!(!calls.stopping());
        calls.stop_taking();
        assert!(calls.stopping());
        let refused = calls.start("b").expect_err("refused while stopping");
        assert!(refused.to_string().contains("`b` was not run"), "{refused}");
        assert_eq!(calls.in_flight().now(), 1, "a refused call does not count");
        drop(first);
        assert_eq!(calls.in_flight().now(), 0);
    }

    #[tokio::test]
    async fn none_resolves_once_every_entry_is_dropped() {
        let count = Arc::new(Count::default());
        let one = count.enter();
        let two = count.enter();
        assert_eq!(count.now(), 2);
        let waiter = tokio::spawn({
            let count = count.clone();
            async move { count.none().await }
        });
        drop(one);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(two);
        waiter.await.expect("resolves");
        assert_eq!(count.now(), 0);
    }

    #[tokio::test]
    async fn cut_gives_the_grace() {
        let calls = Arc::new(Calls::default());
        let waiting = tokio::spawn({
            let calls = calls.clone();
            async move { calls.cut().await }
        });
        calls.stop_taking();
        calls.cut_now(Duration::from_secs(3));
        assert_eq!(waiting.await.expect("resolves"), Duration::from_secs(3));
    }
}
