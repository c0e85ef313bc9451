//! The byte plumbing under the stdio session (lean.rs): the peer's input cut into
//! lines, the lines handed on to rmcp's own line transport, and one output that rmcp's
//! messages and the lean answers share, each written whole.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The longest line that is decided on whole (parsed for the lean path). A longer
/// one goes to rmcp as it arrives, which applies its own line limit, so a peer that
/// never sends a newline costs this much memory here and no more.
pub(super) const WHOLE_LINE: usize = 256 * 1024;

/// How much is read from the peer at once.
const READ_CHUNK: usize = 64 * 1024;

/// A piece of the peer's input, as [`Lines::poll_piece`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    /// A whole line, its newline included; the bytes are [`Lines::line`].
    Line,
    /// Part of a line too long to hold ([`WHOLE_LINE`]), or the unterminated end of
    /// the input: bytes to hand on as they are, in [`Lines::line`].
    Part,
    /// The peer closed its end (or reading failed).
    End,
}

/// The peer's input, cut into lines.
pub(super) struct Lines<R> {
    read: R,
    buf: Vec<u8>,
    /// `buf[start..end]` is read and not yet given out.
    start: usize,
    end: usize,
    /// The range [`Lines::line`] gives: the last piece.
    piece: (usize, usize),
    /// Inside a line longer than [`WHOLE_LINE`], handed on in parts until its newline.
    long: bool,
    ended: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub(super) fn new(read: R) -> Self {
        Self {
            read,
            buf: Vec::new(),
            start: 0,
            end: 0,
            piece: (0, 0),
            long: false,
            ended: false,
        }
    }

    /// The bytes of the last piece.
    pub(super) fn line(&self) -> &[u8] {
        &self.buf[self.piece.0..self.piece.1]
    }

    /// The next piece of input. A read error ends the input, as it ends rmcp's.
    pub(super) fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Piece> {
        loop {
            let unread = &self.buf[self.start..self.end];
            if let Some(at) = unread.iter().position(|&b| b == b'\n') {
                let piece = if self.long { Piece::Part } else { Piece::Line };
                self.long = false;
                return Poll::Ready(self.give(at + 1, piece));
            }
            if !unread.is_empty() && (self.long || unread.len() >= WHOLE_LINE || self.ended) {
                self.long = !self.ended;
                return Poll::Ready(self.give(unread.len(), Piece::Part));
            }
            if self.ended {
                return Poll::Ready(Piece::End);
            }
            self.make_room();
            let mut read = ReadBuf::new(&mut self.buf[self.end..]);
            match Pin::new(&mut self.read).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) if read.filled().is_empty() => self.ended = true,
                Poll::Ready(Ok(())) => self.end += read.filled().len(),
                Poll::Ready(Err(error)) => {
                    tracing::error!(%error, "cannot read the MCP input; ending the session");
                    self.ended = true;
                    self.start = self.end;
                }
            }
        }
    }

    fn give(&mut self, len: usize, piece: Piece) -> Piece {
        self.piece = (self.start, self.start + len);
        self.start += len;
        piece
    }

    /// Moves what is unread to the front and leaves at least [`READ_CHUNK`] free
    /// after it. Nothing handed out is still borrowed here: [`Lines::line`] is read
    /// before the next [`Lines::poll_piece`].
    fn make_room(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            self.piece = (0, 0);
        }
        if self.buf.len() < self.end + READ_CHUNK {
            self.buf.resize(self.end + READ_CHUNK, 0);
        }
    }
}

/// Lines handed on to rmcp's line transport: what the session feeds in, that
/// transport reads out.
///
/// The transport's reader registers no waker: it is only ever polled by the session
/// that feeds it ([`Fed::push`]), which polls it again after every feed, in the same
/// task. That keeps a message that goes to rmcp from costing a wake-up of its own.
#[derive(Clone, Default)]
pub(super) struct Fed(Arc<Mutex<FedState>>);

#[derive(Default)]
struct FedState {
    bytes: VecDeque<u8>,
    ended: bool,
}

impl Fed {
    fn state(&self) -> std::sync::MutexGuard<'_, FedState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `bytes` on.
    pub(super) fn push(&self, bytes: &[u8]) {
        self.state().bytes.extend(bytes);
    }

    /// Ends the input of rmcp's transport once it has read what was fed.
    pub(super) fn end(&self) {
        self.state().ended = true;
    }

    /// Whether bytes wait to be read, or the end to be seen.
    pub(super) fn waiting(&self) -> bool {
        let state = self.state();
        !state.bytes.is_empty() || state.ended
    }
}

impl AsyncRead for Fed {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut state = self.state();
        if state.bytes.is_empty() {
            return if state.ended {
                Poll::Ready(Ok(()))
            } else {
                // No waker: see the type's documentation.
                Poll::Pending
            };
        }
        let n = buf.remaining().min(state.bytes.len());
        let (front, back) = state.bytes.as_slices();
        let from_front = n.min(front.len());
        buf.put_slice(&front[..from_front]);
        buf.put_slice(&back[..n - from_front]);
        state.bytes.drain(..n);
        Poll::Ready(Ok(()))
    }
}

/// The session's output, shared by rmcp's transport (as its writer) and the lean
/// path. Every message is put in whole, so the two never interleave inside a line.
///
/// Whoever flushes writes out everything queued, not only its own message, and is
/// done only when nothing is left. The writer keeps one waker (the last to wait), so
/// the others that wait are kept here and woken once all is written: else an rmcp
/// send whose waker was displaced would never finish, and hold rmcp's writer.
pub(super) struct Out<W>(Arc<Mutex<OutState<W>>>);

impl<W> Clone for Out<W> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

struct OutState<W> {
    write: W,
    buf: Vec<u8>,
    /// `buf[..written]` is written.
    written: usize,
    /// Why writing failed; then nothing more is written.
    failed: Option<io::ErrorKind>,
    /// Who waits for everything to be written, besides the writer's own waker.
    waiting: Vec<Waker>,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    pub(super) fn new(write: W) -> Self {
        Self(Arc::new(Mutex::new(OutState {
            write,
            buf: Vec::new(),
            written: 0,
            failed: None,
            waiting: Vec::new(),
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, OutState<W>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one whole message (a line).
    pub(super) fn put(&self, line: &[u8]) {
        let mut state = self.state();
        if state.failed.is_none() {
            state.buf.extend_from_slice(line);
        }
    }

    /// How many bytes wait to be written.
    pub(super) fn queued(&self) -> usize {
        let state = self.state();
        state.buf.len() - state.written
    }

    /// Writes out everything queued.
    pub(super) fn poll_write_out(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut state = self.state();
        let state = &mut *state;
        if let Some(kind) = state.failed {
            return Poll::Ready(Err(io::Error::new(kind, "the MCP output failed earlier")));
        }
        while state.written < state.buf.len() {
            let result = Pin::new(&mut state.write).poll_write(cx, &state.buf[state.written..]);
            match result {
                Poll::Pending => {
                    state.wait(cx);
                    return Poll::Pending;
                }
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(state.fail(io::ErrorKind::WriteZero.into())));
                }
                Poll::Ready(Ok(n)) => state.written += n,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(state.fail(error))),
            }
        }
        state.buf.clear();
        state.written = 0;
        let flushed = match Pin::new(&mut state.write).poll_flush(cx) {
            Poll::Pending => {
                state.wait(cx);
                return Poll::Pending;
            }
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(error)) => Poll::Ready(Err(state.fail(error))),
        };
        state.wake_waiting();
        flushed
    }
}

impl<W> OutState<W> {
    /// Drops what is queued: a peer that stopped reading gets nothing more.
    fn fail(&mut self, error: io::Error) -> io::Error {
        self.failed = Some(error.kind());
        self.buf = Vec::new();
        self.written = 0;
        self.wake_waiting();
        error
    }

    fn wait(&mut self, cx: &Context<'_>) {
        if !self.waiting.iter().any(|w| w.will_wake(cx.waker())) {
            self.waiting.push(cx.waker().clone());
        }
    }

    fn wake_waiting(&mut self) {
        for waker in self.waiting.drain(..) {
            waker.wake();
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Out<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // rmcp's framed writer hands over each encoded message in one piece.
        self.put(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_write_out(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_write_out(cx))?;
        let mut state = self.state();
        Pin::new(&mut state.write).poll_shutdown(cx)
    }
}
