//! `max_write`: the bytes one call may write into files through its mounts.
//!
//! Every way of writing data is counted: `write`, and the streams of
//! `write-via-stream` and `append-via-stream`, which are wrapped so that each
//! `check-write` permit is cut to what is left. Once nothing is left the guest gets
//! `quota` (EDQUOT) and the call goes on. Holes (seeking past the end, `set-size`)
//! hold no data and are not counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::{DynOutputStream, OutputStream, Pollable, StreamError, StreamResult};

/// What a stream reports when the call's write quota is spent; read back as
/// `error-code.quota` by `filesystem-error-code`.
#[derive(Debug, thiserror::Error)]
#[error(
    "the call wrote its max_write ({0} bytes) into its mounts; raise max_write in piton.toml to allow more"
)]
pub(crate) struct QuotaExceeded(pub(crate) u64);

/// The bytes a call may still write, shared by its descriptors and streams.
#[derive(Clone, Debug)]
pub(crate) struct Quota {
    limit: u64,
    used: Arc<AtomicU64>,
}

impl Default for Quota {
    /// No limit: for state built without [`super::configure`] (unit tests).
    fn default() -> Self {
        Self::new(u64::MAX)
    }
}

impl Quota {
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            limit,
            used: Arc::new(AtomicU64::new(0)),
        }
    }

    fn left(&self) -> u64 {
        self.limit.saturating_sub(self.used.load(Ordering::Relaxed))
    }

    /// How many of `wanted` bytes may be written now: all, some, or (none left and
    /// some wanted) `None`.
    pub(crate) fn allow(&self, wanted: usize) -> Option<usize> {
        let left = usize::try_from(self.left()).unwrap_or(usize::MAX);
        if wanted > 0 && left == 0 {
            return None;
        }
        Some(wanted.min(left))
    }

    /// Counts `n` bytes written.
    pub(crate) fn charge(&self, n: u64) {
        self.used.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn exceeded(&self) -> QuotaExceeded {
        QuotaExceeded(self.limit)
    }

    /// `stream`, counted against this quota.
    pub(crate) fn wrap(&self, stream: DynOutputStream) -> DynOutputStream {
        Box::new(Counted {
            inner: stream,
            quota: self.clone(),
        })
    }
}

/// An output stream whose writes count against a quota.
struct Counted {
    inner: DynOutputStream,
    quota: Quota,
}

impl Counted {
    fn spent(&self) -> StreamError {
        StreamError::LastOperationFailed(wasmtime::Error::new(self.quota.exceeded()))
    }
}

#[async_trait::async_trait]
impl Pollable for Counted {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[async_trait::async_trait]
impl OutputStream for Counted {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        match self.quota.allow(bytes.len()) {
            Some(n) if n == bytes.len() => {
                self.inner.write(bytes)?;
                self.quota.charge(n as u64);
                Ok(())
            }
            _ => Err(self.spent()),
        }
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // The permit is cut to what is left; with nothing left it is not, so that
        // checking the stream after a write that used the quota up (as
        // blocking-write-and-flush does) succeeds: the next write fails.
        let permit = self.inner.check_write()?;
        match self.quota.allow(permit) {
            Some(0) | None => Ok(permit),
            Some(n) => Ok(n),
        }
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_allows_up_to_its_limit_then_nothing() {
        let quota = Quota::new(10);
        assert_eq!(quota.allow(4), Some(4));
        quota.charge(4);
        assert_eq!(quota.allow(100), Some(6));
        quota.charge(6);
        assert_eq!(quota.allow(0), Some(0));
        assert_eq!(quota.allow(1), None);
        let shared = quota.clone();
        assert_eq!(shared.allow(1), None, "clones share what was used");
    }
}

/// The most entries (files, folders, links) one call may make: empty ones cost no
/// `max_write`, but each takes an inode and a slot in its folder.
pub(crate) const MAX_NEW_ENTRIES: u64 = 10_000;

/// How many entries a call has made; past [`MAX_NEW_ENTRIES`] the guest gets `quota`.
#[derive(Debug, Default)]
pub(crate) struct NewEntries(u64);

impl NewEntries {
    /// `Ok` while the call may make one more entry.
    pub(crate) fn allow(&self) -> Result<(), ErrorCode> {
        if self.0 < MAX_NEW_ENTRIES {
            Ok(())
        } else {
            Err(ErrorCode::Quota)
        }
    }

    /// Counts one entry made.
    pub(crate) fn made(&mut self) {
        self.0 = self.0.saturating_add(1);
    }
}

/// The most folder listings one call may hold open: each holds a part of its
/// folder's names on the host (on Linux; elsewhere all of them, as wasmtime-wasi
/// reads them at once).
pub(crate) const MAX_LISTINGS: usize = 16;

/// The listings a call holds, by table index; past [`MAX_LISTINGS`] the guest gets
/// `insufficient-memory`.
#[derive(Debug, Default)]
pub(crate) struct Listings(std::collections::HashSet<u32>);

impl Listings {
    /// Whether one more may be opened.
    pub(crate) fn may_open(&self) -> bool {
        self.0.len() < MAX_LISTINGS
    }

    /// Records the listing at table index `rep`.
    pub(crate) fn opened(&mut self, rep: u32) {
        self.0.insert(rep);
    }

    /// Forgets a dropped listing.
    pub(crate) fn closed(&mut self, rep: u32) {
        self.0.remove(&rep);
    }
}
