//! An upstream MCP server as piton sees it (the seed's `MCP`): made from a command,
//! a URL or an in-process handler, with an optional timeout and tool list, and a
//! [`ToolGroup`] of the registry whose tools are `{server}__{tool}`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ServerHandler, ServiceExt as _};
use tokio::sync::watch;

use super::connection::{Connection, How, ServeInProcess};
use super::tool::UpstreamTool;
pub use crate::config::mcp::check_server_name;
use crate::config::mcp::{
    McpError, StdioCommand, UpstreamConfig, UpstreamConnect, UpstreamProtocol, check_http,
};
use crate::error::CallError;
use crate::group::{CheckedTool, GroupTools, ToolGroup};
use crate::source::ToolSource;

/// Why an [`UpstreamServer`] cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MCP server {name:?}: {problem}")]
pub struct UpstreamError {
    /// The name given.
    pub name: String,
    /// What is wrong and how to fix it.
    #[source]
    pub problem: McpError,
}

/// An upstream MCP server: the seed's `MCP`.
///
/// A cheap handle: clones share one connection. Nothing connects until a tool of
/// it is listed or called.
#[derive(Clone)]
pub struct UpstreamServer {
    conn: Arc<Connection>,
}

impl std::fmt::Debug for UpstreamServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamServer")
            .field("name", &self.conn.name)
            .field("how", &self.conn.how)
            .field("timeout", &self.conn.timeout)
            .field("tools", &self.conn.only)
            .finish()
    }
}

impl UpstreamServer {
    /// The server a `[mcp.NAME]` section describes, named `name`.
    pub fn from_config(name: &str, config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let server = match &config.connect {
            UpstreamConnect::Stdio(command) => Self::stdio(name, command.clone())?,
            UpstreamConnect::Http { url, headers } => Self::http(name, url, headers.clone())?,
        };
        let server = server
            .with_timeout(config.timeout)
            .with_trusted_hints(config.trust_hints)
            .with_protocol(config.protocol);
        Ok(match &config.tools {
            Some(tools) => server.with_tools(tools.iter().cloned()),
            None => server,
        })
    }

    fn new(name: &str, how: How) -> Result<Self, UpstreamError> {
        check_server_name(name).map_err(|problem| UpstreamError {
            name: name.to_owned(),
            problem,
        })?;
        Ok(Self {
            conn: Arc::new(Connection::new(name, how)),
        })
    }

    /// A server started as a child process, spoken to over its stdin and stdout.
    pub fn stdio(name: &str, command: StdioCommand) -> Result<Self, UpstreamError> {
        if command.program.trim().is_empty() {
            return Err(UpstreamError {
                name: name.to_owned(),
                problem: McpError::NoProgram,
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
        let fail = |problem| UpstreamError {
            name: name.to_owned(),
            problem,
        };
        check_http(url, &headers).map_err(fail)?;
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
        self.rebuild(|conn| conn.timeout = timeout)
    }

    /// Only these of the server's tools (by their names on the server) join the
    /// registry; one the server does not have is reported when listing.
    #[must_use]
    pub fn with_tools(self, only: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let only = only.into_iter().map(Into::into).collect();
        self.rebuild(|conn| conn.only = Some(only))
    }

    /// Takes the server's annotations at their word when deciding whether to ask
    /// the person about a call: its tools' [`HintsTrust`](crate::tool::HintsTrust)
    /// is `Trusted` rather than `Declared` (piton.toml's `trust_hints`).
    #[must_use]
    pub fn with_trusted_hints(self, trusted: bool) -> Self {
        self.rebuild(|conn| conn.trust_hints = trusted)
    }

    /// Speaks `protocol` to the server (piton.toml's `protocol`); by default
    /// 2025-11-25, in one session.
    #[must_use]
    pub fn with_protocol(self, protocol: UpstreamProtocol) -> Self {
        self.rebuild(|conn| conn.protocol = protocol)
    }

    fn rebuild(self, change: impl FnOnce(&mut Connection)) -> Self {
        let mut conn = Connection::new(&self.conn.name, self.conn.how.clone());
        conn.timeout = self.conn.timeout;
        conn.only = self.conn.only.clone();
        conn.trust_hints = self.conn.trust_hints;
        conn.protocol = self.conn.protocol;
        conn.changed = self.conn.changed.clone();
        change(&mut conn);
        Self {
            conn: Arc::new(conn),
        }
    }

    /// The name that prefixes its tools.
    pub fn name(&self) -> &str {
        &self.conn.name
    }

    /// The per-call and connect timeout.
    pub fn timeout(&self) -> Option<Duration> {
        self.conn.timeout
    }

    /// How many connections were made so far (a reconnect counts).
    pub fn connections(&self) -> u64 {
        self.conn.connections.load(Ordering::Relaxed)
    }

    /// A counter bumped each time the server says its tools changed
    /// (`notifications/tools/list_changed`); the tools are listed again on next use.
    pub fn watch_changes(&self) -> watch::Receiver<u64> {
        self.conn.changed.subscribe()
    }

    /// Closes the connection, if any; the next use connects again.
    pub async fn disconnect(&self) {
        self.conn.disconnect().await;
    }

    /// The server's tools that fit the registry; the rest are logged and left out.
    fn checked(&self, listed: Vec<rmcp::model::Tool>) -> Vec<Arc<CheckedTool>> {
        let mut entries = Vec::new();
        for remote in listed {
            if let Some(only) = &self.conn.only
                && !only.iter().any(|name| name == remote.name.as_ref())
            {
                continue;
            }
            match UpstreamTool::checked(&self.conn, &remote) {
                Ok(entry) => entries.push(Arc::new(entry)),
                Err(message) => tracing::warn!(
                    server = self.conn.name,
                    tool = %remote.name,
                    "tool left out: {message}"
                ),
            }
        }
        entries
    }

    /// Names in `tools` (see [`UpstreamServer::with_tools`]) the server does not have.
    fn missing(&self, entries: &[Arc<CheckedTool>]) -> Vec<String> {
        let Some(only) = &self.conn.only else {
            return Vec::new();
        };
        only.iter()
            .filter(|name| {
                !entries
                    .iter()
                    .any(|e| e.tool().spec().name == format!("{}__{name}", self.conn.name))
            })
            .cloned()
            .collect()
    }
}

#[async_trait::async_trait]
impl ToolGroup for UpstreamServer {
    fn name(&self) -> &str {
        &self.conn.name
    }

    fn source(&self) -> ToolSource {
        ToolSource::Mcp(self.conn.name.clone())
    }

    fn described(&self) -> String {
        let name = &self.conn.name;
        format!("MCP server `{name}` (mcp:{name}, piton.toml [mcp.{name}])")
    }

    async fn tools(&self, refresh: bool) -> Result<GroupTools, CallError> {
        self.conn
            .listed(refresh, |listed| self.checked(listed))
            .await
    }

    /// Each name in `tools` (see [`UpstreamServer::with_tools`]) the server does
    /// not have.
    fn problems(&self, tools: &[Arc<CheckedTool>]) -> Vec<CallError> {
        self.missing(tools)
            .into_iter()
            .map(|name| CallError::Connection {
                server: self.conn.name.clone(),
                message: format!(
                    "has no tool `{name}` (named in its `tools` list); it has: {}",
                    tools
                        .iter()
                        .map(|e| e.tool().spec().name.clone())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
            .collect()
    }

    fn known_names(&self) -> Vec<String> {
        self.conn.cached_names()
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.watch_changes())
    }

    async fn close(&self) {
        self.disconnect().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::GroupNameError;

    #[test]
    fn server_names() {
        for good in ["everything", "a", "my-server", "my_server", "s3"] {
            assert!(check_server_name(good).is_ok(), "{good}");
        }
        for bad in ["", "dot.name", "sp ace", "ü"] {
            let error = check_server_name(bad).expect_err(bad);
            assert!(
                matches!(error, McpError::Name(GroupNameError::Characters(_))),
                "{bad}: {error:?}"
            );
        }
        for bad in ["a__b", "a_"] {
            let error = check_server_name(bad).expect_err(bad);
            assert!(
                matches!(error, McpError::Name(GroupNameError::Underscores(_))),
                "{bad}: {error:?}"
            );
        }
        assert_eq!(
            check_server_name("a__b").expect_err("a__b").to_string(),
            "server name \"a__b\" is not allowed: no \"__\" and no trailing '_' (its tools are \
             named a__b__TOOL)"
        );
        let empty = UpstreamServer::stdio("s", StdioCommand::new(" ", Vec::<String>::new()))
            .expect_err("no program");
        assert_eq!(empty.problem, McpError::NoProgram);
        assert_eq!(
            empty.to_string(),
            "MCP server \"s\": the command is empty; give the program that starts the server"
        );
    }
}
