//! `piton serve --http ADDR`: the served registry over MCP's Streamable HTTP at
//! `/mcp`, one [`Session`] per session (rmcp's [`StreamableHttpService`]), on
//! hyper; and beside it `/healthz`, `/readyz` and `/metrics` (see `probes`).
//!
//! DNS-rebinding protection: a request whose `Host` (or a present `Origin`) does not
//! name this server by its bound address gets 403 before anything else looks at
//! it. rmcp's own Host/Origin lists are turned off in favour of [`HostCheck`]: they
//! cannot express the rule for a server bound to every interface (any IP literal,
//! no names), and one check is easier to trust than two.
//!
//! Clients cannot hold it open ([`HttpLimits`]): a request's head and body must
//! arrive in time and an idle connection is closed (see `deadline`), connections past
//! the limit wait in the listen backlog, sessions past the limit are refused with 503
//! (see `sessions`), and a request body is at most [`MAX_BODY`].

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::deadline::{Phases, RequestBody, ResponseBody, Tally, TrackedIo};
use super::ends_with_answer::EndsWithAnswer;
use super::limits::HttpLimits;
use super::probes;
use super::served::Served;
use super::session::{ServeError, Session};
use super::sessions::{self, BoundedSessions};

/// The path MCP is served at; every other path is 404.
pub const MCP_PATH: &str = "/mcp";

/// How long connections get to finish once shutdown starts (SIGTERM, Ctrl-C):
/// the Kubernetes manifests in host/deploy give piton this much and more.
pub const GRACE: Duration = Duration::from_secs(5);

/// The largest request body read (rmcp answers a larger one with 413). MCP requests
/// are small: arguments, not files.
pub const MAX_BODY: usize = 4 << 20;

/// The most a connection buffers of a request head (hyper answers a larger one with
/// 431 and closes): hyper's default, ~400 KiB, across `--max-connections` connections
/// would let stalled clients hold hundreds of MiB.
const MAX_HEAD: usize = 64 << 10;

/// How often, at most, the log says that the connection limit is reached.
const LIMIT_LOG_EVERY: Duration = Duration::from_secs(60);

/// Serves `served` over Streamable HTTP on `listener` within `limits` until
/// `shutdown` resolves, then stops accepting, ends the sessions and gives open
/// connections a few seconds to finish.
pub async fn serve_http(
    served: Arc<Served>,
    listener: TcpListener,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError(format!("cannot read the listening address: {e}")))?;
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_BODY);
    let sessions_end = config.cancellation_token.clone();
    let probed = served.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(Session::new(served.clone())),
        Arc::new(BoundedSessions::new(
            limits.max_sessions,
            limits.session_timeout,
        )),
        config,
    );
    let app = Arc::new(App {
        check: HostCheck::new(bound),
        mcp,
        limits,
        served: probed,
    });
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    // One permit per open connection. At the limit nothing is accepted: new
    // connections wait in the kernel's listen backlog and are served once a slot
    // frees (the deadlines see that one does), rather than being accepted and closed.
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    let mut logged_full: Option<tokio::time::Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if logged_full.is_none_or(|at| at.elapsed() >= LIMIT_LOG_EVERY) {
                    logged_full = Some(tokio::time::Instant::now());
                    tracing::warn!(
                        "{n} connections are open (--max-connections {n}: new connections \
                         wait until one closes)",
                        n = limits.max_connections
                    );
                }
                tokio::select! {
                    () = &mut shutdown => break,
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                }
            }
        };
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
        match accepted {
            Ok((stream, peer)) => {
                let connection = connection(app.clone(), stream, peer, stopping.clone());
                connections.spawn(async move {
                    connection.await;
                    // Freed only once the connection is closed.
                    drop(slot);
                });
            }
            Err(error) => {
                // Out of file descriptors and the like: wait rather than spin.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    drop(listener);
    sessions_end.cancel();
    let _ = stop.send(true);
    let drained = tokio::time::timeout(GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::info!(
            open = connections.len(),
            "closing connections still open after {GRACE:?}"
        );
        connections.shutdown().await;
    }
    Ok(())
}

/// Serves one connection until it closes, misses a deadline (see `deadline`), or is
/// finished when `stopping` turns true.
async fn connection(
    app: Arc<App>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    mut stopping: watch::Receiver<bool>,
) {
    let limits = app.limits;
    // An answer goes out in one write (see `ends_with_answer`), but not everything can: an event
    // stream's events, a body larger than the socket takes at once. With Nagle's
    // algorithm on, a write made while the previous one is unacknowledged waits for
    // the client's ACK, which clients delay up to 40 ms while they wait for the rest.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot turn Nagle's algorithm off");
    }
    let no_delay = stream.nodelay().unwrap_or(false);
    let (phases, mut phase) = Phases::start();
    let tally = Arc::new(Tally::default());
    let io = TokioIo::new(TrackedIo::new(stream, phases.clone(), tally.clone()));
    let service = {
        let phases = phases.clone();
        let tally = tally.clone();
        hyper::service::service_fn(move |request: Request<Incoming>| {
            let app = app.clone();
            let phases = phases.clone();
            tally.request();
            phases.request(hyper::body::Body::is_end_stream(request.body()));
            let post = request.method() == http::Method::POST;
            let request = request.map(|body| RequestBody::new(body, phases.clone()));
            async move {
                let response = app.handle(request).await;
                let events = response
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
                Ok::<_, Infallible>(response.map(|body| {
                    ResponseBody::new(EndsWithAnswer::new(body, post && events), phases)
                }))
            }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .max_buf_size(MAX_HEAD)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let ended = loop {
        let deadline = phase.borrow_and_update().deadline(&limits);
        let expired = async {
            match deadline {
                Some((at, _)) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ended = conn.as_mut() => break ended,
            () = async { drop(stopping.wait_for(|stop| *stop).await) } => {
                conn.as_mut().graceful_shutdown();
                break conn.await;
            }
            _ = phase.changed() => {}
            () = expired => {
                // Unless the phase moved on meanwhile, the connection is let go.
                if let Some((_, why)) = deadline
                    && phase.borrow().deadline(&limits) == deadline
                {
                    tracing::debug!(%peer, "closing a connection that {why}");
                    break Ok(());
                }
            }
        }
    };
    if let Err(error) = ended {
        tracing::debug!(%error, "HTTP connection ended with an error");
    }
    tracing::debug!(
        %peer,
        requests = tally.requests(),
        writes = tally.writes(),
        no_delay,
        "connection closed"
    );
}

type Body = BoxBody<Bytes, Infallible>;

struct App {
    check: HostCheck,
    mcp: StreamableHttpService<Session, BoundedSessions>,
    limits: HttpLimits,
    served: Arc<Served>,
}

impl App {
    async fn handle(&self, request: Request<RequestBody<Incoming>>) -> Response<Body> {
        if let Err(why) = self.check.check(request.uri(), request.headers()) {
            tracing::warn!(why, "refused a request (possible DNS rebinding)");
            return text(StatusCode::FORBIDDEN, format!("Forbidden: {why}"));
        }
        if let Some(probe) = probes::answer(request.method(), request.uri().path(), &self.served) {
            let mut response = text(probe.status, probe.body);
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(probe.content_type),
            );
            if let Some(allow) = probe.allow {
                headers.insert(header::ALLOW, header::HeaderValue::from_static(allow));
            }
            return response;
        }
        if request.uri().path() != MCP_PATH {
            return text(
                StatusCode::NOT_FOUND,
                format!("Not Found: piton serves MCP at {MCP_PATH}"),
            );
        }
        let (response, refused) = sessions::refused(self.mcp.handle(request)).await;
        if refused {
            let max = self.limits.max_sessions;
            tracing::warn!(
                "refused a new MCP session: {max} are open, the most --max-sessions {max} allows"
            );
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "Service Unavailable: {max} MCP sessions are open, the most piton allows \
                     (--max-sessions {max}). Close one (DELETE {MCP_PATH} with its \
                     Mcp-Session-Id) or wait for an idle one to end (--session-timeout \
                     {:?}), then initialize again.",
                    self.limits.session_timeout
                ),
            );
        }
        response
    }
}

fn text(status: StatusCode, message: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(message)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Which `Host` and `Origin` values name this server.
///
/// The port must be the bound one. The host must be the bound IP; for a loopback
/// address also `localhost`; for an unspecified one (`0.0.0.0`, `::`) any IP
/// literal or `localhost`. A DNS name is never accepted otherwise: rebinding
/// needs one, an IP literal cannot be rebound. A present `Origin` must be `http://`
/// such a host and port.
#[derive(Clone, Debug)]
pub struct HostCheck {
    bound: SocketAddr,
}

/// Whether an Origin's authority and a Host header name the same host and port.
fn same_place(origin: &http::uri::Authority, host: &str) -> bool {
    host.parse::<http::uri::Authority>().is_ok_and(|host| {
        host.host().eq_ignore_ascii_case(origin.host())
            && host.port_u16().unwrap_or(80) == origin.port_u16().unwrap_or(80)
    })
}

impl HostCheck {
    /// The check for a server listening on `bound`.
    pub fn new(bound: SocketAddr) -> Self {
        Self { bound }
    }

    /// `Ok` when the request names this server, else why not.
    pub fn check(&self, uri: &http::Uri, headers: &HeaderMap) -> Result<(), &'static str> {
        let host = headers
            .get(header::HOST)
            .ok_or("the request has no Host header")?;
        let host = host.to_str().map_err(|_| "the Host header is not text")?;
        if !self.allows("http", host) {
            return Err("the Host header does not name this server");
        }
        // An absolute-form request target names a host too; it must agree.
        if let Some(authority) = uri.authority()
            && !self.allows(uri.scheme_str().unwrap_or("http"), authority.as_str())
        {
            return Err("the request target does not name this server");
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin
                .to_str()
                .map_err(|_| "the Origin header is not text")?;
            let uri: http::Uri = origin
                .parse()
                .map_err(|_| "the Origin header is not a URL")?;
            // Bound to every interface, any IP literal names this server, so the
            // Origin must also be the very address the request was sent to.
            let from_here = uri.path_and_query().is_none_or(|p| p.as_str() == "/")
                && uri.authority().is_some_and(|authority| {
                    self.allows(uri.scheme_str().unwrap_or(""), authority.as_str())
                        && (!self.bound.ip().is_unspecified() || same_place(authority, host))
                });
            if !from_here {
                return Err("the Origin header is not this server");
            }
        }
        Ok(())
    }

    /// Whether `scheme://authority` names this server.
    fn allows(&self, scheme: &str, authority: &str) -> bool {
        if !scheme.eq_ignore_ascii_case("http") {
            return false;
        }
        let Ok(authority) = authority.parse::<http::uri::Authority>() else {
            return false;
        };
        if authority.as_str().contains('@') {
            return false;
        }
        if authority.port_u16().unwrap_or(80) != self.bound.port() {
            return false;
        }
        let host = authority.host();
        let bound = self.bound.ip();
        if host.eq_ignore_ascii_case("localhost") {
            return bound.is_loopback() || bound.is_unspecified();
        }
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        match literal.parse::<IpAddr>() {
            Ok(ip) => bound.is_unspecified() || ip == bound,
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bound: &str, host: Option<&str>, origin: Option<&str>) -> Result<(), &'static str> {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, host.parse().expect("a header value"));
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, origin.parse().expect("a header value"));
        }
        let uri: http::Uri = "/mcp".parse().expect("a URI");
        HostCheck::new(bound.parse().expect("an address")).check(&uri, &headers)
    }

    #[test]
    fn loopback_accepts_its_address_and_localhost_on_its_port_only() {
        let bound = "127.0.0.1:8080";
        for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080"] {
            assert_eq!(check(bound, Some(host), None), Ok(()), "{host}");
        }
        for host in [
            "127.0.0.1",
            "127.0.0.1:8081",
            "localhost",
            "evil.example:8080",
            "127.0.0.2:8080",
            "[::1]:8080",
            "user@127.0.0.1:8080",
            "localhost.:8080",
        ] {
            assert!(check(bound, Some(host), None).is_err(), "{host}");
        }
        assert!(check(bound, None, None).is_err(), "no Host");
    }

    #[test]
    fn ipv6_loopback_accepts_its_bracketed_address() {
        assert_eq!(check("[::1]:9000", Some("[::1]:9000"), None), Ok(()));
        assert_eq!(check("[::1]:9000", Some("localhost:9000"), None), Ok(()));
        assert!(check("[::1]:9000", Some("127.0.0.1:9000"), None).is_err());
    }

    #[test]
    fn port_80_may_be_left_out() {
        assert_eq!(check("127.0.0.1:80", Some("127.0.0.1"), None), Ok(()));
        assert_eq!(
            check("127.0.0.1:80", Some("localhost"), Some("http://localhost")),
            Ok(())
        );
    }

    #[test]
    fn a_present_origin_must_be_this_server_over_http() {
        let bound = "127.0.0.1:8080";
        let host = Some("127.0.0.1:8080");
        for origin in ["http://127.0.0.1:8080", "http://localhost:8080"] {
            assert_eq!(check(bound, host, Some(origin)), Ok(()), "{origin}");
        }
        for origin in [
            "http://evil.example:8080",
            "http://evil.example",
            "https://127.0.0.1:8080",
            "http://127.0.0.1:8081",
            "http://127.0.0.1",
            "null",
            "",
            "http://127.0.0.1:8080/page",
        ] {
            assert!(check(bound, host, Some(origin)).is_err(), "{origin}");
        }
    }

    #[test]
    fn a_non_loopback_address_accepts_only_itself() {
        let bound = "192.0.2.7:8080";
        assert_eq!(check(bound, Some("192.0.2.7:8080"), None), Ok(()));
        for host in ["localhost:8080", "127.0.0.1:8080", "myhost.lan:8080"] {
            assert!(check(bound, Some(host), None).is_err(), "{host}");
        }
    }

    #[test]
    fn every_interface_accepts_ip_literals_and_localhost_but_no_names() {
        let bound = "0.0.0.0:8080";
        for host in [
            "192.0.2.7:8080",
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
        ] {
            assert_eq!(check(bound, Some(host), None), Ok(()), "{host}");
        }
        for host in ["evil.example:8080", "192.0.2.7:8081"] {
            assert!(check(bound, Some(host), None).is_err(), "{host}");
        }
        // The Origin must be the address the request went to, not any IP literal.
        let host = Some("127.0.0.1:8080");
        assert_eq!(check(bound, host, Some("http://127.0.0.1:8080")), Ok(()));
        assert!(check(bound, host, Some("http://203.0.113.5:8080")).is_err());
        assert!(check(bound, host, Some("http://localhost:8080")).is_err());
    }

    #[test]
    fn an_absolute_request_target_must_name_this_server_too() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:8080".parse().expect("value"));
        let check = HostCheck::new("127.0.0.1:8080".parse().expect("an address"));
        let here: http::Uri = "http://127.0.0.1:8080/mcp".parse().expect("a URI");
        let there: http::Uri = "http://evil.example:8080/mcp".parse().expect("a URI");
        assert_eq!(check.check(&here, &headers), Ok(()));
        assert!(check.check(&there, &headers).is_err());
    }
}
