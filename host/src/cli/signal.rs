//! The signals that stop piton: SIGINT (Ctrl-C) and SIGTERM (what a service manager
//! or Kubernetes sends). `serve` stops gracefully on either (through its
//! [`StopHandle`](crate::serve::StopHandle)); `call`, `list` and `inspect` close their
//! upstream servers and exit 130 or 143, as a shell reports a process the signal
//! ended. Whatever a thread is doing, the process ends within a bound after the
//! signal (see [`stop_signal`]): that backstop is the command line's, not the
//! library's, which never ends the program it runs in.

use std::future::Future;
use std::time::Duration;

use super::out::Outcome;
use crate::serve::{Signal, next_signal};

/// The exit code a shell gives a process `signal` ended: 128 + its number.
pub(super) fn outcome(signal: Signal) -> Outcome {
    match signal {
        Signal::Interrupt => Outcome::Interrupted,
        Signal::Terminate => Outcome::Terminated,
    }
}

/// How long after a stopping signal `piton call`, `list` and `inspect` may take to
/// close their upstream servers before the process exits anyway.
pub(super) const CLOSE: Duration = Duration::from_secs(10);

/// Resolves on SIGINT or SIGTERM, giving which. The handlers are in place when this
/// returns, so a signal sent right after is not lost (nor kills the process).
///
/// The signals are watched on a thread of their own, so that they are seen whatever
/// the async threads are doing; if the process has not ended `within` after one
/// arrived, that thread ends it, with the signal's exit code.
pub(super) fn stop_signal(within: Duration) -> impl Future<Output = Signal> {
    let (arrived, on_arrival) = tokio::sync::oneshot::channel();
    let watching = watch_on_a_thread(within, arrived);
    async move {
        let signal = match watching {
            Ok(()) => match on_arrival.await {
                Ok(signal) => signal,
                // The thread ended without a signal: none will be seen.
                Err(_) => std::future::pending().await,
            },
            Err(message) => {
                tracing::warn!(%message, "watching for signals on the async threads");
                next_signal().await
            }
        };
        tracing::info!("stopping: {} arrived", signal.name());
        signal
    }
}

/// Starts the thread that watches for the signals (its handlers in place when this
/// returns), or says why not.
fn watch_on_a_thread(
    within: Duration,
    arrived: tokio::sync::oneshot::Sender<Signal>,
) -> Result<(), String> {
    let (ready, is_ready) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("piton-signals".to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready.send(Err(format!("cannot start its runtime: {e}")));
                    return;
                }
            };
            let signal = runtime.block_on(async {
                // Made inside the runtime: tokio's handlers are installed here.
                let waiting = next_signal();
                let _ = ready.send(Ok(()));
                waiting.await
            });
            let _ = arrived.send(signal);
            std::thread::sleep(within);
            eprintln!(
                "piton: {}: still running {within:?} after it; exiting now",
                signal.name()
            );
            std::process::exit(outcome(signal) as i32);
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    is_ready
        .recv()
        .unwrap_or_else(|_| Err("its thread ended".to_owned()))
}
