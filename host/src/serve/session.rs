//! The MCP server: the served registry over one connection (stdio for `piton serve`,
//! or one Streamable HTTP session).
//!
//! tools/list carries every tool's spec and all four hints; tools/call goes through
//! [`Registry::call`](crate::registry::Registry::call): error results become `isError`, traps
//! JSON-RPC errors (answer.rs). When the tool set changes ([`Served`]), an initialized
//! session gets `notifications/tools/list_changed`.
//!
//! Over a byte stream ([`serve`]) the session's transport is lean.rs's: plain
//! `tools/call`s are answered there, the same way, without rmcp's per-message tasks.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ClientRequest, GetMeta as _,
    Implementation, JsonRpcMessage, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, ServerJsonRpcMessage, SubscriptionFilter, Tool as WireTool,
    ToolAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::transport::Transport;
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use super::answer;
use super::lean::{Lean, LeanTransport};
use super::served::Served;
use crate::tool::DynTool;

/// Why serving ended with a failure (a clean end of input is `Ok`).
#[derive(Debug, thiserror::Error)]
#[error("MCP session failed: {0}")]
pub struct ServeError(pub(crate) String);

/// Serves `served` over one MCP connection until the peer closes `read`.
///
/// Once `initialize` has started the session, plain `tools/call` lines take the lean
/// path (lean.rs); every other message is rmcp's.
///
/// A connection that closes before or during the handshake is a clean end, like a
/// closed stdin: a client that probes and leaves is not a server failure.
pub async fn serve<R, W>(served: Arc<Served>, read: R, write: W) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    serve_lean(Lean::new(served), read, write, std::future::pending()).await
}

/// [`serve`], until the peer closes `read` or `stop` resolves. Then it takes no new
/// calls, lets those in flight answer for up to `grace` (those still running then
/// answer with an error; see [`Served::drain`]), writes the answers and returns.
pub async fn serve_until<R, W>(
    served: Arc<Served>,
    read: R,
    write: W,
    stop: impl Future<Output = ()>,
    grace: Duration,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let lean = Lean::new(served.clone());
    let drained = async move {
        stop.await;
        let drained = served.drain(grace).await;
        tracing::info!(
            in_flight = drained.in_flight,
            cut = drained.cut,
            "stopping: the calls in flight have answered"
        );
    };
    serve_lean(lean, read, write, drained).await
}

/// [`serve_until`], with the lean path's state given (tests read its count of
/// answers). Once `stop` resolves (the calls have been drained), rmcp's loop is
/// cancelled: it stops reading, writes what its handlers answered and closes.
pub(super) async fn serve_lean<R, W>(
    lean: Arc<Lean>,
    read: R,
    write: W,
    stop: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    tokio::pin!(stop);
    let session = Session::new(lean.served().clone());
    let transport = BeforeSession::new(LeanTransport::new(lean.clone(), read, write));
    let started = tokio::select! {
        started = session.serve(transport) => started,
        // No session yet, so no call in flight to wait for.
        () = &mut stop => return Ok(()),
    };
    let running = match started {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(ServeError(e.to_string())),
    };
    lean.engage(
        running
            .peer()
            .peer_info()
            .as_deref()
            .map(|info| &info.protocol_version),
    );
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = &mut stop => {
            cancel.cancel();
            waiting.await
        }
    };
    ended.map(drop).map_err(|e| ServeError(e.to_string()))
}

/// The rmcp handler of one session over the served registry.
#[derive(Clone, Debug)]
pub struct Session {
    served: Arc<Served>,
    /// The changes since this session started, until `initialized` hands them to
    /// the task that forwards them.
    changes: Arc<Mutex<Option<watch::Receiver<u64>>>>,
    /// Never sent: dropped with the session's last handle, which ends that task.
    alive: Arc<watch::Sender<()>>,
}

impl Session {
    /// A session's server over `served`.
    pub fn new(served: Arc<Served>) -> Self {
        let changes = served.changes();
        Self {
            served,
            changes: Arc::new(Mutex::new(Some(changes))),
            alive: Arc::new(watch::Sender::new(())),
        }
    }
}

/// Sends `notifications/tools/list_changed` to `peer` on every change, until the
/// session ends.
async fn forward_changes(
    mut changes: watch::Receiver<u64>,
    mut alive: watch::Receiver<()>,
    peer: Peer<RoleServer>,
) {
    loop {
        tokio::select! {
            // Never sent: this only returns when the session's server is dropped.
            _ = alive.changed() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                if let Err(error) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%error, "session gone: no more tools/list_changed");
                    return;
                }
            }
        }
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("piton", env!("CARGO_PKG_VERSION")))
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + Send + '_ {
        // One page holds every tool. A snapshot: a reload meanwhile does not matter.
        let registry = self.served.registry();
        async move {
            let listing = registry.list().await;
            // An upstream server that cannot be listed leaves out its tools, not the
            // others'; its error goes to the log.
            for error in &listing.errors {
                tracing::warn!(%error, "tools/list: left out an upstream server's tools");
            }
            let tools = listing.tools.iter().map(mcp_tool).collect();
            Ok(ListToolsResult::with_all_items(tools))
        }
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let changes = self
            .changes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(changes) = changes {
            tokio::spawn(forward_changes(
                changes,
                self.alive.subscribe(),
                context.peer,
            ));
        }
        std::future::ready(())
    }

    /// Protocol 2026-07-28 has no `initialized`: a client opts in to
    /// `tools/list_changed` with `subscriptions/listen` instead.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.served.changes();
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if let Err(error) = context.sink().notify_tool_list_changed().await {
                        tracing::debug!(%error, "subscription gone: no more tools/list_changed");
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The call runs on the registry of now to its end, even if a reload swaps in
        // another one meanwhile.
        let registry = self.served.registry();
        let call = answer::call_tool(
            &registry,
            self.served.calls(),
            &request.name,
            request.arguments,
        );
        // A cancelled request drops the call future, which stops the wasm instance;
        // rmcp drops whatever a cancelled request answers, so the error is not sent.
        tokio::select! {
            result = call => result.map(CallToolResponse::from),
            () = context.ct.cancelled() => {
                Err(ErrorData::internal_error("the request was cancelled", None))
            }
        }
    }
}

/// A registry tool as MCP lists it: all four hints set, so no client falls back
/// to the spec's worst-case defaults for a tool whose hints piton enforces.
fn mcp_tool(tool: &DynTool) -> WireTool {
    let spec = tool.spec();
    let hints = tool.hints();
    let schema = match &spec.input_schema {
        Value::Object(schema) => schema.clone(),
        // The registry only admits object schemas; this keeps the listing valid anyway.
        _ => serde_json::Map::from_iter([("type".to_owned(), Value::from("object"))]),
    };
    WireTool::new(spec.name.clone(), spec.description.clone(), schema).with_annotations(
        ToolAnnotations::from_raw(
            None,
            Some(hints.is_read_only()),
            Some(hints.is_destructive()),
            Some(hints.is_idempotent()),
            Some(hints.is_open_world()),
        ),
    )
}

/// Keeps a session alive through messages that arrive before it has started.
///
/// rmcp's handshake answers `ping`, `server/discover` and requests before
/// `initialize` itself, but ends the connection on any other message there (a
/// notification, a stray response). A client that probes first (the Python SDK's
/// `server/discover`, then a fallback) must still be able to initialize, so until a
/// request starts the session such messages are dropped here.
struct BeforeSession<T> {
    inner: T,
    started: bool,
}

impl<T> BeforeSession<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            started: false,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for BeforeSession<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let message = self.inner.receive().await?;
            if self.started {
                return Some(message);
            }
            match &message {
                JsonRpcMessage::Request(request) => {
                    self.started = starts_session(&request.request);
                    return Some(message);
                }
                other => tracing::debug!(?other, "dropped a message sent before initialize"),
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Whether rmcp leaves its handshake on this request: `initialize`, or a request
/// (not discover) that carries the 2026-07-28 per-request metadata.
fn starts_session(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::DiscoverRequest(_) | ClientRequest::PingRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.protocol_version().is_some()
                && meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
        }
    }
}
