//! The TLS client configuration piton's own HTTP clients use (upstream MCP servers over
//! Streamable HTTP, the OTLP exporter): rustls with ring and the webpki roots, so no
//! system crypto provider or certificate store is needed.

use std::sync::Arc;

/// rustls with ring, its safe default protocol versions and the webpki roots, no
/// client certificate; an error says why the TLS setup failed.
pub(crate) fn client_config() -> Result<rustls::ClientConfig, String> {
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS setup failed: {e}"))?
    .with_root_certificates(rustls::RootCertStore::from_iter(
        webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
    ))
    .with_no_client_auth())
}
