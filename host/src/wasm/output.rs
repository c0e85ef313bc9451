//! A guest's stdout or stderr: kept up to a bound for the log, the rest counted and
//! dropped. Never the host's own stdout, so a guest cannot write into the MCP stream.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// How much a guest may write in one `write` call: WASI streams ask before writing.
const WRITE_BUDGET: usize = 64 * 1024;

/// A bounded capture of one output stream. Clones share the buffer.
#[derive(Clone, Debug)]
pub(crate) struct CapturedOutput {
    inner: Arc<Mutex<Captured>>,
}

#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: u64,
    limit: usize,
}

impl CapturedOutput {
    /// A capture that keeps at most `limit` bytes.
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Captured {
                limit: usize::try_from(limit).unwrap_or(usize::MAX),
                ..Captured::default()
            })),
        }
    }

    fn append(&self, bytes: &[u8]) {
        // A poisoned lock only means another writer panicked; the bytes are still ours.
        let mut c = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let room = c.limit.saturating_sub(c.kept.len());
        let take = room.min(bytes.len());
        c.kept.extend_from_slice(&bytes[..take]);
        c.dropped += (bytes.len() - take) as u64;
    }

    /// What was kept, as text, with a note of how much was dropped.
    pub(crate) fn text(&self) -> Option<String> {
        let c = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if c.kept.is_empty() && c.dropped == 0 {
            return None;
        }
        let mut text = String::from_utf8_lossy(&c.kept).into_owned();
        if c.dropped > 0 {
            text.push_str(&format!("… [{} more bytes dropped]", c.dropped));
        }
        Some(text)
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl Pollable for CapturedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always writable: past the bound bytes are dropped, and the call's deadline
        // ends a guest that floods forever.
        Ok(WRITE_BUDGET)
    }
}

impl tokio::io::AsyncWrite for CapturedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_the_limit_and_counts_the_rest() {
        let out = CapturedOutput::new(4);
        assert_eq!(out.text(), None);
        out.append(b"ab");
        out.append(b"cdef");
        assert_eq!(out.text().as_deref(), Some("abcd… [2 more bytes dropped]"));
    }
}
