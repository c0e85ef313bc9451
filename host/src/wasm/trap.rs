//! How an instance's run ends: its deadline, its value, or the trap it came to (which limit it
//! reached, or the guest's own failure in words a person can act on).

use wasmtime::component::ResourceTableError;

use super::sandbox::Sandbox;
use crate::error::{CallError, Trap};
use crate::limits::Limits;

/// Raised by the epoch callback when a call's deadline has passed.
#[derive(Debug, thiserror::Error)]
#[error("deadline exceeded")]
pub(crate) struct DeadlineExceeded;

/// Sets a deadline `timeout` from now on the instance in `store`: checked at every
/// epoch tick, past it the guest traps with [`DeadlineExceeded`].
pub(crate) fn arm<T>(store: &mut wasmtime::Store<T>, timeout: std::time::Duration) {
    let deadline = std::time::Instant::now() + timeout;
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if std::time::Instant::now() >= deadline {
            Err(wasmtime::Error::new(DeadlineExceeded))
        } else {
            // Yield at every tick so that a guest that never stops computing
            // still lets the executor run other calls.
            Ok(wasmtime::UpdateDeadline::Yield(1))
        }
    });
}

/// What an instance's run came to: its value, or the trap it ended in (which limit
/// it reached, or the guest's own failure with its stderr's tail). Logs what the
/// guest printed, with the tool's `name`.
pub(crate) fn answer_of<R>(
    name: &str,
    limits: &Limits,
    sandbox: &Sandbox,
    outcome: Result<wasmtime::Result<R>, tokio::time::error::Elapsed>,
) -> Result<R, CallError> {
    for (stream, captured) in [("stdout", &sandbox.stdout), ("stderr", &sandbox.stderr)] {
        if let Some(text) = captured.text() {
            // Debug-quoted, so a guest's newlines cannot forge log lines.
            tracing::info!(tool = name, stream, output = ?text, "guest output");
        }
    }
    let error = match outcome {
        Ok(Ok(value)) => return Ok(value),
        Err(_elapsed) => return Err(CallError::trap(name, Trap::Deadline(limits.timeout))),
        Ok(Err(error)) => error,
    };
    let trap = if sandbox.limiter.exceeded {
        Trap::Memory(sandbox.limiter.limit())
    } else if error.is::<DeadlineExceeded>() {
        Trap::Deadline(limits.timeout)
    } else if error.chain().any(|e| {
        matches!(
            e.downcast_ref::<ResourceTableError>(),
            Some(ResourceTableError::Full)
        )
    }) {
        Trap::Resources(sandbox.table.max_capacity())
    } else {
        let mut message = root_message(&error);
        if ran_out_of_stack(&error) {
            message.push_str(&format!(
                " (it was recursing: most likely it ran out of stack; piton builds \
                 Rust tools with {} KiB of stack, and building with RUSTFLAGS=\
                 \"-C link-arg=-zstack-size=BYTES\" gives more)",
                piton_guest_builder::STACK_SIZE >> 10
            ));
        }
        if let Some(stderr) = sandbox.stderr.text() {
            let tail: String = stderr
                .trim_end()
                .chars()
                .rev()
                .take(500)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            message.push_str(&format!(" (stderr: {tail})"));
        }
        Trap::Guest(message)
    };
    Err(CallError::trap(name, trap))
}

/// Whether a trap looks like the guest running out of stack: an access out of its
/// memory's bounds while recursing (a backtrace of many frames among a few functions).
/// A Rust or C guest's stack lies first in its memory, so overflowing it goes below
/// address 0, which is out of bounds. wasmtime keeps the innermost 20 frames.
fn ran_out_of_stack(error: &wasmtime::Error) -> bool {
    /// A backtrace at least this long, of at most [`FEW`] functions, is recursion.
    const LONG: usize = 16;
    const FEW: usize = 3;
    if error.downcast_ref::<wasmtime::Trap>() != Some(&wasmtime::Trap::MemoryOutOfBounds) {
        return false;
    }
    let Some(backtrace) = error.downcast_ref::<wasmtime::WasmBacktrace>() else {
        return false;
    };
    let frames = backtrace.frames();
    let functions: std::collections::BTreeSet<_> = frames
        .iter()
        .map(|f| (f.module().name(), f.func_index()))
        .collect();
    frames.len() >= LONG && functions.len() <= FEW
}

/// The innermost cause of a wasmtime error: the trap or the reason, without the
/// backtrace and context lines that wrap it.
pub(super) fn root_message(error: &wasmtime::Error) -> String {
    match error.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => error.root_cause().to_string(),
    }
}

/// A call's error as its trap's text alone (any other error as itself).
pub(super) fn trap_text(error: CallError) -> String {
    match error {
        CallError::Trap { trap, .. } => trap.to_string(),
        other => other.to_string(),
    }
}
