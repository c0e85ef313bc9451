//! A stdio upstream server's stderr: logged line by line, its last lines kept for
//! error messages, with the secrets the server was given masked.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncBufReadExt as _;
use tokio::process::ChildStderr;

/// How many lines of a stdio server's stderr are kept for error messages.
const STDERR_TAIL: usize = 5;

/// How much of one stderr line is kept (the rest is cut), so a server that never
/// writes a newline cannot grow piton's memory.
const STDERR_LINE: usize = 4096;

/// The last lines a stdio server wrote to stderr, and whether it has closed it.
#[derive(Default)]
pub(super) struct Tail {
    lines: Mutex<VecDeque<String>>,
    closed: AtomicBool,
}

impl Tail {
    /// Waits a little for the reader to reach the end of a dying server's stderr, so
    /// that its last words make it into the error.
    pub(super) async fn settle(&self) {
        for _ in 0..20 {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Follows `stderr` until it closes: each line (at most [`STDERR_LINE`] bytes at a
    /// time, decoded lossily, each of `secrets` replaced by `***`) is logged under
    /// `server` and the last [`STDERR_TAIL`] are kept.
    pub(super) fn follow(stderr: ChildStderr, server: String, secrets: Vec<String>) -> Arc<Self> {
        let tail = Arc::new(Self::default());
        let keep = tail.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt as _;
            let mut reader = tokio::io::BufReader::new(stderr);
            let mut bytes = Vec::new();
            loop {
                bytes.clear();
                // At most STDERR_LINE bytes at a time: a longer line comes in pieces.
                match (&mut reader)
                    .take(STDERR_LINE as u64)
                    .read_until(b'\n', &mut bytes)
                    .await
                {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(_) => {
                        // Keep draining, so the server never writes to a closed pipe.
                        let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
                        break;
                    }
                }
                let mut line = String::from_utf8_lossy(&bytes).trim_end().to_owned();
                for secret in &secrets {
                    line = line.replace(secret.as_str(), "***");
                }
                tracing::info!(server, "stderr: {line}");
                let mut lines = keep
                    .lines
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if lines.len() == STDERR_TAIL {
                    lines.pop_front();
                }
                lines.push_back(line);
            }
            keep.closed.store(true, Ordering::Release);
        });
        tail
    }

    /// "; its last stderr: A | B", or nothing when it wrote nothing.
    pub(super) fn quote(&self) -> String {
        let lines = self
            .lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.is_empty() {
            String::new()
        } else {
            format!(
                "; its last stderr: {}",
                lines.iter().cloned().collect::<Vec<_>>().join(" | ")
            )
        }
    }
}
