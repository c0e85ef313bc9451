//! One MCP connection over a byte stream: rmcp's session on lean.rs's transport,
//! until the peer closes its input or a stop drains the calls in flight.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta as _, JsonRpcMessage, ProtocolVersion,
    ServerJsonRpcMessage,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncWrite};

use super::lean::{Lean, LeanTransport};
use crate::serve::served::Served;
use crate::serve::session::{ServeError, Session};

/// Serves `served` over one MCP connection until the peer closes `read`.
///
/// Once `initialize` has started the session, plain `tools/call` lines take the lean
/// path (lean.rs); every other message is rmcp's.
///
/// A connection that closes before or during the handshake is a clean end, like a
/// closed stdin: a client that probes and leaves is not a server failure.
pub async fn serve<R, W>(served: Arc<Served>, read: R, write: W) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    serve_lean(Lean::new(served), read, write, std::future::pending()).await
}

/// [`serve`], until the peer closes `read` or `stop` resolves. Then it takes no new
/// calls, lets those in flight answer for up to `grace` (those still running then
/// answer with an error; see [`Served::drain`]), writes the answers and returns.
pub async fn serve_until<R, W>(
    served: Arc<Served>,
    read: R,
    write: W,
    stop: impl Future<Output = ()>,
    grace: Duration,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let lean = Lean::new(served.clone());
    let drained = async move {
        stop.await;
        let drained = served.drain(grace).await;
        tracing::info!(
            in_flight = drained.in_flight,
            cut = drained.cut,
            "stopping: the calls in flight have answered"
        );
    };
    serve_lean(lean, read, write, drained).await
}

/// [`serve_until`], with the lean path's state given (tests read its count of
/// answers). Once `stop` resolves (the calls have been drained), rmcp's loop is
/// cancelled: it stops reading, writes what its handlers answered and closes.
pub(super) async fn serve_lean<R, W>(
    lean: Arc<Lean>,
    read: R,
    write: W,
    stop: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    tokio::pin!(stop);
    let session = Session::new(lean.served().clone());
    let transport = BeforeSession::new(LeanTransport::new(lean.clone(), read, write));
    let started = tokio::select! {
        started = session.serve(transport) => started,
        // No session yet, so no call in flight to wait for.
        () = &mut stop => return Ok(()),
    };
    let running = match started {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(ServeError(e.to_string())),
    };
    let info = running.peer().peer_info();
    lean.engage(
        info.as_deref().map(|info| &info.protocol_version),
        crate::serve::ask::can_elicit(info.as_deref().map(|info| &info.capabilities)),
    );
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = &mut stop => {
            cancel.cancel();
            waiting.await
        }
    };
    ended.map(drop).map_err(|e| ServeError(e.to_string()))
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
