//! One upstream server's connection: how it is reached (a child process over
//! stdio, Streamable HTTP, or in process), connecting on first use and again after a
//! loss, its cached tools/list, and each call with its timeout. The server handle
//! (server.rs) and its tools (tool.rs) share one [`Connection`].

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, InputRequiredResult, ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, Peer, PeerRequestOptions, RoleClient,
    RunningService, ServiceError,
};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::sync::watch;

use super::convert::content_of;
use super::handler::{Upstream, http_transport, list_pages};
use super::relay::{Relay, Sent};
use super::rounds::{self, MAX_ROUNDS};
use super::stderr::Tail;
use crate::call::CallContext;
use crate::config::mcp::{StdioCommand, UpstreamProtocol};
use crate::error::CallError;
use crate::group::{CheckedTool, GroupTools};
use crate::tool::{Args, ToolError, ToolResult};

/// The variables a stdio server gets from piton's own environment; the rest of its
/// environment is what its configuration adds. Secrets in piton's environment do not
/// leak to servers that were not given them.
pub const SAFE_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// How long connecting and listing may take when no `timeout` is set: without a
/// limit, one wedged server would hang every listing of the registry.
const CONNECT_DEFAULT: Duration = Duration::from_secs(60);

/// Serves one in-process server on the given stream halves (tests, embedding).
pub(super) type ServeInProcess =
    Arc<dyn Fn(tokio::io::DuplexStream) -> BoxFuture<'static, ()> + Send + Sync>;

#[derive(Clone)]
pub(super) enum How {
    Stdio(StdioCommand),
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    InProcess(ServeInProcess),
}

impl std::fmt::Debug for How {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio(command) => write!(f, "stdio {:?} {:?}", command.program, command.args),
            // Header values may be secrets: only their names are shown.
            Self::Http { url, headers } => {
                write!(
                    f,
                    "http {url} with headers {:?}",
                    headers.keys().collect::<Vec<_>>()
                )
            }
            Self::InProcess(_) => f.write_str("in-process"),
        }
    }
}

/// One upstream server's connection: how it is reached, the live connection if
/// any, its cached tools, and the calls made over it. An [`UpstreamServer`](super::server::UpstreamServer)
/// and each of its tools share it.
pub(super) struct Connection {
    pub(super) name: String,
    pub(super) how: How,
    pub(super) timeout: Option<Duration>,
    pub(super) only: Option<Vec<String>>,
    /// Whether its annotations are taken at their word (`trust_hints`).
    pub(super) trust_hints: bool,
    /// The revision spoken to it, and so how it asks its questions.
    pub(super) protocol: UpstreamProtocol,
    /// The live connection, if any. Held only to connect, list and look up; never
    /// across a call, so calls run concurrently.
    state: tokio::sync::Mutex<Option<Live>>,
    /// Bumped when the server says its tools changed.
    pub(super) changed: Arc<watch::Sender<u64>>,
    pub(super) connections: AtomicU64,
    /// Its calls in flight, where the server's questions go.
    relay: Arc<Relay>,
}

struct Live {
    id: u64,
    service: RunningService<RoleClient, Upstream>,
    /// `None` until listed, and again after the server says its tools changed.
    tools: Option<GroupTools>,
    stale: Arc<AtomicBool>,
    stderr: Option<Arc<Tail>>,
}

impl Live {
    fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    fn stderr_tail(&self) -> String {
        stderr_tail(self.stderr.as_ref())
    }
}

fn stderr_tail(stderr: Option<&Arc<Tail>>) -> String {
    stderr.map(|tail| tail.quote()).unwrap_or_default()
}

impl Connection {
    /// A connection to `name`, reached as `how`; nothing connects yet.
    pub(super) fn new(name: &str, how: How) -> Self {
        Self {
            name: name.to_owned(),
            how,
            timeout: None,
            only: None,
            trust_hints: false,
            protocol: UpstreamProtocol::default(),
            state: tokio::sync::Mutex::new(None),
            changed: Arc::new(watch::channel(0).0),
            connections: AtomicU64::new(0),
            relay: Arc::default(),
        }
    }

    /// Closes the connection, if any; the next use connects again.
    pub(super) async fn disconnect(&self) {
        let live = self.state.lock().await.take();
        if let Some(live) = live {
            let _ended = live.service.cancel().await;
        }
    }

    fn connection_error(&self, message: impl Into<String>) -> CallError {
        CallError::Connection {
            server: self.name.clone(),
            message: message.into(),
        }
    }

    pub(super) async fn within<T>(
        &self,
        what: &str,
        work: impl Future<Output = Result<T, CallError>>,
    ) -> Result<T, CallError> {
        let limit = self.timeout.unwrap_or(CONNECT_DEFAULT);
        tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(self.connection_error(format!(
                "no answer to {what} within {limit:?}; raise `timeout` or check the server"
            )))
        })
    }

    /// The server's tools, connecting and listing first if needed; `make` turns a
    /// listing into the tools kept until the server says they changed. With
    /// `reconnect`, a connection found closed is made again (listing); without, the
    /// tools of a closed connection are still found, so that calling one reports the
    /// lost connection.
    pub(super) async fn listed(
        &self,
        reconnect: bool,
        make: impl FnOnce(Vec<rmcp::model::Tool>) -> Vec<Arc<CheckedTool>>,
    ) -> Result<GroupTools, CallError> {
        let mut state = self.state.lock().await;
        if reconnect && state.as_ref().is_some_and(Live::is_closed) {
            *state = None;
        }
        if state.is_none() {
            let live = self.within("connecting", self.connect()).await?;
            *state = Some(live);
        }
        let Some(live) = state.as_mut() else {
            return Err(self.connection_error("not connected"));
        };
        if live.stale.swap(false, Ordering::AcqRel) {
            live.tools = None;
        }
        if let Some(tools) = &live.tools {
            return Ok(tools.clone());
        }
        let listed = self
            .within("tools/list", async {
                list_pages(live.service.peer()).await.map_err(|e| {
                    self.connection_error(format!("tools/list failed: {e}{}", live.stderr_tail()))
                })
            })
            .await;
        let listed = match listed {
            Ok(listed) => listed,
            Err(error) => {
                // A dead connection is dropped so the next use connects again.
                if live.is_closed() {
                    *state = None;
                }
                return Err(error);
            }
        };
        let tools = Arc::new(make(listed));
        live.tools = Some(tools.clone());
        Ok(tools)
    }

    /// The cached tool names, without connecting.
    pub(super) fn cached_names(&self) -> Vec<String> {
        self.state
            .try_lock()
            .ok()
            .and_then(|state| state.as_ref().and_then(|live| live.tools.clone()))
            .map(|tools| tools.iter().map(|e| e.tool().spec().name.clone()).collect())
            .unwrap_or_default()
    }

    async fn connect(&self) -> Result<Live, CallError> {
        let id = self.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let stale = Arc::new(AtomicBool::new(false));
        let handler = Upstream {
            server: self.name.clone(),
            stale: stale.clone(),
            changed: self.changed.clone(),
            relay: self.relay.clone(),
        };
        let lifecycle = match self.protocol {
            UpstreamProtocol::Session => ClientLifecycleMode::Initialize,
            // No fallback: a server named as speaking 2026-07-28 that does not is a
            // configuration to fix, said when connecting.
            UpstreamProtocol::Stateless => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        };
        let failed = |e: &dyn std::fmt::Display, stderr: Option<&Arc<Tail>>| {
            self.connection_error(format!("could not connect: {e}{}", stderr_tail(stderr)))
        };
        let (service, stderr) = match &self.how {
            How::Stdio(command) => {
                let (process, stderr) = self.spawn(command)?;
                let service = match handler.serve_with_lifecycle(process, lifecycle).await {
                    Ok(service) => service,
                    Err(e) => {
                        if let Some(tail) = &stderr {
                            tail.settle().await;
                        }
                        return Err(failed(&e, stderr.as_ref()));
                    }
                };
                (service, stderr)
            }
            How::Http { url, headers } => {
                let transport = http_transport(url, headers).map_err(|e| failed(&e, None))?;
                let service = handler
                    .serve_with_lifecycle(transport, lifecycle)
                    .await
                    .map_err(|e| failed(&e, None))?;
                (service, None)
            }
            How::InProcess(serve) => {
                let (ours, theirs) = tokio::io::duplex(1 << 20);
                tokio::spawn(serve(theirs));
                let (read, write) = tokio::io::split(ours);
                let service = handler
                    .serve_with_lifecycle(AsyncRwTransport::new_client(read, write), lifecycle)
                    .await
                    .map_err(|e| failed(&e, None))?;
                (service, None)
            }
        };
        tracing::info!(server = self.name, connection = id, "connected");
        Ok(Live {
            id,
            service,
            tools: None,
            stale,
            stderr,
        })
    }

    /// Starts a stdio server in its own process group (so its children end with it),
    /// with the safe environment plus its own, its stderr kept for messages.
    #[allow(clippy::type_complexity)]
    fn spawn(
        &self,
        command: &StdioCommand,
    ) -> Result<(TokioChildProcess, Option<Arc<Tail>>), CallError> {
        let mut cmd = tokio::process::Command::new(&command.program);
        cmd.args(&command.args).env_clear();
        for name in SAFE_ENV {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.envs(&command.env);
        if let Some(cwd) = &command.cwd {
            cmd.current_dir(cwd);
        }
        let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
        wrapped
            .wrap(process_wrap::tokio::ProcessGroup::leader())
            .wrap(process_wrap::tokio::KillOnDrop);
        let (process, stderr) = TokioChildProcess::builder(wrapped)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                let hint = if e.kind() == std::io::ErrorKind::NotFound {
                    "; install it or fix `command` (PATH is piton's own)"
                } else {
                    ""
                };
                self.connection_error(format!("cannot start {:?}: {e}{hint}", command.program))
            })?;
        // Values given to the server in `env` (tokens, keys) are masked before a line
        // is logged or quoted in an error an MCP client may see.
        // Every value, however short: a 3-byte PIN is still a secret (a value like
        // "0" makes the log noisier, never leakier).
        let secrets = command.env.values().cloned().collect();
        let tail = stderr.map(|stderr| Tail::follow(stderr, self.name.clone(), secrets));
        Ok((process, tail))
    }

    /// Calls `remote` (its name on the server). A connection found closed, or lost
    /// during the call, is a [`CallError::Connection`] and is dropped, so the next
    /// call connects again.
    /// The server's questions during the call go to the person `ctx` can ask, if any
    /// (relay.rs).
    pub(super) async fn call(
        &self,
        ctx: &CallContext,
        remote: &str,
        args: &Args,
    ) -> Result<ToolResult, CallError> {
        let (peer, id) = {
            let mut state = self.state.lock().await;
            if state.is_none() {
                let live = self.within("connecting", self.connect()).await?;
                *state = Some(live);
            }
            match state.as_ref() {
                Some(live) if !live.is_closed() => (live.service.peer().clone(), live.id),
                Some(live) => {
                    let message = format!(
                        "the connection was lost{}; the next call connects again",
                        live.stderr_tail()
                    );
                    *state = None;
                    return Err(self.connection_error(message));
                }
                None => return Err(self.connection_error("not connected")),
            }
        };
        let mut params = CallToolRequestParams::new(remote.to_owned()).with_arguments(args.clone());
        let mut entered = self.relay.enter(ctx.asker().cloned(), ctx.notes().clone());
        let sent = entered.sent();
        let asking = async {
            for _ in 0..=MAX_ROUNDS {
                let reply = {
                    let call = call_tool(&peer, params.clone(), &sent);
                    tokio::pin!(call);
                    loop {
                        tokio::select! {
                            reply = &mut call => break reply?,
                            Some(ask) = entered.asks.recv() => tokio::select! {
                                () = entered.answer(ask) => {}
                                reply = &mut call => break reply?,
                            },
                        }
                    }
                };
                let asked = match reply {
                    Reply::Done(result) => return Ok(result),
                    Reply::Asks(asked) => asked,
                };
                let retry = rounds::retry(&mut entered, &self.name, asked)
                    .await
                    .map_err(Stop::Refused)?;
                params.input_responses = retry.responses;
                params.request_state = retry.state;
            }
            Err(Stop::Refused(format!(
                "answered input_required more than {MAX_ROUNDS} times"
            )))
        };
        let answer = match self.timeout {
            None => Ok(asking.await),
            Some(limit) => tokio::time::timeout(limit, asking).await,
        };
        match answer {
            Ok(Ok(result)) => Ok(content_of(result)),
            Ok(Err(Stop::Refused(why))) => Ok(Err(ToolError::Failed(format!(
                "MCP server `{}` {why}",
                self.name
            )))),
            Ok(Err(Stop::Service(ServiceError::McpError(error)))) => {
                let message = error.message.to_string();
                if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    Ok(Err(ToolError::Input(message)))
                } else {
                    Ok(Err(ToolError::Failed(message)))
                }
            }
            Ok(Err(Stop::Service(
                error @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)),
            ))) => {
                let mut state = self.state.lock().await;
                if let Some(tail) = state.as_ref().and_then(|live| live.stderr.as_ref()) {
                    tail.settle().await;
                }
                let tail = state.as_ref().map(Live::stderr_tail).unwrap_or_default();
                if state.as_ref().is_some_and(|live| live.id == id) {
                    *state = None;
                }
                Err(self.connection_error(format!(
                    "the connection was lost during the call ({error}){tail}; the next call connects again"
                )))
            }
            Ok(Err(Stop::Service(other))) => Ok(Err(ToolError::Failed(format!(
                "MCP server `{}` failed the call: {other}",
                self.name
            )))),
            Err(_elapsed) => Ok(Err(ToolError::Failed(format!(
                "MCP server `{}` did not answer within {:?}",
                self.name,
                self.timeout.unwrap_or_default()
            )))),
        }
    }
}

/// Why a call ended without the server's result.
enum Stop {
    Service(ServiceError),
    /// The server asked for what piton does not give, or asked for ever.
    Refused(String),
}

impl From<ServiceError> for Stop {
    fn from(error: ServiceError) -> Self {
        Self::Service(error)
    }
}

/// One round's answer to `tools/call`.
enum Reply {
    Done(CallToolResult),
    /// A 2026-07-28 server's questions, to answer in the next round (rounds.rs).
    Asks(InputRequiredResult),
}

/// Sends `params` as a `tools/call` over `peer`, notes its request id in `sent` (so
/// that the server's questions on its response stream find the call), and gives
/// the reply. Dropped before the answer, it tells the server the request was
/// cancelled.
async fn call_tool(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    sent: &Sent,
) -> Result<Reply, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    sent.sent(handle.id.clone());
    let mut abandoned = Abandoned(Some((peer.clone(), handle.id.clone())));
    let answer = handle.await_response().await;
    abandoned.0 = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(Reply::Done(result)),
        ServerResult::InputRequiredResult(asked) => Ok(Reply::Asks(asked)),
        // A result with no content at all.
        ServerResult::EmptyResult(_) => Ok(Reply::Done(CallToolResult::success(Vec::new()))),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A request whose answer is no longer awaited: the server is told, so that it
/// stops working on it (as rmcp's own `call_tool` does).
struct Abandoned(Option<(Peer<RoleClient>, RequestId)>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let cancelled = CancelledNotificationParam::new(
                    Some(id),
                    Some("request abandoned by the caller".to_owned()),
                );
                let _gone = peer.notify_cancelled(cancelled).await;
            });
        }
    }
}
