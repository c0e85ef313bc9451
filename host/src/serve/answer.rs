//! The answer to one `tools/call`: what the rmcp handler (session.rs) and the lean
//! stdio path (lean.rs) both give, from one function, so that the two can never
//! differ in what a call answers.
//!
//! A call goes through [`Registry::call`]: content becomes a result, an error result
//! becomes `isError`, an unknown tool is invalid params and any other failure (a
//! trap) an internal error.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;

use crate::error::CallError;
use crate::registry::Registry;
use crate::tool::{Content, DONE};

/// Calls `name` with `arguments` (none is `{}`) on `registry` and gives the MCP
/// answer: a result, or the JSON-RPC error.
pub(super) async fn call_tool(
    registry: &Registry,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<CallToolResult, ErrorData> {
    let args = Value::Object(arguments.unwrap_or_default());
    match registry.call(name, args).await {
        Ok(Ok(content)) => Ok(success(content)),
        // Display gives the model's text: "(input error: m)" or the failure as is.
        Ok(Err(error)) => Ok(CallToolResult::error(vec![ContentBlock::text(
            error.to_string(),
        )])),
        Err(error @ CallError::UnknownTool { .. }) => {
            Err(ErrorData::invalid_params(error.to_string(), None))
        }
        Err(error) => Err(ErrorData::internal_error(error.to_string(), None)),
    }
}

/// The MCP result of a call's content.
fn success(content: Vec<Content>) -> CallToolResult {
    if content.is_empty() {
        return CallToolResult::success(vec![ContentBlock::text(DONE)]);
    }
    // A lone JSON object is also given as structured content, for clients that read it.
    let structured = match content.as_slice() {
        [Content::Json { json }] if json.is_object() => Some(json.clone()),
        _ => None,
    };
    let blocks = content
        .into_iter()
        .map(|block| match block {
            Content::Text { text } => ContentBlock::text(text),
            Content::Json { json } => ContentBlock::text(json.to_string()),
            Content::Image { mime_type, data } => {
                ContentBlock::image(BASE64.encode(&data), mime_type)
            }
        })
        .collect();
    let mut result = CallToolResult::success(blocks);
    result.structured_content = structured;
    result
}
