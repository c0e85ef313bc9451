//! Deadlines on one `serve --http` connection, by where it is in its request/answer
//! cycle: a request's head and body must arrive in time, and a connection may sit
//! idle between requests only so long. While an answer is worked on or streamed (a
//! long tool call, an event stream), no deadline runs.
//!
//! The connection's reads ([`TrackedIo`]), its service and the bodies it carries
//! ([`RequestBody`], [`ResponseBody`]) move its [`Phase`] along; the connection's task
//! closes it when the phase's deadline passes. (hyper's own `header_read_timeout`
//! also runs while a connection is idle, so it cannot tell the two apart.)
//!
//! The same stream counts its writes ([`Tally`]), which the connection logs when it
//! closes: an answer should cost one write, and a second one can stall on the
//! client's delayed ACK.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio::time::Instant;

use super::limits::HttpLimits;
use crate::serve::stop::InFlight;

/// Where a connection is, and since when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for a request's head: since connecting, or since its first byte.
    Head(Instant),
    /// The head is in; the body is arriving.
    Body(Instant),
    /// The request is in; its answer is worked on or sent. No deadline.
    Busy,
    /// The last answer is sent and nothing of the next request has arrived.
    Idle(Instant),
}

impl Phase {
    /// When a connection in this phase is closed, and what it failed to do by then;
    /// `None` for no deadline (or one too far off to be represented).
    pub(super) fn deadline(self, limits: &HttpLimits) -> Option<(Instant, &'static str)> {
        let (since, limit, why) = match self {
            Self::Head(since) => (
                since,
                limits.header_timeout,
                "sent no complete request head within --header-timeout",
            ),
            Self::Body(since) => (
                since,
                limits.body_timeout,
                "sent no complete request body within --body-timeout",
            ),
            Self::Idle(since) => (
                since,
                limits.idle_timeout,
                "sent no new request within --idle-timeout",
            ),
            Self::Busy => return None,
        };
        Some((since.checked_add(limit)?, why))
    }
}

/// The phase of one connection, shared by everything that moves it along.
#[derive(Clone, Debug)]
pub(super) struct Phases(Arc<watch::Sender<Phase>>);

impl Phases {
    /// A connection that has just been accepted, and a receiver that sees its phase.
    pub(super) fn start() -> (Self, watch::Receiver<Phase>) {
        let (send, receive) = watch::channel(Phase::Head(Instant::now()));
        (Self(Arc::new(send)), receive)
    }

    /// Moves a phase that `from` matches to `to()`.
    fn advance(&self, from: impl Fn(&Phase) -> bool, to: impl FnOnce() -> Phase) {
        self.0.send_if_modified(|phase| {
            let moves = from(phase);
            if moves {
                *phase = to();
            }
            moves
        });
    }

    /// A request's head is in; its body is still to come unless `body_done`.
    pub(super) fn request(&self, body_done: bool) {
        let phase = if body_done {
            Phase::Busy
        } else {
            Phase::Body(Instant::now())
        };
        self.0.send_replace(phase);
    }

    /// The request's body is all in (or failed).
    fn body_done(&self) {
        self.advance(|p| matches!(p, Phase::Body(_)), || Phase::Busy);
    }

    /// The answer is sent (or dropped).
    fn answered(&self) {
        self.advance(
            |p| matches!(p, Phase::Body(_) | Phase::Busy),
            || Phase::Idle(Instant::now()),
        );
    }

    /// Bytes arrived: on an idle connection, the next request has begun.
    fn bytes_arrived(&self) {
        self.advance(
            |p| matches!(p, Phase::Idle(_)),
            || Phase::Head(Instant::now()),
        );
    }
}

/// What one connection has carried: requests in and writes out.
#[derive(Debug, Default)]
pub(super) struct Tally {
    requests: AtomicU64,
    writes: AtomicU64,
}

impl Tally {
    /// A request's head is in.
    pub(super) fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests so far.
    pub(super) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Writes to the socket so far that wrote something.
    pub(super) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    fn wrote(&self, written: &Poll<io::Result<usize>>) {
        if matches!(written, Poll::Ready(Ok(n)) if *n > 0) {
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A connection's stream, reporting when bytes arrive and counting its writes.
#[derive(Debug)]
pub(super) struct TrackedIo<T> {
    inner: T,
    phases: Phases,
    tally: Arc<Tally>,
}

impl<T> TrackedIo<T> {
    pub(super) fn new(inner: T, phases: Phases, tally: Arc<Tally>) -> Self {
        Self {
            inner,
            phases,
            tally,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TrackedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.phases.bytes_arrived();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TrackedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.tally.wrote(&written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.tally.wrote(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request's body, reporting when it is all in.
#[derive(Debug)]
pub(super) struct RequestBody<B> {
    inner: B,
    phases: Phases,
}

impl<B> RequestBody<B> {
    pub(super) fn new(inner: B, phases: Phases) -> Self {
        Self { inner, phases }
    }
}

impl<B: Body + Unpin> Body for RequestBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(frame) = &polled
            && (!matches!(frame, Some(Ok(_))) || self.inner.is_end_stream())
        {
            self.phases.body_done();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An answer's body, reporting when it is sent (hyper drops it then) or dropped.
#[derive(Debug)]
pub(super) struct ResponseBody<B> {
    inner: B,
    phases: Phases,
    /// Counts the request as in flight until the answer is sent (see `stop`).
    _in_flight: Option<InFlight>,
}

impl<B> ResponseBody<B> {
    pub(super) fn new(inner: B, phases: Phases) -> Self {
        Self {
            inner,
            phases,
            _in_flight: None,
        }
    }

    /// Keeps `in_flight` until the body is sent or dropped.
    pub(super) fn holding(mut self, in_flight: Option<InFlight>) -> Self {
        self._in_flight = in_flight;
        self
    }
}

impl<B> Drop for ResponseBody<B> {
    fn drop(&mut self) {
        self.phases.answered();
    }
}

impl<B: Body + Unpin> Body for ResponseBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn each_phase_has_its_own_deadline_and_busy_has_none() {
        let limits = HttpLimits::default();
        let now = Instant::now();
        let at = |phase: Phase| phase.deadline(&limits).map(|(at, _)| at - now);
        assert_eq!(at(Phase::Head(now)), Some(limits.header_timeout));
        assert_eq!(at(Phase::Body(now)), Some(limits.body_timeout));
        assert_eq!(at(Phase::Idle(now)), Some(limits.idle_timeout));
        assert_eq!(at(Phase::Busy), None);
    }

    #[test]
    fn a_timeout_too_long_to_represent_is_no_deadline_not_a_panic() {
        let limits = HttpLimits {
            header_timeout: Duration::MAX,
            ..HttpLimits::default()
        };
        assert_eq!(Phase::Head(Instant::now()).deadline(&limits), None);
    }

    #[tokio::test]
    async fn a_request_moves_head_body_busy_idle_and_bytes_start_the_next_head() {
        let (phases, phase) = Phases::start();
        assert!(matches!(*phase.borrow(), Phase::Head(_)));
        phases.bytes_arrived();
        assert!(matches!(*phase.borrow(), Phase::Head(_)));
        phases.request(false);
        assert!(matches!(*phase.borrow(), Phase::Body(_)));
        phases.body_done();
        assert_eq!(*phase.borrow(), Phase::Busy);
        drop(ResponseBody::new((), phases.clone()));
        assert!(matches!(*phase.borrow(), Phase::Idle(_)));
        phases.bytes_arrived();
        assert!(matches!(*phase.borrow(), Phase::Head(_)));
        phases.request(true);
        assert_eq!(*phase.borrow(), Phase::Busy);
    }
}
