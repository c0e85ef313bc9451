//! The signals that stop serving: SIGINT (Ctrl-C) and SIGTERM (what a service manager
//! or Kubernetes sends), watched on the async runtime. A `Server` made with
//! `stop_on_signals` stops gracefully on either (server.rs); the CLI watches them on a
//! thread of its own, with a backstop that ends the process (cli/signal.rs).

use std::future::Future;

/// A stopping signal that arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT, Ctrl-C.
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Signal {
    /// Its name, as `kill -l` gives it: `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
        }
    }
}

/// Resolves on the next SIGINT or SIGTERM, giving which. The handlers are in place
/// once this returns (a future that has not been polled yet), so a signal sent right
/// after is not lost, nor does it end the process. Where SIGTERM cannot be watched
/// (not Unix, or the handler cannot be installed), only Ctrl-C is.
pub fn next_signal() -> impl Future<Output = Signal> + Send {
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
        signal
    }
}
