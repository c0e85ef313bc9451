//! The client side of one upstream connection: rmcp's handler, the HTTP transport,
//! and a bounded tools/list.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use tokio::sync::watch;

use super::relay::{Origin, Relay};

/// How many pages of tools/list are read at most; a server that always gives a next
/// cursor is cut off here.
const MAX_PAGES: usize = 100;

/// Every page of tools/list, at most [`MAX_PAGES`], stopping on a cursor seen before.
pub(super) async fn list_pages(
    peer: &rmcp::service::Peer<RoleClient>,
) -> Result<Vec<rmcp::model::Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = cursor
            .take()
            .map(|c| rmcp::model::PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer.list_tools(params).await.map_err(|e| e.to_string())?;
        tools.extend(page.tools);
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) if !seen.insert(next.clone()) => {
                return Err(format!("the server gave the cursor {next:?} twice"));
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(format!("more than {MAX_PAGES} pages of tools"))
}

/// A Streamable HTTP transport through reqwest with piton's rustls (ring) and the
/// webpki roots; redirects are not followed (the MCP client would replay headers).
pub(super) fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let tls = crate::tls::client_config()?;
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("HTTP client setup failed: {e}"))?;
    let mut custom = std::collections::HashMap::new();
    for (key, value) in headers {
        let name = http::HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| format!("header name {key:?} is not valid"))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {key} is not valid"))?;
        custom.insert(name, value);
    }
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_owned(),
        )
        .custom_headers(custom);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// The client side of one upstream connection.
pub(super) struct Upstream {
    pub(super) server: String,
    pub(super) stale: Arc<AtomicBool>,
    pub(super) changed: Arc<watch::Sender<u64>>,
    /// Its calls in flight, where its questions go.
    pub(super) relay: Arc<Relay>,
}

impl ClientHandler for Upstream {
    fn get_info(&self) -> ClientConfig {
        // 2025-11-25 keeps list_changed an unprompted notification (2026-07-28 needs
        // a subscription), which is what the servers in use today send.
        // Forms only: a form is passed on to the person who made the call (relay.rs).
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(
            capabilities,
            Implementation::new("piton", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        // Over Streamable HTTP the transport tells on which request's response
        // stream the question came: the call it belongs to.
        let origin = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Origin::Request(id.clone()),
            Some(InboundStreamOrigin::Unassociated) | None => Origin::Unknown,
        };
        Ok(self.relay.elicit(&self.server, request, &origin).await)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(
            server = self.server,
            "its tools changed; listing them again"
        );
        self.stale.store(true, Ordering::Release);
        self.changed.send_modify(|n| *n += 1);
    }
}
