//! The answers to `tools/call` and `tools/list`: what the rmcp handler (session.rs)
//! and the lean paths (stdio/lean.rs, http/lean.rs) all give, from one function each,
//! so that they can never differ in what a call or a listing answers.
//!
//! A call goes through [`Registry::call_with`], in the [`CallContext`] the transport
//! made (with the trace context its client sent): content becomes a result, an error result
//! becomes `isError`, an unknown tool is invalid params and any other failure (a
//! trap) an internal error. A call made while piton is stopping is refused, and one
//! still running when the stop's grace is over is ended, each with a JSON-RPC error
//! that says so (stop.rs).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListToolsResult, Tool as WireTool,
    ToolAnnotations,
};
use serde_json::Value;

use super::stop::Calls;
use crate::call::CallContext;
use crate::consent::{Channel, QUESTION_KEY, Question};
use crate::error::CallError;
use crate::registry::Registry;
use crate::tool::{Content, DONE, DynTool};

/// Every tool of `registry`, in one page. An upstream server that cannot be listed
/// leaves out its tools, not the others'; its error goes to the log.
pub(super) async fn list_tools(registry: &Registry) -> ListToolsResult {
    let listing = registry.list().await;
    for error in &listing.errors {
        tracing::warn!(%error, "tools/list: left out an upstream server's tools");
    }
    ListToolsResult::with_all_items(listing.tools.iter().map(mcp_tool).collect())
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

/// Calls `name` with `arguments` (none is `{}`) on `registry` in `ctx`, counted
/// among `calls`, asking the person over `channel` when the consent policy says so,
/// and gives the MCP answer: a result, `input_required`, or the JSON-RPC error.
pub(super) async fn call_tool(
    registry: &Registry,
    calls: &Calls,
    ctx: CallContext,
    name: &str,
    arguments: Option<JsonObject>,
    channel: &Channel<'_>,
) -> Result<CallToolResponse, ErrorData> {
    let _in_flight = match calls.start(name) {
        Ok(entry) => entry,
        Err(refused) => return Err(ErrorData::internal_error(refused.to_string(), None)),
    };
    tracing::debug!(tool = name, "tools/call started");
    tokio::select! {
        answer = call(registry, &ctx, name, arguments, channel) => answer,
        // Dropping the call stops its instance (or its upstream request).
        grace = calls.cut() => Err(stopped(name, grace)),
    }
}

/// The error of a call cut at the end of a stop's grace.
pub(super) fn stopped(name: &str, grace: std::time::Duration) -> ErrorData {
    ErrorData::internal_error(
        format!(
            "tool `{name}` was stopped before it answered: piton is shutting down, and \
             the call was still running after the {grace:?} it waits for calls in \
             flight (--shutdown-grace); send it again, to another replica or once \
             piton has restarted"
        ),
        None,
    )
}

/// The call itself.
pub(super) async fn call(
    registry: &Registry,
    ctx: &CallContext,
    name: &str,
    arguments: Option<JsonObject>,
    channel: &Channel<'_>,
) -> Result<CallToolResponse, ErrorData> {
    let args = Value::Object(arguments.unwrap_or_default());
    match registry.call_asking(ctx, name, args, channel).await {
        Ok(Ok(content)) => Ok(success(content).into()),
        // Display gives the model's text: "(input error: m)" or the failure as is.
        Ok(Err(error)) => {
            Ok(CallToolResult::error(vec![ContentBlock::text(error.to_string())]).into())
        }
        Err(CallError::InputRequired {
            message,
            schema,
            state,
            ..
        }) => super::ask::input_required(QUESTION_KEY, &Question { message, schema }, state)
            .map(CallToolResponse::from)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None)),
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
