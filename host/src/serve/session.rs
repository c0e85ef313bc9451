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
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, MetaObject,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use tokio::sync::watch;

use super::served::Served;
use super::{answer, ask, stateless, traced};
use crate::call::CallContext;
use crate::consent::Channel;

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
    /// Who "allow for a while" is remembered for on this session.
    scope: Arc<Scope>,
    /// How this session's person is asked: one asker for all its calls, so an
    /// upstream server's question during two of them still goes to one person.
    asker: Arc<Mutex<Option<Arc<ask::PeerAsker>>>>,
}

/// A session's name for the allowances it gets; they are forgotten when it ends.
#[derive(Debug)]
struct Scope {
    name: String,
    served: Arc<Served>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let Some(consent) = self.served.registry().consent() {
            consent.forget(&self.name);
        }
    }
}

static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Session {
    /// A session's server over `served`.
    pub fn new(served: Arc<Served>) -> Self {
        let changes = served.changes();
        let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            scope: Arc::new(Scope {
                name: format!("session-{n}"),
                served: served.clone(),
            }),
            served,
            changes: Arc::new(Mutex::new(Some(changes))),
            alive: Arc::new(watch::Sender::new(())),
            asker: Arc::default(),
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

impl Session {
    /// Who a stateless request's "allow for a while" is for: over HTTP its client
    /// (see [`ask::stateless_scope`]); on stdio, the one client of this connection.
    fn stateless_scope(&self, context: &RequestContext<RoleServer>) -> String {
        let Some(parts) = context.extensions.get::<http::request::Parts>() else {
            return self.scope.name.clone();
        };
        let client = parts.extensions.get::<super::http::per_client::Client>();
        ask::stateless_scope(
            client.map(|c| c as &dyn std::fmt::Display),
            parts
                .headers
                .get(http::header::AUTHORIZATION)
                .map(http::HeaderValue::as_bytes),
            context
                .client_info()
                .as_ref()
                .map(|info| info.name.as_str()),
        )
    }
}

impl Session {
    /// This session's asker, made again only when `answer_within` changed (a reload).
    fn asker(&self, peer: &Peer<RoleServer>, within: Duration) -> Arc<ask::PeerAsker> {
        let mut asker = self.asker.lock().unwrap_or_else(PoisonError::into_inner);
        match &*asker {
            Some(made) if made.within == within => made.clone(),
            _ => {
                let made = Arc::new(ask::PeerAsker {
                    peer: peer.clone(),
                    within,
                });
                *asker = Some(made.clone());
                made
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
        // A snapshot: a reload meanwhile does not matter.
        let registry = self.served.registry();
        async move { Ok(answer::list_tools(&registry).await) }
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
        let ctx = call_context(&request, &context);
        let elicits = ask::can_elicit(context.client_capabilities().as_ref());
        let stateless = context
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        if stateless {
            let call = stateless::Call {
                ctx,
                name: request.name.into_owned(),
                arguments: request.arguments,
                responses: request.input_responses,
                state: request.request_state,
                elicits,
            };
            let call = stateless::call_tool(&self.served, call, || self.stateless_scope(&context));
            return tokio::select! {
                result = call => result,
                () = context.ct.cancelled() => {
                    Err(ErrorData::internal_error("the request was cancelled", None))
                }
            };
        }
        // The call runs on the registry of now to its end, even if a reload swaps in
        // another one meanwhile.
        let registry = self.served.registry();
        let within = registry
            .consent()
            .map_or(ask::ANSWER_WITHIN, |c| c.answer_within());
        let asker = self.asker(&context.peer, within);
        let scope = &self.scope.name;
        // The calls a program makes (code mode) are allowed for a while in it too.
        let ctx = ctx.with_scope(scope);
        let (ctx, channel) = if elicits {
            // A session client that can be asked is asked an upstream server's own
            // questions during the call, too.
            let channel = Channel::Session {
                asker: &*asker,
                scope,
            };
            (ctx.with_asker(asker.clone()), channel)
        } else {
            (ctx, Channel::Cannot)
        };
        let call = answer::call_tool(
            &registry,
            self.served.calls(),
            ctx,
            &request.name,
            request.arguments,
            &channel,
        );
        // A cancelled request drops the call future, which stops the wasm instance;
        // rmcp drops whatever a cancelled request answers, so the error is not sent.
        tokio::select! {
            result = call => result,
            () = context.ct.cancelled() => {
                Err(ErrorData::internal_error("the request was cancelled", None))
            }
        }
    }
}

/// The context of a call, with the trace context of the request's `_meta` (in its
/// params, or as rmcp hands it to the handler) or, on Streamable HTTP, of its headers
/// (see [`traced::call_context`]).
fn call_context(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> CallContext {
    fn from_meta(meta: &MetaObject) -> Option<(&str, Option<&str>)> {
        Some((meta.get_traceparent()?, meta.get_tracestate()))
    }
    let metas = [
        request.meta.as_deref().and_then(from_meta),
        from_meta(&context.meta.0),
    ];
    let headers = context
        .extensions
        .get::<http::request::Parts>()
        .map(|parts| &parts.headers);
    traced::call_context(metas.into_iter().flatten(), headers)
}
