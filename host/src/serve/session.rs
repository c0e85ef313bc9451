//! The MCP server: the served registry over one connection (stdio for `piton serve`,
//! or one Streamable HTTP session).
//!
//! tools/list carries every tool's spec and all four hints; tools/call goes through
//! [`Registry::call_with`](crate::registry::Registry::call_with): error results become
//! `isError`, traps JSON-RPC errors (answer.rs). A call's trace context is the
//! `traceparent` and `tracestate` of its `params._meta`, else (Streamable HTTP) of
//! its request's headers. When the tool set changes ([`Served`]), an initialized
//! session gets `notifications/tools/list_changed`.
//!
//! It does not know its transport: stdio/ runs it over a byte stream, http/ over
//! Streamable HTTP.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, MetaObject,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool as WireTool,
    ToolAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio::sync::watch;

use super::answer;
use super::served::Served;
use crate::call::{CallContext, TraceParent};
use crate::tool::DynTool;

/// Why serving ended with a failure (a clean end of input is `Ok`).
#[derive(Debug, thiserror::Error)]
#[error("MCP session failed: {0}")]
pub struct ServeError(pub(crate) String);

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
        let ctx = call_context(&request, &context);
        let call = answer::call_tool(
            &registry,
            self.served.calls(),
            ctx,
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

/// The context of a call: the first valid `traceparent` (with its `tracestate`) of
/// the request's `_meta` (in its params, or as rmcp hands it to the handler) and, on
/// Streamable HTTP, of its headers. `_meta` wins: it is the client's, the headers may
/// be a proxy's. None valid: the call starts a trace of its own.
fn call_context(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> CallContext {
    let from_meta = |meta: &MetaObject| {
        meta.get_traceparent()
            .map(|parent| (parent.to_owned(), meta.get_tracestate().map(str::to_owned)))
    };
    let from_headers = || {
        let headers = &context.extensions.get::<http::request::Parts>()?.headers;
        let mut parents = headers.get_all("traceparent").iter();
        // Two traceparent fields are no valid one.
        let parent = parents.next()?.to_str().ok()?;
        if parents.next().is_some() {
            return None;
        }
        // tracestate fields are one list, in order.
        let states: Vec<&str> = headers
            .get_all("tracestate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let state = (!states.is_empty()).then(|| states.join(","));
        Some((parent.to_owned(), state))
    };
    let found = [
        request.meta.as_deref().and_then(from_meta),
        from_meta(&context.meta.0),
    ]
    .into_iter()
    .flatten()
    .chain(std::iter::once_with(from_headers).flatten())
    .find(|(parent, _)| TraceParent::parse(parent).is_some());
    match found {
        Some((parent, state)) => CallContext::new().traced(Some(&parent), state.as_deref()),
        None => CallContext::new(),
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
