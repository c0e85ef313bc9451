//! The MCP server: a [`Registry`] served over one connection (stdio for `piton serve`).
//!
//! tools/list carries every tool's spec and all four hints; tools/call goes through
//! [`Registry::call`]: error results become `isError`, traps JSON-RPC errors.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage, ClientRequest,
    ContentBlock, GetMeta as _, Implementation, JsonRpcMessage, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    ServerJsonRpcMessage, Tool as McpTool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{CallError, Content, DONE, DynTool, Registry};

/// Why serving ended with a failure (a clean end of input is `Ok`).
#[derive(Debug, thiserror::Error)]
#[error("MCP session failed: {0}")]
pub struct ServeError(String);

/// Serves `registry` over one MCP connection until the peer closes `read`.
///
/// A connection that closes before or during the handshake is a clean end, like a
/// closed stdin: a client that probes and leaves is not a server failure.
pub async fn serve<R, W>(registry: Arc<Registry>, read: R, write: W) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let transport = BeforeSession::new(AsyncRwTransport::new_server(read, write));
    let running = match PitonServer::new(registry).serve(transport).await {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(ServeError(e.to_string())),
    };
    running
        .waiting()
        .await
        .map(drop)
        .map_err(|e| ServeError(e.to_string()))
}

/// The rmcp handler over a registry.
#[derive(Clone, Debug)]
pub struct PitonServer {
    registry: Arc<Registry>,
}

impl PitonServer {
    /// A server for `registry`.
    pub fn new(registry: Arc<Registry>) -> Self {
        Self { registry }
    }
}

impl ServerHandler for PitonServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("piton", env!("CARGO_PKG_VERSION")))
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + Send + '_ {
        // The registry is small and in memory: one page holds every tool.
        let tools = self.registry.tools().map(mcp_tool).collect();
        std::future::ready(Ok(ListToolsResult::with_all_items(tools)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let call = self.registry.call(&request.name, args);
        // A cancelled request drops the call future, which stops the wasm instance;
        // rmcp drops whatever a cancelled request answers, so the error is not sent.
        let result = tokio::select! {
            result = call => result,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        match result {
            Ok(Ok(content)) => Ok(success(content).into()),
            // Display gives the model's text: "(input error: m)" or the failure as is.
            Ok(Err(error)) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(error.to_string())]).into())
            }
            Err(error @ CallError::UnknownTool { .. }) => {
                Err(ErrorData::invalid_params(error.to_string(), None))
            }
            Err(error) => Err(ErrorData::internal_error(error.to_string(), None)),
        }
    }
}

/// A registry tool as MCP lists it: all four hints set, so no client falls back
/// to the spec's worst-case defaults for a tool whose hints piton enforces.
fn mcp_tool(tool: &DynTool) -> McpTool {
    let spec = tool.spec();
    let hints = tool.hints();
    let schema = match &spec.input_schema {
        Value::Object(schema) => schema.clone(),
        // The registry only admits object schemas; this keeps the listing valid anyway.
        _ => serde_json::Map::from_iter([("type".to_owned(), Value::from("object"))]),
    };
    McpTool::new(spec.name.clone(), spec.description.clone(), schema).with_annotations(
        ToolAnnotations::from_raw(
            None,
            Some(hints.read_only),
            Some(hints.destructive),
            Some(hints.idempotent),
            Some(hints.open_world),
        ),
    )
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
            Content::Image { mime_type, data } => ContentBlock::image(base64(&data), mime_type),
        })
        .collect();
    let mut result = CallToolResult::success(blocks);
    result.structured_content = structured;
    result
}

/// Standard base64 with padding (RFC 4648), as MCP image blocks carry their data.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Keeps a session alive through messages that arrive before it has started.
///
/// rmcp's handshake answers `ping`, `server/discover` and requests before
/// `initialize` itself, but ends the connection on any other message there (a
/// notification, a stray response). A client that probes first (the Python SDK's
/// `server/discover`, then a fallback) must still be able to initialize, so until a
/// request starts the session such messages are dropped here.
struct BeforeSession<T> {
    inner: T,
    started: bool,
}

impl<T> BeforeSession<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            started: false,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for BeforeSession<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let message = self.inner.receive().await?;
            if self.started {
                return Some(message);
            }
            match &message {
                JsonRpcMessage::Request(request) => {
                    self.started = starts_session(&request.request);
                    return Some(message);
                }
                other => tracing::debug!(?other, "dropped a message sent before initialize"),
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Whether rmcp leaves its handshake on this request: `initialize`, or a request
/// (not discover) that carries the 2026-07-28 per-request metadata.
fn starts_session(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::DiscoverRequest(_) | ClientRequest::PingRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.protocol_version().is_some()
                && meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::base64;

    #[test]
    fn base64_matches_rfc_4648() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), expected);
        }
    }
}
