//! The event stream answering a POST ends with its answer, in the same write.
//!
//! A POST of one JSON-RPC request is answered by an event stream that carries what
//! the server sends about that request (progress, its own requests) and then the
//! answer, after which nothing more can come: rmcp closes the stream, but only once
//! the request's task has wound down, a few wake-ups later. By then hyper has
//! written the answer's event and must write the chunk that ends the body on its
//! own: two writes per call, the second small one waiting for a client's delayed ACK
//! where Nagle's algorithm is on, and two packets where it is off. [`EndsWithAnswer`]
//! ends the body as its answer passes, so hyper writes the event and the end together.
//!
//! Only POST streams are cut: the GET stream of a session can carry answers to
//! requests whose own stream is gone, and must stay open after them.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use serde::de::IgnoredAny;

/// A POST's event stream, ended as soon as the answer to its request has passed.
#[derive(Debug)]
pub(super) struct EndsWithAnswer<B> {
    inner: B,
    /// Whether to look for the answer at all (an event stream answering a POST).
    watch: bool,
    /// The answer has passed: nothing more is sent.
    answered: bool,
}

impl<B> EndsWithAnswer<B> {
    /// `inner`, ended after its answer when `watch` (a POST answered by an event
    /// stream), else passed through as it is.
    pub(super) fn new(inner: B, watch: bool) -> Self {
        Self {
            inner,
            watch,
            answered: false,
        }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for EndsWithAnswer<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.answered {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if self.watch
            && let Poll::Ready(Some(Ok(frame))) = &polled
            && frame.data_ref().is_some_and(|event| is_answer(event))
        {
            self.answered = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.answered || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.answered {
            SizeHint::with_exact(0)
        } else {
            self.inner.size_hint()
        }
    }
}

/// The top-level members of a JSON-RPC message that tell an answer from the rest;
/// their values are skipped, not kept.
#[derive(serde::Deserialize)]
struct Kind {
    method: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

/// Whether `frame` is one whole server-sent event whose data is a JSON-RPC answer (a
/// result or an error, not a request or notification). Anything else, or anything
/// not understood, is not: the stream then ends when rmcp ends it, as before.
fn is_answer(frame: &[u8]) -> bool {
    // One event, whole: it ends with the blank line, and has no other.
    let Some(event) = frame.strip_suffix(b"\n\n") else {
        return false;
    };
    if event.windows(2).any(|pair| pair == b"\n\n") {
        return false;
    }
    let mut lines = event
        .split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .map(|value| value.strip_prefix(b" ").unwrap_or(value));
    // rmcp writes a message as one data line: read it where it lies.
    let first = lines.next().unwrap_or_default();
    let joined;
    let data = match lines.next() {
        None => first,
        Some(second) => {
            joined = [first, second]
                .into_iter()
                .chain(lines)
                .collect::<Vec<_>>()
                .join(&b'\n');
            &joined[..]
        }
    };
    serde_json::from_slice::<Kind>(data)
        .is_ok_and(|kind| kind.method.is_none() && (kind.result.is_some() || kind.error.is_some()))
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;
    use http_body_util::{BodyExt as _, StreamBody};

    use super::*;

    #[test]
    fn an_answer_is_a_result_or_an_error_in_one_whole_event() {
        for answer in [
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-1,\"message\":\"m\"}}\nid: 3\n\n",
            "id: 0/1\ndata:{\"result\":{},\"id\":2,\"jsonrpc\":\"2.0\"}\n\n",
            // Data over several lines is one message, its lines joined by newlines.
            "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\ndata: \"result\":{}}\n\n",
        ] {
            assert!(is_answer(answer.as_bytes()), "{answer:?}");
        }
        for other in [
            // A notification and a request of the server's own.
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"sampling/createMessage\",\"result\":{}}\n\n",
            // The priming event, a keep-alive comment, half an event, two events.
            "data: \nid: 0\nretry: 3000\n\n",
            ":\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata: {\"x\":1}\n\n",
            "data: not json\n\n",
        ] {
            assert!(!is_answer(other.as_bytes()), "{other:?}");
        }
    }

    fn events(
        events: Vec<&'static str>,
    ) -> StreamBody<impl futures::Stream<Item = Result<Frame<Bytes>, std::convert::Infallible>>>
    {
        let frames: Vec<_> = events
            .into_iter()
            .map(|event| Ok(Frame::data(Bytes::from_static(event.as_bytes()))))
            .collect();
        // Never ends on its own, like a stream whose request is still winding down.
        StreamBody::new(futures::stream::iter(frames).chain(futures::stream::pending()))
    }

    #[tokio::test]
    async fn a_post_stream_ends_with_its_answer_and_is_known_to_end_there() {
        let progress = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n";
        let answer = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let mut body = EndsWithAnswer::new(events(vec![progress, answer]), true);
        let first = body.frame().await.expect("a frame").expect("data");
        assert_eq!(first.data_ref().map(|d| &d[..]), Some(progress.as_bytes()));
        assert!(!body.is_end_stream());
        let second = body.frame().await.expect("a frame").expect("data");
        assert_eq!(second.data_ref().map(|d| &d[..]), Some(answer.as_bytes()));
        // Known before the next poll: hyper writes the end with the answer.
        assert!(body.is_end_stream());
        assert!(body.frame().await.is_none());
    }

    #[tokio::test]
    async fn a_stream_not_watched_goes_on_after_an_answer() {
        let answer = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let later =
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
        let mut body = EndsWithAnswer::new(events(vec![answer, later]), false);
        body.frame().await.expect("a frame").expect("data");
        assert!(!body.is_end_stream());
        let next = body.frame().await.expect("a frame").expect("data");
        assert_eq!(next.data_ref().map(|d| &d[..]), Some(later.as_bytes()));
    }
}
