//! Outgoing HTTP (wasi:http/outgoing-handler), checked request by request: the
//! authority must be granted, and the request goes to an address the policy allows,
//! connected to by the host itself, so no second DNS lookup can send it elsewhere.
//! A guest that follows a redirect makes a new request, checked like the first.
//!
//! The grant's secret headers are added here, to the host's copy of the request,
//! after wasmtime-wasi-http has taken the guest's request out of its resource table:
//! nothing the guest holds ever contains them. They go over TLS only (or in clear to
//! a loopback address granted literally, for local testing); a plain-http request to
//! a grant with headers is refused rather than sent without them.
//!
//! Methods: TRACE, TRACK and CONNECT are never sent (TRACE and TRACK echo the request,
//! secret headers included, back into the body the guest reads; CONNECT would tunnel
//! past these checks); a read-only call sends only GET, HEAD and OPTIONS.
//!
//! The `Host` header is built here from the checked host and port, never from the
//! guest's authority (which may carry a `user@` part).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::Method;
use http::header::{HeaderName, HeaderValue};
use http_body_util::BodyExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, pki_types::ServerName};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::addr::{AddrClass, classify};
use super::policy::{Policy, same_name};
use crate::grants::{Host, NetAccess, NetGrant};
use crate::wasm::fds::{FdCounter, FdToken};

/// Waits longer than these only when the guest's request options ask for it; the
/// call's deadline bounds everything anyway.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);

/// How wasi:http sends a call's requests: through its policy.
pub(crate) struct Hooks {
    policy: Arc<Policy>,
    /// The call's open descriptors: each connection is one.
    fds: FdCounter,
}

impl Hooks {
    pub(super) fn new(policy: Arc<Policy>) -> Self {
        Self {
            policy,
            fds: FdCounter::default(),
        }
    }

    /// Counts each connection among the call's open descriptors.
    pub(crate) fn count_connections(&mut self, fds: FdCounter) {
        self.fds = fds;
    }
}

/// The most bytes one write to an outgoing body may carry, down from wasmtime-wasi-http's
/// 1 MiB: a body not yet sent buffers two writes, and no handle of a call may hold
/// more than 64 KiB (see `MAX_RESOURCES`), a body with its request and stream 128 KiB.
const BODY_CHUNK: usize = 64 << 10;

/// A refused request's body is read and dropped, up to this much or this long, before
/// the refusal is answered: a guest that writes its body while it waits for the
/// response (componentize-js does) then learns of the refusal from the response, as
/// it would of any failure, and not from a write to a body nobody reads.
const REFUSED_BODY_MAX: usize = 1 << 20;
const REFUSED_BODY_TIME: Duration = Duration::from_secs(1);

/// What a sent request gives back to wasmtime-wasi-http: the response, and the
/// connection's remaining I/O, which it drives while the guest reads the body.
type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Result<Sent, Error>> + Send> {
        let policy = self.policy.clone();
        let fds = self.fds.clone();
        Box::new(async move {
            let token = fds.acquire().map_err(|error| {
                tracing::debug!(%error, "HTTP request refused");
                Error::ConnectionLimitReached
            })?;
            send(&policy, request, options, token).await
        })
    }

    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        BODY_CHUNK
    }

    /// `send` sets `Host` itself, from the checked authority.
    fn set_host_header(&mut self) -> bool {
        false
    }
}

/// Where a checked request goes.
struct Target {
    /// The addresses to try, in order: all allowed.
    addrs: Vec<SocketAddr>,
    /// For TLS: the name (or address) the certificate must be for.
    server_name: ServerName<'static>,
    /// The headers to add, from every grant that matches.
    headers: Vec<(HeaderName, HeaderValue)>,
    /// The `Host` header: the granted host, and the port unless it is the scheme's.
    host: HeaderValue,
}

async fn send(
    policy: &Policy,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    fd: FdToken,
) -> Result<Sent, Error> {
    let uri = request.uri().clone();
    let tls = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err(Error::HttpProtocolError),
    };
    let host = uri.host().ok_or(Error::HttpRequestUriInvalid)?;
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let checked = match method_allowed(policy.access, request.method()) {
        Ok(()) => target(policy, host, port, tls).await,
        Err(reason) => Err(reason),
    };
    let target = match checked {
        Ok(target) => target,
        Err(reason) => {
            // Debug-quoted: the method is the guest's.
            let method = request.method().as_str();
            tracing::debug!(host, port, method = ?method, reason, "HTTP request denied");
            policy.denied(&format_args!("{host}:{port}"), reason);
            drain(request.body_mut()).await;
            return Err(Error::HttpRequestDenied);
        }
    };

    let headers = request.headers_mut();
    headers.insert(http::header::HOST, target.host);
    // The host's values replace whatever the guest set under these names.
    for (name, _) in &target.headers {
        headers.remove(name);
    }
    for (name, value) in target.headers {
        headers.append(name, value);
    }
    // HTTP/1.1 to an origin server takes the path alone; the authority is in `Host`.
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(uri.path_and_query().map_or("/", |p| p.as_str()))
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;

    let options = options.unwrap_or_default();
    let connect_timeout = options.connect_timeout.unwrap_or(CONNECT_TIMEOUT);
    let stream = connect(&target.addrs, connect_timeout).await?;
    let io: Box<dyn Io> = if tls {
        let connector = tokio_rustls::TlsConnector::from(tls_config()?);
        let handshake = connector.connect(target.server_name, stream);
        match tokio::time::timeout(connect_timeout, handshake).await {
            Ok(Ok(stream)) => Box::new(stream),
            Ok(Err(error)) => return Err(Error::Tls(error)),
            Err(_) => return Err(Error::ConnectionTimeout),
        }
    } else {
        Box::new(stream)
    };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(Error::from)?;
    // The connection runs beside the request; dropping its handle (with the
    // response, or the call) aborts it.
    let connection = wasmtime_wasi::runtime::spawn(connection);

    let first_byte = options.first_byte_timeout.unwrap_or(FIRST_BYTE_TIMEOUT);
    let response = match tokio::time::timeout(first_byte, sender.send_request(request)).await {
        Ok(response) => response.map_err(Error::from)?,
        Err(_) => return Err(Error::ConnectionReadTimeout),
    };
    let response = response.map(|body| body.map_err(Error::from).boxed_unsync());
    let io = async move {
        // The connection's descriptor stays counted until it closes.
        let _fd = fd;
        let mut connection = connection;
        // The join handle itself: its wrapper would panic if the task had.
        match (&mut *connection).await {
            Ok(result) => result.map_err(Error::from),
            Err(_) => Err(Error::ConnectionTerminated),
        }
    };
    Ok((response, Box::new(io)))
}

/// Reads and drops `body` until it ends, fails, or passes [`REFUSED_BODY_MAX`] bytes
/// or [`REFUSED_BODY_TIME`].
async fn drain(body: &mut WasiBody) {
    let read = async {
        let mut seen = 0;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, |d| d.len());
            if seen > REFUSED_BODY_MAX {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(REFUSED_BODY_TIME, read).await;
}

/// A byte stream hyper can run HTTP/1.1 over: plain TCP or TLS.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

/// Whether a call with `access` may send `method`. HTTP methods are case-sensitive,
/// but a server might not be: the ones never sent are refused in any case.
fn method_allowed(access: NetAccess, method: &Method) -> Result<(), &'static str> {
    if ["TRACE", "TRACK", "CONNECT"]
        .iter()
        .any(|never| method.as_str().eq_ignore_ascii_case(never))
    {
        return Err("TRACE, TRACK and CONNECT are never sent");
    }
    match access {
        NetAccess::ReadOnly if ![Method::GET, Method::HEAD, Method::OPTIONS].contains(method) => {
            Err("a read-only call sends GET, HEAD and OPTIONS only")
        }
        NetAccess::ReadOnly | NetAccess::Full => Ok(()),
    }
}

/// Where a request for `host:port` may go, or why it may not go anywhere; `tls` says
/// whether it goes over TLS.
async fn target(policy: &Policy, host: &str, port: u16, tls: bool) -> Result<Target, &'static str> {
    if policy.is_empty() {
        return Err("no network is granted to this call");
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    // The host part of `Host`, and whether it is a loopback address granted literally.
    let (addrs, server_name, grants, host, loopback): (Vec<SocketAddr>, _, Vec<&NetGrant>, _, _) =
        if let Ok(ip) = bare.parse::<IpAddr>() {
            let addr = SocketAddr::new(ip.to_canonical(), port);
            let grants = matching(
                policy,
                port,
                |h| matches!(h, Host::Ip(g) if g.to_canonical() == addr.ip()),
            );
            let host = match addr.ip() {
                IpAddr::V4(v4) => v4.to_string(),
                IpAddr::V6(v6) => format!("[{v6}]"),
            };
            let loopback = classify(addr.ip()) == AddrClass::Loopback;
            (
                vec![addr],
                ServerName::IpAddress(ip.into()),
                grants,
                host,
                loopback,
            )
        } else {
            let granted = policy.granted_name(bare).ok_or("the host is not granted")?;
            let grants = matching(
                policy,
                port,
                |h| matches!(h, Host::Name(n) if same_name(n, granted)),
            );
            if grants.is_empty() {
                return Err("the host is not granted on this port");
            }
            let mut addrs = Vec::new();
            for ip in policy.addresses_of(granted).await {
                let addr = SocketAddr::new(ip, port);
                if policy.may_connect(addr).await {
                    addrs.push(addr);
                }
            }
            let server_name = ServerName::try_from(granted.to_owned())
                .map_err(|_| "the granted name is not a valid TLS server name")?;
            (addrs, server_name, grants, granted.to_owned(), false)
        };
    if grants.is_empty() {
        return Err("the address is not granted on this port");
    }
    if addrs.is_empty() {
        return Err("the host resolves to no address it may reach");
    }
    let mut headers = Vec::new();
    for (name, secret) in grants.iter().flat_map(|g| &g.headers) {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| "a granted header name is invalid")?;
        let mut value = HeaderValue::from_str(secret.expose())
            .map_err(|_| "a granted header value is invalid")?;
        // Keeps it out of hyper's debug output and HPACK tables.
        value.set_sensitive(true);
        headers.push((name, value));
    }
    if !headers.is_empty() && !tls && !loopback {
        return Err(
            "the grant adds secret headers, which go over TLS only (in clear only to a \
             loopback address granted literally): use https",
        );
    }
    let default_port = if tls { 443 } else { 80 };
    let host = if port == default_port {
        host
    } else {
        format!("{host}:{port}")
    };
    let host = HeaderValue::from_str(&host).map_err(|_| "the granted host is not a valid Host")?;
    Ok(Target {
        addrs,
        server_name,
        headers,
        host,
    })
}

/// The grants for `port` whose host passes `host`.
fn matching(policy: &Policy, port: u16, host: impl Fn(&Host) -> bool) -> Vec<&NetGrant> {
    policy
        .grants
        .iter()
        .filter(|g| g.port == port && host(&g.host))
        .collect()
}

/// Connects to the first of `addrs` that answers.
async fn connect(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, Error> {
    let mut last = Error::ConnectionRefused;
    for addr in addrs {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(error)) => last = Error::Connect(error),
            Err(_) => last = Error::ConnectionTimeout,
        }
    }
    Err(last)
}

/// The TLS client settings: the webpki roots, ring, TLS 1.2 and 1.3. Built once.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    static CONFIG: OnceLock<Option<Arc<rustls::ClientConfig>>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|builder| {
                    Arc::new(builder.with_root_certificates(roots).with_no_client_auth())
                })
                .inspect_err(|error| tracing::error!(%error, "TLS is unavailable"))
                .ok()
        })
        .clone()
        .ok_or(Error::ConfigurationError)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Secret;

    fn policy() -> Policy {
        Policy::full(&[
            NetGrant {
                host: Host::Ip("127.0.0.1".parse().unwrap()),
                port: 8080,
                headers: vec![("Authorization".into(), Secret("Bearer s".into()))],
                tcp: false,
            },
            NetGrant {
                host: Host::Name("localhost".into()),
                port: 9090,
                headers: Vec::new(),
                tcp: false,
            },
        ])
    }

    #[tokio::test]
    async fn only_granted_authorities_are_targets() {
        let policy = policy();
        let allowed = target(&policy, "127.0.0.1", 8080, false).await.unwrap();
        assert_eq!(allowed.addrs, ["127.0.0.1:8080".parse().unwrap()]);
        assert_eq!(allowed.headers.len(), 1);
        assert_eq!(allowed.headers[0].0, "authorization");
        assert!(allowed.headers[0].1.is_sensitive());
        for (host, port) in [
            ("127.0.0.1", 8081),
            ("127.0.0.2", 8080),
            ("[::1]", 8080),
            ("localhost", 8080),
            ("example.com", 8080),
            // Granted, but a name never leads to loopback.
            ("localhost", 9090),
            ("LOCALHOST.", 9090),
        ] {
            assert!(
                target(&policy, host, port, false).await.is_err(),
                "{host}:{port}"
            );
        }
        assert!(
            target(&Policy::full(&[]), "127.0.0.1", 8080, true)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn secret_headers_go_over_tls_or_to_a_loopback_literal_only() {
        let secret = || vec![("Authorization".into(), Secret("Bearer s".into()))];
        let grant = |host: Host| NetGrant {
            host,
            port: 80,
            headers: secret(),
            tcp: false,
        };
        let resolver: super::super::policy::Resolver =
            Arc::new(|_| Ok(vec![IpAddr::from([93, 184, 215, 14])]));
        let policy = Policy::with_resolver(
            &[
                grant(Host::Name("api.example.com".into())),
                grant(Host::Ip("93.184.215.14".parse().unwrap())),
                grant(Host::Ip("10.0.0.7".parse().unwrap())),
                grant(Host::Ip("127.0.0.1".parse().unwrap())),
                grant(Host::Ip("::1".parse().unwrap())),
            ],
            NetAccess::Full,
            resolver,
        );
        // Over TLS: sent, wherever the grant leads.
        for host in [
            "api.example.com",
            "93.184.215.14",
            "10.0.0.7",
            "127.0.0.1",
            "[::1]",
        ] {
            let target = target(&policy, host, 80, true).await.unwrap();
            assert_eq!(target.headers.len(), 1, "{host}");
        }
        // In clear: refused, unless the grant is a loopback address.
        for host in ["api.example.com", "93.184.215.14", "10.0.0.7"] {
            let refused = target(&policy, host, 80, false).await.err();
            assert!(
                refused.is_some_and(|r| r.contains("TLS")),
                "{host}: {refused:?}"
            );
        }
        for host in ["127.0.0.1", "[::1]"] {
            let target = target(&policy, host, 80, false).await.unwrap();
            assert_eq!(target.headers.len(), 1, "{host}");
        }
    }
}
