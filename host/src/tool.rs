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
    /// The embedding program's own code (a native tool): as trusted as the program.
    Native,
    /// A sandboxed tool whose grants let it past its hints (raw TCP, where read-only
    /// is not checked): not to be relied on.
    Unenforced,
}

impl HintsTrust {
    /// The word `piton list` and `piton inspect` show.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enforced => "enforced",
            Self::Declared => "declared",
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
}

/// A shared tool.
pub type DynTool = Arc<dyn Tool>;

/// Checks a tool name against `[A-Za-z0-9_-]{1,64}` ([`piton_wit::check_tool_name`]);
/// the message does not echo a long name, which a guest may make megabytes long.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    piton_wit::check_tool_name(name).map_err(|e| e.to_string())
}

pub use piton_wit::{MAX_DESCRIPTION, MAX_INPUT_SCHEMA};

/// Checks the sizes a spec may carry: a description of at most [`MAX_DESCRIPTION`]
/// bytes and an input schema of at most [`MAX_INPUT_SCHEMA`] bytes of JSON text
/// (`schema_len`). Names are checked by [`check_tool_name`].
pub fn check_spec_size(description: &str, schema_len: usize) -> Result<(), String> {
    if description.len() > MAX_DESCRIPTION {
        return Err(format!(
            "its description is {} bytes, over the limit of {}; shorten it",
            description.len(),
            crate::limits::format_size(MAX_DESCRIPTION as u64)
        ));
    }
    if schema_len > MAX_INPUT_SCHEMA {
        return Err(format!(
            "its input schema is {schema_len} bytes of JSON, over the limit of {}; shorten it",
            crate::limits::format_size(MAX_INPUT_SCHEMA as u64)
        ));
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
        assert!(
            long.starts_with("tool name of 1048576 bytes"),
            "{long:.100}"
        );
        assert!(long.len() < 200, "a long name is not echoed: {long:.100}");
    }

    #[test]
    fn spec_sizes_are_bounded() {
        assert!(check_spec_size(&"d".repeat(MAX_DESCRIPTION), MAX_INPUT_SCHEMA).is_ok());
        assert_eq!(
            check_spec_size(&"d".repeat(MAX_DESCRIPTION + 1), 2),
            Err("its description is 65537 bytes, over the limit of 64 KiB; shorten it".into())
        );
        assert_eq!(
            check_spec_size("", MAX_INPUT_SCHEMA + 1),
            Err(
                "its input schema is 262145 bytes of JSON, over the limit of 256 KiB; shorten it"
                    .into()
            )
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
