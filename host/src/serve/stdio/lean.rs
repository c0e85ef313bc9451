//! The stdio session's transport, with a lean path for `tools/call`.
//!
//! rmcp handles every message in a task of its own: it parses the line into its
//! untagged message types, spawns the handler, sends the result back to its loop
//! through a channel and spawns a task to write it. For a tool call that costs more
//! than the call. Here, once the session has started with `initialize` on a
//! protocol before 2026-07-28, a line that is a plain `tools/call` (a name,
//! arguments, at most a progress token and a trace context) is taken out before
//! rmcp sees it: it is
//! parsed into just those fields, run on the task that read it, and its answer is
//! serialized once, from the same types rmcp would write, straight to the output.
//!
//! Every other line goes on to rmcp's own line transport unchanged, so all else
//! (the handshake, other methods, malformed input, notifications) is answered by
//! rmcp as before. `notifications/cancelled` also drops a lean call in flight, which
//! stops its instance; then it gets no answer, as a cancelled rmcp request. A call
//! that arrives while another lean call runs gets a task of its own, so calls in
//! flight together still run in parallel.

use std::collections::HashMap;
use std::future::{Future, poll_fn};
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::FutureExt as _;
use futures::StreamExt as _;
use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestMethod, CallToolResponse, ClientJsonRpcMessage, ClientNotification, ErrorData,
    JsonObject, JsonRpcMessage, JsonRpcVersion2_0, ProgressToken, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};

use super::wire::{Fed, Lines, Out, Piece};
use crate::call::CallContext;
use crate::consent::Channel;
use crate::serve::reply::{self, Revision};
use crate::serve::served::Served;
use crate::serve::{answer, traced};

/// How long the calls still running when the input ends may take to answer, as
/// rmcp gives its own handlers.
const DRAIN: Duration = Duration::from_secs(5);

/// Past this many bytes waiting to be written (a peer that does not read), no more
/// input is read until they are.
const OUT_HIGH: usize = 4 * 1024 * 1024;

/// What a session's lean path serves, and whether it is on.
pub(super) struct Lean {
    served: Arc<Served>,
    engaged: AtomicBool,
    /// Whether the client can be asked (it declared elicitation): then a call the
    /// consent policy may ask about goes to rmcp, which can send the question.
    elicits: AtomicBool,
    answered: AtomicU64,
}

impl Lean {
    pub(super) fn new(served: Arc<Served>) -> Arc<Self> {
        Arc::new(Self {
            served,
            engaged: AtomicBool::new(false),
            elicits: AtomicBool::new(false),
            answered: AtomicU64::new(0),
        })
    }

    /// Turns the lean path on once rmcp's handshake has ended, if the session
    /// started with `initialize` on `protocol` (none: it started without, on
    /// 2026-07-28, whose requests carry their own metadata for rmcp to check).
    /// Lines read before this all went to rmcp, in order.
    pub(super) fn engage(&self, protocol: Option<&ProtocolVersion>, elicits: bool) {
        self.elicits.store(elicits, Ordering::Relaxed);
        if protocol.is_some_and(ProtocolVersion::has_initialize) {
            self.engaged.store(true, Ordering::Release);
        }
    }

    /// Whether `request` is a call the client could be asked about: it goes to
    /// rmcp, which can send `elicitation/create`.
    fn may_ask(&self, request: &LeanRequest) -> bool {
        if !self.elicits.load(Ordering::Relaxed) {
            return false;
        }
        let registry = self.served.registry();
        let Some(consent) = registry.consent() else {
            return false;
        };
        registry
            .get(&request.params.name)
            .is_none_or(|tool| consent.may_ask(tool.as_ref()))
    }

    /// What is served.
    pub(super) fn served(&self) -> &Arc<Served> {
        &self.served
    }

    /// Whether the lean path is on.
    #[cfg(test)]
    pub(super) fn engaged(&self) -> bool {
        self.engaged.load(Ordering::Acquire)
    }

    /// How many calls the lean path has answered.
    #[cfg(test)]
    pub(super) fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

/// A `tools/call` the lean path takes: exactly these fields, nothing unknown (any
/// other shape goes to rmcp, which judges it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeanRequest {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(rename = "method")]
    _method: CallToolRequestMethod,
    params: LeanParams,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeanParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta", default)]
    meta: Option<LeanMeta>,
}

/// The request metadata the lean path accepts: a progress token, which piton's
/// handler never uses either, and the W3C trace context (MCP's SEP-414 keys). Any
/// other key (the 2026-07-28 per-request metadata) goes to rmcp.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeanMeta {
    #[serde(rename = "progressToken", default)]
    _progress_token: Option<ProgressToken>,
    #[serde(default)]
    traceparent: Option<String>,
    #[serde(default)]
    tracestate: Option<String>,
}

impl LeanParams {
    /// The call's context, with the trace context of its `_meta` (ignored when it
    /// does not parse, as on rmcp's path).
    fn context(&self) -> CallContext {
        let meta = self.meta.as_ref().and_then(|meta| {
            let parent = meta.traceparent.as_deref()?;
            Some((parent, meta.tracestate.as_deref()))
        });
        traced::call_context(meta, None)
    }
}

/// The line as a lean `tools/call`, if it is one.
fn parse(line: &[u8]) -> Option<LeanRequest> {
    serde_json::from_slice(line).ok()
}

/// The answer line to request `id`, as rmcp writes it for a peer on a protocol
/// before 2026-07-28 (the only peers the lean path serves).
pub(super) fn answer_line(id: RequestId, answer: Result<CallToolResponse, ErrorData>) -> Vec<u8> {
    let message = reply::message(id, answer.map(ServerResult::from), Revision::Session);
    let mut line = Vec::with_capacity(256);
    reply::encode(&message, &mut line);
    line.push(b'\n');
    line
}

/// A lean call in flight: its request id and, when it ends, its answer line (none
/// when it was cancelled or its task failed).
type Running = Pin<Box<dyn Future<Output = (RequestId, Option<Vec<u8>>)> + Send>>;

/// The stdio session's transport: the peer's lines, lean `tools/call`s answered here,
/// everything else through rmcp's line transport.
pub(super) struct LeanTransport<R, W: AsyncWrite + Unpin> {
    lean: Arc<Lean>,
    lines: Lines<R>,
    fed: Fed,
    rmcp: AsyncRwTransport<RoleServer, Fed, Out<W>>,
    out: Out<W>,
    calls: FuturesUnordered<Running>,
    cancel: HashMap<RequestId, AbortHandle>,
    input_ended: bool,
}

impl<R, W> LeanTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(super) fn new(lean: Arc<Lean>, read: R, write: W) -> Self {
        let fed = Fed::default();
        let out = Out::new(write);
        Self {
            lean,
            lines: Lines::new(read),
            rmcp: AsyncRwTransport::new_server(fed.clone(), out.clone()),
            fed,
            out,
            calls: FuturesUnordered::new(),
            cancel: HashMap::new(),
            input_ended: false,
        }
    }

    /// The next message for rmcp, running lean calls meanwhile.
    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<Option<ClientJsonRpcMessage>> {
        loop {
            if self.fed.waiting() {
                // rmcp's transport reads what was fed; a read cut short keeps its
                // partial line for the next poll, as in rmcp's own loop.
                let received = pin!(self.rmcp.receive()).poll(cx);
                if let Poll::Ready(message) = received {
                    if let Some(JsonRpcMessage::Notification(notification)) = &message {
                        self.cancelled(&notification.notification);
                    }
                    return Poll::Ready(message);
                }
            }
            self.poll_calls(cx);
            if self.out.queued() > 0
                && let Poll::Ready(Err(error)) = self.out.poll_write_out(cx)
            {
                tracing::debug!(%error, "cannot write a tools/call answer");
            }
            if self.input_ended || self.out.queued() > OUT_HIGH {
                return Poll::Pending;
            }
            match self.lines.poll_piece(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Piece::End) => {
                    self.input_ended = true;
                    self.fed.end();
                }
                Poll::Ready(Piece::Part) => self.fed.push(self.lines.line()),
                Poll::Ready(Piece::Line) => {
                    let lean = if self.lean.engaged.load(Ordering::Acquire) {
                        parse(self.lines.line()).filter(|request| !self.lean.may_ask(request))
                    } else {
                        None
                    };
                    match lean {
                        Some(request) => self.start(request),
                        None => self.fed.push(self.lines.line()),
                    }
                }
            }
        }
    }

    /// Writes the answers of the calls that ended.
    fn poll_calls(&mut self, cx: &mut Context<'_>) {
        while let Poll::Ready(Some((id, answer))) = self.calls.poll_next_unpin(cx) {
            self.finish(id, answer);
        }
    }

    fn finish(&mut self, id: RequestId, answer: Option<Vec<u8>>) {
        self.cancel.remove(&id);
        let Some(line) = answer else {
            return;
        };
        self.out.put(&line);
        self.lean.answered.fetch_add(1, Ordering::Relaxed);
    }

    /// Starts a lean call: here, polled by this task, when it is the only one;
    /// else on a task of its own, so that calls in flight together use every core.
    fn start(&mut self, request: LeanRequest) {
        let LeanRequest { id, params, .. } = request;
        let ctx = params.context();
        // The call runs on the registry of now to its end, as through rmcp.
        let served = self.lean.served.clone();
        let registry = served.registry();
        let call = {
            let id = id.clone();
            async move {
                // A client that can be asked never gets here with a call that may be
                // asked about (`may_ask`): this one runs, or is refused as it cannot ask.
                let answer = answer::call_tool(
                    &registry,
                    served.calls(),
                    ctx,
                    &params.name,
                    params.arguments,
                    &Channel::Cannot,
                )
                .await;
                answer_line(id, answer)
            }
        };
        let (handle, registration) = AbortHandle::new_pair();
        if let Some(earlier) = self.cancel.insert(id.clone(), handle) {
            // A reused id: the earlier call can no longer be named; rmcp does the same.
            drop(earlier);
        }
        let running: Running = if self.calls.is_empty() {
            Box::pin(async move {
                let answer = Abortable::new(AssertUnwindSafe(call).catch_unwind(), registration);
                match answer.await {
                    Ok(Ok(line)) => (id, Some(line)),
                    Ok(Err(_panic)) => {
                        tracing::error!(%id, "a tools/call panicked; it gets no answer");
                        (id, None)
                    }
                    Err(_cancelled) => (id, None),
                }
            })
        } else {
            let task = Spawned(tokio::spawn(call));
            Box::pin(async move {
                match Abortable::new(task, registration).await {
                    Ok(Ok(line)) => (id, Some(line)),
                    Ok(Err(error)) => {
                        tracing::error!(%id, %error, "a tools/call task failed; it gets no answer");
                        (id, None)
                    }
                    Err(_cancelled) => (id, None),
                }
            })
        };
        self.calls.push(running);
    }

    /// A `notifications/cancelled` naming a lean call drops that call. rmcp gets the
    /// notification too (it knows no such request, so it does nothing more).
    fn cancelled(&mut self, notification: &ClientNotification) {
        if let ClientNotification::CancelledNotification(cancelled) = notification
            && let Some(id) = &cancelled.params.request_id
            && let Some(handle) = self.cancel.remove(id)
        {
            tracing::info!(%id, reason = cancelled.params.reason, "cancelled");
            handle.abort();
        }
    }
}

/// A call on a task of its own, aborted when dropped (a cancelled call).
struct Spawned(tokio::task::JoinHandle<Vec<u8>>);

impl Future for Spawned {
    type Output = Result<Vec<u8>, tokio::task::JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<R, W> Transport<RoleServer> for LeanTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.rmcp.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        poll_fn(|cx| self.poll_receive(cx)).await
    }

    /// Lets the lean calls still running answer, as rmcp lets its handlers, then
    /// writes out everything and closes.
    async fn close(&mut self) -> Result<(), Self::Error> {
        let drain = async {
            while let Some((id, answer)) = self.calls.next().await {
                self.finish(id, answer);
                if let Err(error) = poll_fn(|cx| self.out.poll_write_out(cx)).await {
                    tracing::debug!(%error, "cannot write a tools/call answer");
                }
            }
        };
        if tokio::time::timeout(DRAIN, drain).await.is_err() {
            tracing::warn!("timed out waiting for the tools/calls in flight to answer");
        }
        // Dropping the rest stops their instances.
        self.calls.clear();
        self.cancel.clear();
        let written = poll_fn(|cx| self.out.poll_write_out(cx)).await;
        let closed = self.rmcp.close().await;
        written.and(closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line the lean path takes is one rmcp reads as the same `tools/call`.
    #[test]
    fn a_lean_request_is_the_tools_call_rmcp_reads() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1}}}"#,
            r#"{"method":"tools/call","params":{"arguments":{},"name":"b"},"id":"s-1","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"c"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"d","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"e","_meta":{"progressToken":"p"}}}"#,
            r#"{"jsonrpc":"2.0","id":5.0,"method":"tools/call","params":{"name":"f","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"g","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"a=1"}}}"#,
        ];
        for line in lines {
            let lean = parse(line.as_bytes()).unwrap_or_else(|| panic!("lean: {line}"));
            let rmcp: ClientJsonRpcMessage = serde_json::from_str(line).expect("rmcp reads it");
            let JsonRpcMessage::Request(request) = rmcp else {
                panic!("not a request to rmcp: {line}");
            };
            let rmcp::model::ClientRequest::CallToolRequest(call) = request.request else {
                panic!("not a tools/call to rmcp: {line}");
            };
            assert_eq!(request.id, lean.id, "{line}");
            assert_eq!(call.params.name, lean.params.name, "{line}");
            assert_eq!(call.params.arguments, lean.params.arguments, "{line}");
        }
    }

    /// Anything else is left to rmcp, which answers it as it always did.
    #[test]
    fn other_lines_are_left_to_rmcp() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"}}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}"#,
            "",
        ];
        for line in lines {
            assert!(parse(line.as_bytes()).is_none(), "{line}");
        }
    }
}
