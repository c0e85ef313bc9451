//! The server loop of `serve --http` (see the module above): accepting within the
//! connection limits, each connection's deadlines, the Host/Origin check, the probes,
//! then the lean path or rmcp for `/mcp`, and the stop.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::body::{Body, MAX_BODY};
use super::deadline::{Phases, RequestBody, ResponseBody, Tally, TrackedIo};
use super::ends_with_answer::EndsWithAnswer;
use super::host_check::{AllowedHost, HostCheck};
use super::lean::Lean;
use super::limits::HttpLimits;
use super::per_client::{Client, Shares};
use super::sessions::{BoundedSessions, Refusal};
use crate::serve::served::Served;
use crate::serve::session::{ServeError, Session};
use crate::serve::stop::{Count, FLUSH};

/// The path MCP is served at; every other path is 404.
pub const MCP_PATH: &str = "/mcp";

/// The most a connection buffers of a request head (hyper answers a larger one with
/// 431 and closes): hyper's default, ~400 KiB, across `--max-connections` connections
/// would let stalled clients hold hundreds of MiB.
const MAX_HEAD: usize = 64 << 10;

/// How often, at most, the log says that the connection limit is reached.
const LIMIT_LOG_EVERY: Duration = Duration::from_secs(60);

/// Connections past their client's share being answered 429 at once; past it they
/// are closed without an answer. Not counted in `--max-connections`: a client over
/// its share cannot take the places of others by being refused.
const REFUSING_AT_ONCE: usize = 64;

/// How long, at most, a refused connection is kept to read its request and answer it.
const REFUSAL_LINGER: Duration = Duration::from_secs(5);

/// Serves `served` over Streamable HTTP on `listener` within `limits`, answering
/// requests that name it by its address or by one of `allowed_hosts`, until
/// `shutdown` resolves, then stops accepting, lets the requests in flight finish for
/// up to `grace` (calls still running then answer with an error), writes their
/// answers and ends the sessions.
pub async fn serve_http(
    served: Arc<Served>,
    listener: TcpListener,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    allowed_hosts: Vec<AllowedHost>,
) -> Result<(), ServeError> {
    let lean = Arc::default();
    serve(
        served,
        listener,
        limits,
        shutdown,
        grace,
        allowed_hosts,
        lean,
    )
    .await
}

/// [`serve_http`], its lean path's count given (tests read it).
pub(super) async fn serve(
    served: Arc<Served>,
    listener: TcpListener,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    allowed_hosts: Vec<AllowedHost>,
    lean: Arc<Lean>,
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
        {
            let served = served.clone();
            move || Ok(Session::new(served.clone()))
        },
        Arc::new(BoundedSessions::new(
            limits.max_sessions,
            limits.max_sessions_per_client,
            limits.session_timeout,
        )),
        config,
    );
    let app = Arc::new(App {
        check: HostCheck::new(bound).allowing(allowed_hosts),
        mcp,
        limits,
        served: probed,
        posts: Arc::default(),
        lean,
    });
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    // One permit per open connection. At the limit nothing is accepted: new
    // connections wait in the kernel's listen backlog and are served once a slot
    // frees (the deadlines see that one does), rather than being accepted and closed.
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    let shares = Shares::new(limits.max_connections_per_client);
    let refusing = Arc::new(Semaphore::new(REFUSING_AT_ONCE));
    let linger = limits.header_timeout.min(REFUSAL_LINGER);
    let mut logged_full: Option<tokio::time::Instant> = None;
    let mut logged_client_full: Option<tokio::time::Instant> = None;
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
                let client = Client::of(peer.ip());
                let Some(share) = shares.take(client) else {
                    drop(slot);
                    let max = shares.max();
                    if logged_client_full.is_none_or(|at| at.elapsed() >= LIMIT_LOG_EVERY) {
                        logged_client_full = Some(tokio::time::Instant::now());
                        tracing::warn!(
                            "refused a connection of {client}: it has {max} open, the most \
                             --max-connections-per-client {max} allows (said once a minute)"
                        );
                    }
                    if let Ok(refusing) = refusing.clone().try_acquire_owned() {
                        connections.spawn(async move {
                            super::per_client::refuse(stream, client, max, linger).await;
                            drop(refusing);
                        });
                    }
                    continue;
                };
                let connection = connection(app.clone(), stream, peer, stopping.clone());
                connections.spawn(async move {
                    connection.await;
                    // Freed only once the connection is closed; the client's share
                    // first, so that a connection accepted in the place freed sees it.
                    drop(share);
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
    served.calls().stop_taking();
    // From here `served.stopping()` is true: `/readyz` answers 503.
    let _ = stop.send(true);
    let in_flight = app.posts.now();
    tracing::info!(
        in_flight,
        "stopping: no new connections or calls; waiting up to {grace:?} for the requests in flight"
    );
    if tokio::time::timeout(grace, app.posts.none()).await.is_err() {
        let cut = served.cut(grace).await;
        tracing::warn!(
            cut,
            "stopping: calls still running after {grace:?} were answered with an error"
        );
        if tokio::time::timeout(FLUSH, app.posts.none()).await.is_err() {
            tracing::warn!(
                open = app.posts.now(),
                "stopping: requests still unanswered after {FLUSH:?} more are cut"
            );
        }
    }
    // Every answer is out: end the sessions and their event streams.
    sessions_end.cancel();
    let drained = tokio::time::timeout(FLUSH, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::info!(
            open = connections.len(),
            "closing connections still open after {FLUSH:?}"
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
    let client = Client::of(peer.ip());
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
            // A POST (a call, among others) counts until its answer is sent: a stop
            // waits for it. A GET's event stream is not waited for.
            let in_flight = post.then(|| app.posts.enter());
            let mut request = request.map(|body| RequestBody::new(body, phases.clone()));
            // Who sent it, for the MCP handler (a stateless request's allowances).
            request.extensions_mut().insert(client);
            async move {
                let response = app.handle(client, request).await;
                // A stream (rmcp's), not a whole event of known length (the lean path's).
                let events = hyper::body::Body::size_hint(response.body())
                    .exact()
                    .is_none()
                    && response
                        .headers()
                        .get(header::CONTENT_TYPE)
                        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
                Ok::<_, Infallible>(response.map(|body| {
                    ResponseBody::new(EndsWithAnswer::new(body, post && events), phases)
                        .holding(in_flight)
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

struct App {
    check: HostCheck,
    mcp: StreamableHttpService<Session, BoundedSessions>,
    limits: HttpLimits,
    served: Arc<Served>,
    /// POST requests whose answer is not yet sent.
    posts: Arc<Count>,
    /// Answers stateless `tools/call` and `tools/list` without rmcp.
    lean: Arc<Lean>,
}

impl App {
    async fn handle(
        &self,
        client: Client,
        request: Request<RequestBody<Incoming>>,
    ) -> Response<Body> {
        if let Err(why) = self.check.check(request.uri(), request.headers()) {
            tracing::warn!(why, "refused a request (possible DNS rebinding)");
            return text(StatusCode::FORBIDDEN, format!("Forbidden: {why}"));
        }
        if let Some(probe) =
            super::probes::answer(request.method(), request.uri().path(), &self.served)
        {
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
        if let Some(kind) = super::lean::Kind::of(&request) {
            let (parts, body) = request.into_parts();
            let body = match super::lean::read_body(body).await {
                Ok(body) => body,
                Err(refused) => return refused,
            };
            if let Some(parsed) = kind.parse(&body) {
                return self
                    .lean
                    .answer(&self.served, client, &parts.headers, parsed)
                    .await;
            }
            // rmcp judges it, from the body as read.
            return self
                .mcp(client, Request::from_parts(parts, Full::new(body)))
                .await;
        }
        self.mcp(client, request).await
    }

    /// rmcp's answer to `request` of `client`, with the session limits' own refusals.
    async fn mcp<B>(&self, client: Client, request: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let (response, refusal) = super::sessions::refused(client, self.mcp.handle(request)).await;
        match refusal {
            None => response,
            Some(Refusal::Full(max)) => self.sessions_full(max),
            Some(Refusal::ClientFull(client, max)) => self.client_sessions_full(client, max),
        }
    }

    /// The answer to an `initialize` past `--max-sessions`.
    fn sessions_full(&self, max: usize) -> Response<Body> {
        tracing::warn!(
            "refused a new MCP session: {max} are open, the most --max-sessions {max} allows"
        );
        text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "Service Unavailable: {max} MCP sessions are open, the most piton allows \
                 (--max-sessions {max}). Close one (DELETE {MCP_PATH} with its \
                 Mcp-Session-Id) or wait for an idle one to end (--session-timeout \
                 {:?}), then initialize again.",
                self.limits.session_timeout
            ),
        )
    }

    /// The answer to an `initialize` of `client` past `--max-sessions-per-client`.
    fn client_sessions_full(&self, client: Client, max: usize) -> Response<Body> {
        tracing::warn!(
            "refused a new MCP session of {client}: it has {max} open, the most \
             --max-sessions-per-client {max} allows"
        );
        text(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "Too Many Requests: this client ({client}) has {max} MCP sessions open, the \
                 most one client may have (--max-sessions-per-client {max}). Close one \
                 (DELETE {MCP_PATH} with its Mcp-Session-Id) or wait for an idle one to end \
                 (--session-timeout {:?}), then initialize again.",
                self.limits.session_timeout
            ),
        )
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
