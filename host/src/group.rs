//! What the registry holds: tools checked once when they join ([`CheckedTool`]), and
//! groups of tools that join under one name space and are listed lazily
//! ([`ToolGroup`], which the upstream MCP side implements). The registry knows tools
//! and groups, never where a group's tools come from.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;

use crate::error::CallError;
use crate::limits::Limits;
use crate::schema::{InputSchema, SchemaError};
use crate::source::ToolSource;
use crate::tool::{
    DynTool, SpecSizeError, ToolError, ToolNameError, ToolSpec, check_spec_size, check_tool_name,
};

/// Why a tool cannot join a registry: its spec breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// Its name is not a tool name.
    #[error(transparent)]
    Name(#[from] ToolNameError),
    /// Its description or input schema is too long.
    #[error(transparent)]
    Size(#[from] SpecSizeError),
    /// Its input schema is not one a tool can have.
    #[error("tool `{tool}`: {error}")]
    Schema {
        /// The tool's name.
        tool: String,
        /// What is wrong with the schema.
        #[source]
        error: SchemaError,
    },
}

/// A tool that passed the registry's checks, with its input schema compiled once.
pub struct CheckedTool {
    tool: DynTool,
    schema: Arc<InputSchema>,
}

impl std::fmt::Debug for CheckedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedTool")
            .field("name", &self.tool.spec().name)
            .finish_non_exhaustive()
    }
}

/// Which part of the input schema the registry checks before a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SchemaCheck {
    Whole,
    RequiredOnly,
}

impl CheckedTool {
    /// Checks `tool` for a registry: its name matches `[A-Za-z0-9_-]{1,64}`, its
    /// description and input schema fit [`check_spec_size`], and its input schema is
    /// an object schema (every call is checked against all of it). The error says
    /// what is wrong.
    pub fn new(tool: DynTool) -> Result<Self, SpecError> {
        Self::check(tool, SchemaCheck::Whole)
    }

    /// [`CheckedTool::new`] for a tool that checks its own arguments (an MCP server
    /// does): a call is checked only for the input schema's required properties, as
    /// the server's schema may use what this host's validator does not know.
    pub fn checking_required_only(tool: DynTool) -> Result<Self, SpecError> {
        Self::check(tool, SchemaCheck::RequiredOnly)
    }

    fn check(tool: DynTool, check: SchemaCheck) -> Result<Self, SpecError> {
        let schema = checked_spec(tool.spec(), check)?;
        Ok(Self {
            tool,
            schema: Arc::new(schema),
        })
    }

    /// Checks `spec` as [`CheckedTool::new`] checks a tool's (`piton check` uses it).
    pub(crate) fn check_spec(spec: &ToolSpec) -> Result<(), SpecError> {
        checked_spec(spec, SchemaCheck::Whole).map(drop)
    }

    /// The tool.
    pub fn tool(&self) -> &DynTool {
        &self.tool
    }

    /// Checks one call's arguments against the input schema, giving them back, or
    /// the input error the model gets (`Ok(Err)`); `Err` is a fault of the host.
    ///
    /// A check that may take more than microseconds (a costly schema, large
    /// arguments) runs on a blocking thread under the tool's deadline, so that the
    /// async threads (other calls, `/healthz`, signals) never wait on it. Past the
    /// deadline it is an input error: the tool never ran, and smaller arguments may
    /// pass. The thread then runs on to the end of the check, which the schema's
    /// load-time bound limits.
    pub(crate) async fn check_args(
        &self,
        args: Value,
    ) -> Result<Result<Value, ToolError>, CallError> {
        let name = &self.tool.spec().name;
        if self.schema.is_quick(&args) {
            return Ok(self.schema.check(&args).map(|()| args));
        }
        let deadline = self
            .tool
            .deadline()
            .unwrap_or_else(|| Limits::default().timeout);
        tracing::debug!(tool = name, "checking the arguments on a blocking thread");
        let schema = self.schema.clone();
        let check = tokio::task::spawn_blocking(move || {
            let checked = schema.check(&args);
            (args, checked)
        });
        match tokio::time::timeout(deadline, check).await {
            Ok(Ok((args, checked))) => Ok(checked.map(|()| args)),
            Ok(Err(join)) => Err(CallError::Host {
                tool: name.clone(),
                message: format!("checking its arguments failed: {join}"),
            }),
            Err(_elapsed) => Ok(Err(ToolError::Input(format!(
                "checking the arguments against the input schema took longer than the \
                 tool's deadline of {deadline:?}; send smaller arguments"
            )))),
        }
    }
}

/// `spec`'s name and sizes checked, and its input schema compiled.
fn checked_spec(spec: &ToolSpec, check: SchemaCheck) -> Result<InputSchema, SpecError> {
    check_tool_name(&spec.name)?;
    check_spec_size(&spec.description, spec.input_schema.to_string().len())?;
    match check {
        SchemaCheck::Whole => InputSchema::new(&spec.input_schema),
        SchemaCheck::RequiredOnly => InputSchema::required_only(&spec.input_schema),
    }
    .map_err(|error| SpecError::Schema {
        tool: spec.name.clone(),
        error,
    })
}

/// The tools of a group, as listed.
pub type GroupTools = Arc<Vec<Arc<CheckedTool>>>;

/// Tools that join a registry together under the name space `{name}__`, and are
/// known only once listed (which may connect somewhere): an upstream MCP server.
///
/// Every `{name}__*` tool name is the group's, whether or not it lists it now: its
/// tools may change at any time.
#[async_trait::async_trait]
pub trait ToolGroup: Send + Sync {
    /// The name that prefixes its tools.
    fn name(&self) -> &str;

    /// Where its tools come from, for errors.
    fn source(&self) -> ToolSource;

    /// How errors name the group, such as ``MCP server `x` (mcp:x, piton.toml [mcp.x])``.
    fn described(&self) -> String {
        format!("tool group `{}` ({})", self.name(), self.source())
    }

    /// Its tools, each named `{name}__{tool}`, listing them first if needed. With
    /// `refresh`, a connection found closed is made again (a listing); without, the
    /// tools of a closed connection are still given, so that calling one reports the
    /// loss.
    async fn tools(&self, refresh: bool) -> Result<GroupTools, CallError>;

    /// Problems with a listing that do not keep its tools out, such as a tool the
    /// configuration names and the group does not have.
    fn problems(&self, _tools: &[Arc<CheckedTool>]) -> Vec<CallError> {
        Vec::new()
    }

    /// The names of its tools known without listing (none before the first one).
    fn known_names(&self) -> Vec<String>;

    /// A counter bumped whenever its tools change; `None` when they never do.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// Closes whatever it holds open (connections, child processes); the next use
    /// opens them again.
    async fn close(&self) {}
}

/// A shared tool group.
pub type DynGroup = Arc<dyn ToolGroup>;

/// A group name that would make the `__` in `{group}__{tool}` ambiguous: what was
/// given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupNameError {
    /// Empty, or a character other than a letter, digit, `-` or `_`.
    #[error("name {0:?} is not allowed: use letters, digits, '-' and single '_'")]
    Characters(String),
    /// `__` in it, or `_` at its end.
    #[error(
        "name {0:?} is not allowed: no \"__\" and no trailing '_' (its tools are named \
         {0}__TOOL)"
    )]
    Underscores(String),
}

/// Checks a group's name: letters, digits, `-` and single `_`, so that the `__` in
/// `{group}__{tool}` is unambiguous.
pub fn check_group_name(name: &str) -> Result<(), GroupNameError> {
    let chars_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !chars_ok {
        return Err(GroupNameError::Characters(name.to_owned()));
    }
    if name.contains("__") || name.ends_with('_') {
        return Err(GroupNameError::Underscores(name.to_owned()));
    }
    Ok(())
}
