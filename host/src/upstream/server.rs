//! Upstream MCP servers in the registry: the seed's `MCP` and `MCPTool`.
//!
//! An [`UpstreamServer`] is started (stdio), reached (Streamable HTTP) or served in
//! process the first time one of its tools is needed, and stays connected while
//! piton runs. Its tools join the registry as `{server}__{tool}`, with the hints
//! its annotations declare (worst case for the ones left out). A lost connection
//! stops the run with [`CallError::Connection`]; the next call connects again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ServerHandler, ServiceExt as _};
use tokio::sync::watch;

use super::handler::{Upstream, http_transport, list_pages};
use super::stderr::Tail;
use super::tool::{UpstreamTool, content_of};
use crate::registry::Entry;
use crate::{Args, CallError, ToolError, ToolResult};

/// The variables a stdio server gets from piton's own environment; the rest of its
/// environment is what its configuration adds. Secrets in piton's environment do not
/// leak to servers that were not given them.
pub const SAFE_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// How long connecting and listing may take when no `timeout` is set: without a
/// limit, one wedged server would hang every listing of the registry.
const CONNECT_DEFAULT: Duration = Duration::from_secs(60);

/// A stdio server's command line.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StdioCommand {
    /// The program, found on `PATH` unless it is a path.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working folder; piton's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Variables added to [`SAFE_ENV`].
    pub env: BTreeMap<String, String>,
}

impl std::fmt::Debug for StdioCommand {
    /// The variables' names only: their values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl StdioCommand {
    /// `program` with `args`, nothing else set.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }
}

/// Serves one in-process server on the given stream halves (tests, embedding).
type ServeInProcess = Arc<dyn Fn(tokio::io::DuplexStream) -> BoxFuture<'static, ()> + Send + Sync>;

#[derive(Clone)]
enum How {
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

/// Why an [`UpstreamServer`] cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MCP server {name:?}: {message}")]
pub struct UpstreamError {
    /// The name given.
    pub name: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// An upstream MCP server: the seed's `MCP`.
///
/// A cheap handle: clones share one connection. Nothing connects until a tool of
/// it is listed or called.
#[derive(Clone)]
pub struct UpstreamServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for UpstreamServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamServer")
            .field("name", &self.inner.name)
            .field("how", &self.inner.how)
            .field("timeout", &self.inner.timeout)
            .field("tools", &self.inner.only)
            .finish()
    }
}

pub(super) struct Inner {
    name: String,
    how: How,
    timeout: Option<Duration>,
    only: Option<Vec<String>>,
    /// The live connection, if any. Held only to connect, list and look up; never
    /// across a call, so calls run concurrently.
    state: tokio::sync::Mutex<Option<Live>>,
    /// Bumped when the server says its tools changed.
    changed: Arc<watch::Sender<u64>>,
    connections: AtomicU64,
}

struct Live {
    id: u64,
    service: RunningService<RoleClient, Upstream>,
    /// `None` until listed, and again after the server says its tools changed.
    tools: Option<Arc<Vec<Arc<Entry>>>>,
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

/// Checks a server name: letters, digits, `-` and single `_`, so that the `__` in
/// `{server}__{tool}` is unambiguous.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let chars_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !chars_ok {
        return Err(format!(
            "server name {name:?} is not allowed: use letters, digits, '-' and single '_'"
        ));
    }
    if name.contains("__") || name.ends_with('_') {
        return Err(format!(
            "server name {name:?} is not allowed: no \"__\" and no trailing '_' (its tools are \
             named {name}__TOOL)"
        ));
    }
    Ok(())
}

impl UpstreamServer {
    fn new(name: &str, how: How) -> Result<Self, UpstreamError> {
        check_server_name(name).map_err(|message| UpstreamError {
            name: name.to_owned(),
            message,
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                how,
                timeout: None,
                only: None,
                state: tokio::sync::Mutex::new(None),
                changed: Arc::new(watch::channel(0).0),
                connections: AtomicU64::new(0),
            }),
        })
    }

    /// A server started as a child process, spoken to over its stdin and stdout.
    pub fn stdio(name: &str, command: StdioCommand) -> Result<Self, UpstreamError> {
        if command.program.trim().is_empty() {
            return Err(UpstreamError {
                name: name.to_owned(),
                message: "the command is empty; give the program that starts the server".into(),
            });
        }
        Self::new(name, How::Stdio(command))
    }

    /// A Streamable HTTP server at `url`, each request carrying `headers`.
    pub fn http(
        name: &str,
        url: &str,
        headers: BTreeMap<String, String>,
    ) -> Result<Self, UpstreamError> {
        let fail = |message: String| UpstreamError {
            name: name.to_owned(),
            message,
        };
        let parsed = reqwest::Url::parse(url).map_err(|e| {
            fail(format!(
                "url {url:?} is not a URL ({e}); use http://HOST:PORT/mcp"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(fail(format!(
                "url {url:?} must start with http:// or https://"
            )));
        }
        for (key, value) in &headers {
            // The MCP transport sets these itself; rmcp refuses them at every connect.
            if [
                "accept",
                "mcp-session-id",
                "mcp-protocol-version",
                "last-event-id",
            ]
            .iter()
            .any(|reserved| key.eq_ignore_ascii_case(reserved))
            {
                return Err(fail(format!(
                    "header {key} is set by the MCP transport itself; remove it from `headers`"
                )));
            }
            if !piton_wit::is_header_name(key) {
                return Err(fail(format!(
                    "header name {key:?} is not a valid HTTP header name"
                )));
            }
            if !piton_wit::is_header_value(value) {
                return Err(fail(format!(
                    "the value of header {key} is not a valid HTTP header value"
                )));
            }
        }
        Self::new(
            name,
            How::Http {
                url: url.to_owned(),
                headers,
            },
        )
    }

    /// A server in this process: `make` gives a fresh handler for each connection.
    /// Meant for tests and for embedding a Rust MCP server.
    pub fn in_process<S, F>(name: &str, make: F) -> Result<Self, UpstreamError>
    where
        S: ServerHandler,
        F: Fn() -> S + Send + Sync + 'static,
    {
        let serve: ServeInProcess = Arc::new(move |stream| {
            let handler = make();
            Box::pin(async move {
                let (read, write) = tokio::io::split(stream);
                if let Ok(running) = handler
                    .serve(AsyncRwTransport::new_server(read, write))
                    .await
                {
                    let _ended = running.waiting().await;
                }
            })
        });
        Self::new(name, How::InProcess(serve))
    }

    /// Waits at most `timeout` to connect, to list the tools and for each call.
    /// `None` (the default, as the seed's) waits for calls without a limit, and at
    /// most 60 s to connect and list, so that one wedged server cannot hang every
    /// listing of the registry.
    #[must_use]
    pub fn with_timeout(self, timeout: Option<Duration>) -> Self {
        self.rebuild(|inner| inner.timeout = timeout)
    }

    /// Only these of the server's tools (by their names on the server) join the
    /// registry; one the server does not have is reported when listing.
    #[must_use]
    pub fn with_tools(self, only: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let only = only.into_iter().map(Into::into).collect();
        self.rebuild(|inner| inner.only = Some(only))
    }

    fn rebuild(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner {
            name: self.inner.name.clone(),
            how: self.inner.how.clone(),
            timeout: self.inner.timeout,
            only: self.inner.only.clone(),
            state: tokio::sync::Mutex::new(None),
            changed: self.inner.changed.clone(),
            connections: AtomicU64::new(0),
        };
        change(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// A handle that does not keep the server alive (its tools hold one, so that the
    /// server's cached tools do not keep their own server).
    pub(super) fn downgrade(&self) -> Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    /// The server behind `weak`, if it is still there.
    pub(super) fn upgrade(weak: &Weak<Inner>) -> Option<Self> {
        weak.upgrade().map(|inner| Self { inner })
    }

    /// The name that prefixes its tools.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The per-call and connect timeout.
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.timeout
    }

    /// How many connections were made so far (a reconnect counts).
    pub fn connections(&self) -> u64 {
        self.inner.connections.load(Ordering::Relaxed)
    }

    /// A counter bumped each time the server says its tools changed
    /// (`notifications/tools/list_changed`); the tools are listed again on next use.
    pub fn watch_changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Closes the connection, if any; the next use connects again.
    pub async fn disconnect(&self) {
        let live = self.inner.state.lock().await.take();
        if let Some(live) = live {
            let _ended = live.service.cancel().await;
        }
    }

    fn connection_error(&self, message: impl Into<String>) -> CallError {
        CallError::Connection {
            server: self.inner.name.clone(),
            message: message.into(),
        }
    }

    async fn within<T>(
        &self,
        what: &str,
        work: impl Future<Output = Result<T, CallError>>,
    ) -> Result<T, CallError> {
        let limit = self.inner.timeout.unwrap_or(CONNECT_DEFAULT);
        tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(self.connection_error(format!(
                "no answer to {what} within {limit:?}; raise `timeout` or check the server"
            )))
        })
    }

    /// The server's tools as registry entries, connecting first if needed. With
    /// `reconnect`, a connection found closed is made again (listing); without, the
    /// tools of a closed connection are still found, so that calling one reports the
    /// lost connection.
    pub(crate) async fn entries(&self, reconnect: bool) -> Result<Arc<Vec<Arc<Entry>>>, CallError> {
        let mut state = self.inner.state.lock().await;
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
        let tools = Arc::new(self.entries_of(listed));
        live.tools = Some(tools.clone());
        Ok(tools)
    }

    /// The server's tools that fit the registry; the rest are logged and left out.
    fn entries_of(&self, listed: Vec<rmcp::model::Tool>) -> Vec<Arc<Entry>> {
        let mut entries = Vec::new();
        for remote in listed {
            if let Some(only) = &self.inner.only
                && !only.iter().any(|name| name == remote.name.as_ref())
            {
                continue;
            }
            match UpstreamTool::entry(self, &remote) {
                Ok(entry) => entries.push(Arc::new(entry)),
                Err(message) => tracing::warn!(
                    server = self.inner.name,
                    tool = %remote.name,
                    "tool left out: {message}"
                ),
            }
        }
        entries
    }

    /// Names in `tools` (see [`UpstreamServer::with_tools`]) the server does not have.
    pub(crate) fn missing(&self, entries: &[Arc<Entry>]) -> Vec<String> {
        let Some(only) = &self.inner.only else {
            return Vec::new();
        };
        only.iter()
            .filter(|name| {
                !entries
                    .iter()
                    .any(|e| e.tool.spec().name == format!("{}__{name}", self.inner.name))
            })
            .cloned()
            .collect()
    }

    /// The cached tool names, without connecting.
    pub(crate) fn cached_names(&self) -> Vec<String> {
        self.inner
            .state
            .try_lock()
            .ok()
            .and_then(|state| state.as_ref().and_then(|live| live.tools.clone()))
            .map(|tools| tools.iter().map(|e| e.tool.spec().name.clone()).collect())
            .unwrap_or_default()
    }

    async fn connect(&self) -> Result<Live, CallError> {
        let id = self.inner.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let stale = Arc::new(AtomicBool::new(false));
        let handler = Upstream {
            server: self.inner.name.clone(),
            stale: stale.clone(),
            changed: self.inner.changed.clone(),
        };
        let failed = |e: &dyn std::fmt::Display, stderr: Option<&Arc<Tail>>| {
            self.connection_error(format!("could not connect: {e}{}", stderr_tail(stderr)))
        };
        let (service, stderr) = match &self.inner.how {
            How::Stdio(command) => {
                let (process, stderr) = self.spawn(command)?;
                let service = match handler.serve(process).await {
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
                    .serve(transport)
                    .await
                    .map_err(|e| failed(&e, None))?;
                (service, None)
            }
            How::InProcess(serve) => {
                let (ours, theirs) = tokio::io::duplex(1 << 20);
                tokio::spawn(serve(theirs));
                let (read, write) = tokio::io::split(ours);
                let service = handler
                    .serve(AsyncRwTransport::new_client(read, write))
                    .await
                    .map_err(|e| failed(&e, None))?;
                (service, None)
            }
        };
        tracing::info!(server = self.inner.name, connection = id, "connected");
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
        let tail = stderr.map(|stderr| Tail::follow(stderr, self.inner.name.clone(), secrets));
        Ok((process, tail))
    }

    /// Calls `remote` (its name on the server). A connection found closed, or lost
    /// during the call, is a [`CallError::Connection`] and is dropped, so the next
    /// call connects again.
    pub(super) async fn call(&self, remote: &str, args: &Args) -> Result<ToolResult, CallError> {
        let (peer, id) = {
            let mut state = self.inner.state.lock().await;
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
        let params = CallToolRequestParams::new(remote.to_owned()).with_arguments(args.clone());
        let answer = match self.inner.timeout {
            None => Ok(peer.call_tool(params).await),
            Some(limit) => tokio::time::timeout(limit, peer.call_tool(params)).await,
        };
        match answer {
            Ok(Ok(result)) => Ok(content_of(result)),
            Ok(Err(ServiceError::McpError(error))) => {
                let message = error.message.to_string();
                if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    Ok(Err(ToolError::Input(message)))
                } else {
                    Ok(Err(ToolError::Failed(message)))
                }
            }
            Ok(Err(error @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
                let mut state = self.inner.state.lock().await;
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
            Ok(Err(other)) => Ok(Err(ToolError::Failed(format!(
                "MCP server `{}` failed the call: {other}",
                self.inner.name
            )))),
            Err(_elapsed) => Ok(Err(ToolError::Failed(format!(
                "MCP server `{}` did not answer within {:?}",
                self.inner.name,
                self.inner.timeout.unwrap_or_default()
            )))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names() {
        for good in ["everything", "a", "my-server", "my_server", "s3"] {
            assert!(check_server_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a__b", "a_", "dot.name", "sp ace", "ü"] {
            assert!(check_server_name(bad).is_err(), "{bad}");
        }
    }
}
