//! The tool model: what every tool in a [`Registry`](crate::registry::Registry) is and returns.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::call::CallContext;
use crate::error::CallError;
use crate::grants::Capabilities;
use crate::limits::{Limits, OnTrap};
use crate::source::ToolSource;
use piton_wit::Hints;

/// The arguments of one call: a JSON object.
pub type Args = Map<String, Value>;

/// What a call gives the model: content, or an error result it can handle.
///
/// A failure that should stop the run (a trap, a lost connection) is a
/// [`CallError`] instead.
pub type ToolResult = Result<Vec<Content>, ToolError>;

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The name the model calls, `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// What the model reads about the tool.
    pub description: String,
    /// The JSON Schema of the arguments: an object schema.
    pub input_schema: Value,
    /// False: in a batch the tool runs alone, after the other calls.
    pub parallel: bool,
}

/// One block of a tool's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Text, given to the model as is.
    Text {
        /// The text.
        text: String,
    },
    /// A JSON document.
    Json {
        /// The document.
        json: Value,
    },
    /// An image.
    Image {
        /// Its media type, such as `image/png`.
        mime_type: String,
        /// The encoded bytes.
        #[serde(skip)]
        data: Vec<u8>,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text the model gets for this block: text as is, JSON as compact text,
    /// an image as a short placeholder.
    pub fn to_model_text(&self) -> String {
        match self {
            Self::Text { text } => text.clone(),
            Self::Json { json } => json.to_string(),
            Self::Image { mime_type, data } => format!("[image {mime_type}, {} bytes]", data.len()),
        }
    }

    /// The bytes this block holds, for output limits.
    pub fn size(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Json { json } => json.to_string().len(),
            Self::Image { mime_type, data } => mime_type.len() + data.len(),
        }
    }
}

/// What a call with an empty result tells the model.
pub const DONE: &str = "(done)";

/// A failure the model sees as an error result; the run goes on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments are wrong (the seed's `ToolInputError`).
    #[error("(input error: {0})")]
    Input(String),
    /// The tool could not do what was asked (the seed's `ToolError`).
    #[error("{0}")]
    Failed(String),
}

/// How far a tool's hints can be relied on: what an [`Approver`](crate::approve::Approver)
/// decides on, and what `piton list` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HintsTrust {
    /// piton's sandbox holds the tool to its hints (wasm tools).
    Enforced,
    /// Another party says so and nothing checks it: an upstream MCP server's
    /// annotations.
    Declared,
    /// As `Declared`, but the user takes them at their word (`[mcp.NAME]
    /// trust_hints = true`): asked about as if enforced.
    Trusted,
    /// The embedding program's own code (a native tool): as trusted as the program.
    Native,
    /// A sandboxed tool whose grants let it past its hints (raw TCP, where read-only
    /// is not checked): not to be relied on.
    Unenforced,
}

impl HintsTrust {
    /// Whether the hints can be relied on when deciding to ask the person: enforced
    /// by the sandbox, the program's own, or trusted by the user.
    pub fn is_reliable(self) -> bool {
        matches!(self, Self::Enforced | Self::Native | Self::Trusted)
    }

    /// The word `piton list` and `piton inspect` show.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enforced => "enforced",
            Self::Declared => "declared",
            Self::Trusted => "trusted",
            Self::Native => "native",
            Self::Unenforced => "unenforced",
        }
    }
}

/// Facts about a component file, for `piton inspect`.
#[derive(Clone, Debug, Serialize)]
pub struct ComponentInfo {
    /// The SHA-256 of the component's bytes, in hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// The interfaces it imports (the WASI it may use, if granted).
    pub imports: Vec<String>,
}

/// What a sandboxed tool runs with, for `piton inspect`: its component, its limits
/// and the most a call may use.
#[derive(Clone, Debug)]
pub struct SandboxReport {
    /// The component's hash, size and imports.
    pub component: ComponentInfo,
    /// Each call's limits.
    pub limits: Limits,
    /// What a trap does.
    pub on_trap: OnTrap,
    /// What a call gets at most: the grants bounded by the tool's own hints (a call's
    /// `hints_for` can only narrow this further).
    pub capabilities: Capabilities,
}

/// Any tool: a wasm plugin, native Rust, or an upstream MCP server's tool.
///
/// Object safe, so a [`Registry`](crate::registry::Registry) holds `Arc<dyn Tool>`. The registry
/// checks the arguments against the input schema and narrows the call's hints before
/// [`Tool::call`] runs.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The tool as the model sees it.
    fn spec(&self) -> &ToolSpec;

    /// The tool's own hints: the worst case for any call.
    fn hints(&self) -> Hints;

    /// How far the hints can be relied on. By default it follows [`Tool::source`]:
    /// [`HintsTrust::Native`] for the program's own tools, [`HintsTrust::Declared`]
    /// for an MCP server's, and [`HintsTrust::Unenforced`] for a component, which only
    /// a sandbox that enforces them (a [`WasmTool`](crate::wasm::WasmTool)) may call
    /// enforced.
    fn hints_trust(&self) -> HintsTrust {
        match self.source() {
            ToolSource::Native => HintsTrust::Native,
            ToolSource::Mcp(_) => HintsTrust::Declared,
            ToolSource::File(_) | ToolSource::Bundled(_) => HintsTrust::Unenforced,
        }
    }

    /// Where the tool comes from.
    fn source(&self) -> ToolSource {
        ToolSource::Native
    }

    /// The hints of one call, or `None` when unsure (the tool's own hints apply).
    /// The registry clamps an answer wider than [`Tool::hints`]. `ctx` is the call's
    /// (a sandbox made to ask reports to its notes).
    async fn hints_for(
        &self,
        _ctx: &CallContext,
        _args: &Args,
    ) -> Result<Option<Hints>, CallError> {
        Ok(None)
    }

    /// What the tool's sandbox holds it to, if it runs in one (`piton inspect`).
    fn sandbox(&self) -> Option<SandboxReport> {
        None
    }

    /// How long one call may take, if the tool has a deadline (a wasm tool's
    /// `timeout`). The registry checks a call's arguments within it too; `None`
    /// gives that check the default [`Limits::timeout`].
    fn deadline(&self) -> Option<std::time::Duration> {
        None
    }

    /// Runs one call whose arguments fit the input schema, with the call's hints.
    /// `ctx` is the call's context: its id, its notes (a sandbox reports what it
    /// refuses there) and the caller's trace context.
    /// The arguments are borrowed: the registry keeps them (to retry an idempotent
    /// call once after a host fault) and no tool can change the recorded call.
    async fn call(
        &self,
        ctx: &CallContext,
        args: &Args,
        hints: Hints,
    ) -> Result<ToolResult, CallError>;

    /// Runs one call as [`Tool::call`] does, for a tool that calls other tools:
    /// `caller` is the registry's call path. The registry calls this; by default it
    /// is [`Tool::call`]. Code mode's tool runs its program through it.
    async fn call_through(
        &self,
        _caller: &dyn Caller,
        ctx: &CallContext,
        args: &Args,
        hints: Hints,
    ) -> Result<ToolResult, CallError> {
        self.call(ctx, args, hints).await
    }

    /// Whether every effect of a call is a call of another tool through
    /// [`Tool::call_through`]'s caller (code mode). Each of those is approved and
    /// asked about on its own, so the registry asks neither its approver nor the
    /// person about the call itself. Default false.
    fn only_calls_tools(&self) -> bool {
        false
    }
}

/// The registry's call path as a tool that calls other tools sees it (see
/// [`Tool::call_through`]): each call is found, checked against its input schema,
/// narrowed by `hints_for`, approved and asked about (through the context's asker),
/// run in its own sandbox, counted and audited, exactly like a client's call.
#[async_trait::async_trait]
pub trait Caller: Send + Sync {
    /// Calls the tool `name` with `args` in `ctx`, a context made for this call
    /// ([`CallContext::made_by_program`]).
    async fn call_nested(&self, ctx: &CallContext, name: &str, args: Value) -> Nested;
}

/// What a call through a [`Caller`] gave.
#[derive(Debug)]
pub enum Nested {
    /// The tool ran: its content, or its error result.
    Ran(ToolResult),
    /// The call was refused before the tool ran: the approver or the person did
    /// not allow it, or the person could not be asked. The message says which.
    Refused(String),
    /// The call stopped: a tool that does not exist, a trap, a lost connection.
    Stopped(CallError),
}

/// A shared tool.
pub type DynTool = Arc<dyn Tool>;

/// Checks a tool name against `[A-Za-z0-9_-]{1,64}` ([`piton_wit::check_tool_name`]);
/// the message does not echo a long name, which a guest may make megabytes long.
pub fn check_tool_name(name: &str) -> Result<(), ToolNameError> {
    piton_wit::check_tool_name(name)
}

pub use piton_wit::{MAX_DESCRIPTION, MAX_INPUT_SCHEMA, ToolNameError};

/// A spec that carries more than the contract allows; the message says by how much
/// and to shorten it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecSizeError {
    /// The description's length in bytes, over [`MAX_DESCRIPTION`].
    #[error(
        "its description is {0} bytes, over the limit of {limit}; shorten it",
        limit = crate::limits::format_size(MAX_DESCRIPTION as u64)
    )]
    Description(usize),
    /// The input schema's length in bytes of JSON text, over [`MAX_INPUT_SCHEMA`].
    #[error(
        "its input schema is {0} bytes of JSON, over the limit of {limit}; shorten it",
        limit = crate::limits::format_size(MAX_INPUT_SCHEMA as u64)
    )]
    InputSchema(usize),
}

/// Checks the sizes a spec may carry: a description of at most [`MAX_DESCRIPTION`]
/// bytes and an input schema of at most [`MAX_INPUT_SCHEMA`] bytes of JSON text
/// (`schema_len`). Names are checked by [`check_tool_name`].
pub fn check_spec_size(description: &str, schema_len: usize) -> Result<(), SpecSizeError> {
    if description.len() > MAX_DESCRIPTION {
        return Err(SpecSizeError::Description(description.len()));
    }
    if schema_len > MAX_INPUT_SCHEMA {
        return Err(SpecSizeError::InputSchema(schema_len));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        for good in ["a", "word_count", "files-v2", &"x".repeat(64)] {
            assert!(check_tool_name(good).is_ok(), "{good}");
        }
        for bad in ["", "has space", "dot.name", "ü", &"x".repeat(65)] {
            assert!(check_tool_name(bad).is_err(), "{bad}");
        }
        let long = check_tool_name(&"x".repeat(1 << 20)).unwrap_err();
        assert_eq!(long, ToolNameError::TooLong(1 << 20));
        let shown = long.to_string();
        assert!(
            shown.starts_with("tool name of 1048576 bytes"),
            "{shown:.100}"
        );
        assert!(shown.len() < 200, "a long name is not echoed: {shown:.100}");
    }

    #[test]
    fn spec_sizes_are_bounded() {
        assert!(check_spec_size(&"d".repeat(MAX_DESCRIPTION), MAX_INPUT_SCHEMA).is_ok());
        let long = check_spec_size(&"d".repeat(MAX_DESCRIPTION + 1), 2);
        assert_eq!(long, Err(SpecSizeError::Description(MAX_DESCRIPTION + 1)));
        assert_eq!(
            long.unwrap_err().to_string(),
            "its description is 65537 bytes, over the limit of 64 KiB; shorten it"
        );
        let large = check_spec_size("", MAX_INPUT_SCHEMA + 1);
        assert_eq!(large, Err(SpecSizeError::InputSchema(MAX_INPUT_SCHEMA + 1)));
        assert_eq!(
            large.unwrap_err().to_string(),
            "its input schema is 262145 bytes of JSON, over the limit of 256 KiB; shorten it"
        );
    }

    #[test]
    fn model_text_of_each_block() {
        assert_eq!(Content::text("hi").to_model_text(), "hi");
        let json = Content::Json {
            json: serde_json::json!({"a": 1}),
        };
        assert_eq!(json.to_model_text(), r#"{"a":1}"#);
        let image = Content::Image {
            mime_type: "image/png".into(),
            data: vec![0; 3],
        };
        assert_eq!(image.to_model_text(), "[image image/png, 3 bytes]");
    }

    #[test]
    fn input_errors_read_as_the_seed_says() {
        assert_eq!(
            ToolError::Input("missing field `text`".into()).to_string(),
            "(input error: missing field `text`)"
        );
        assert_eq!(ToolError::Failed("boom".into()).to_string(), "boom");
    }
}
