//! The signals that stop piton: SIGINT (Ctrl-C) and SIGTERM (what a service manager
//! or Kubernetes sends). `serve` stops gracefully on either; `call`, `list` and
//! `inspect` close their upstream servers and exit 130 or 143, as a shell reports a
//! process the signal ended.

use std::future::Future;

use super::out::Outcome;

/// A stopping signal that arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Signal {
    /// SIGINT, Ctrl-C.
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Signal {
    /// The exit code a shell gives a process this signal ended: 128 + its number.
    pub(super) fn outcome(self) -> Outcome {
        match self {
            Self::Interrupt => Outcome::Interrupted,
            Self::Terminate => Outcome::Terminated,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
        }
    }
}

/// Resolves on SIGINT or SIGTERM, giving which. The handlers are in place when this
/// returns, so a signal sent right after is not lost (nor kills the process).
pub(super) fn stop_signal() -> impl Future<Output = Signal> {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::terminate())
            .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)))
    };
    async move {
        #[cfg(unix)]
        let signal = match signals {
            Ok((mut term, mut interrupt)) => {
                tokio::select! {
                    _ = term.recv() => Signal::Terminate,
                    _ = interrupt.recv() => Signal::Interrupt,
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch for SIGTERM; Ctrl-C still stops");
                let _ = tokio::signal::ctrl_c().await;
                Signal::Interrupt
            }
        };
        #[cfg(not(unix))]
        let signal = {
            let _ = tokio::signal::ctrl_c().await;
            Signal::Interrupt
        };
        tracing::info!("stopping: {} arrived", signal.name());
        signal
    }
}
