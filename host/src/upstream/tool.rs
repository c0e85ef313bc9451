//! A tool of an upstream MCP server (the seed's `MCPTool`): its spec and declared
//! hints as listed, and each call sent over the server's connection.

use std::sync::{Arc, Weak};

use serde_json::Value;

use super::connection::Connection;
use super::convert::hints_of;
use crate::call::CallContext;
use crate::error::CallError;
use crate::group::{CheckedTool, SpecError};
use crate::source::ToolSource;
use crate::tool::{Args, HintsTrust, Tool, ToolResult, ToolSpec};
use piton_wit::Hints;

/// A tool of an upstream MCP server: the seed's `MCPTool`.
pub struct UpstreamTool {
    server: Weak<Connection>,
    server_name: String,
    remote_name: String,
    spec: ToolSpec,
    hints: Hints,
    trusted: bool,
}

impl std::fmt::Debug for UpstreamTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamTool")
            .field("name", &self.spec.name)
            .field("hints", &self.hints)
            .finish_non_exhaustive()
    }
}

impl UpstreamTool {
    /// `remote`, a tool of the server `conn` reaches, checked for the registry
    /// (only its required properties are checked before a call: the server checks
    /// the rest itself).
    pub(super) fn checked(
        conn: &Arc<Connection>,
        remote: &rmcp::model::Tool,
    ) -> Result<CheckedTool, SpecError> {
        let name = format!("{}__{}", conn.name, remote.name);
        let input_schema = Value::Object((*remote.input_schema).clone());
        let description = remote
            .description
            .as_deref()
            .or(remote.title.as_deref())
            .unwrap_or_default();
        let tool = Self {
            server: Arc::downgrade(conn),
            server_name: conn.name.clone(),
            remote_name: remote.name.to_string(),
            spec: ToolSpec {
                name,
                description: description.to_owned(),
                input_schema,
                parallel: true,
            },
            hints: hints_of(remote.annotations.as_ref()),
            trusted: conn.trust_hints,
        };
        CheckedTool::checking_required_only(Arc::new(tool))
    }

    /// The tool's name on its server (the registry's name has the `{server}__` prefix).
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }

    /// The name of the server it belongs to.
    pub fn server_name(&self) -> &str {
        &self.server_name
    }
}

#[async_trait::async_trait]
impl Tool for UpstreamTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn hints(&self) -> Hints {
        self.hints
    }

    fn hints_trust(&self) -> HintsTrust {
        if self.trusted {
            HintsTrust::Trusted
        } else {
            HintsTrust::Declared
        }
    }

    fn source(&self) -> ToolSource {
        ToolSource::Mcp(self.server_name.clone())
    }

    async fn call(
        &self,
        ctx: &CallContext,
        args: &Args,
        _hints: Hints,
    ) -> Result<ToolResult, CallError> {
        let Some(server) = self.server.upgrade() else {
            return Err(CallError::Connection {
                server: self.server_name.clone(),
                message: "the server was removed from the registry".into(),
            });
        };
        server.call(ctx, &self.remote_name, args).await
    }
}
