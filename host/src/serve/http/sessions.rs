//! `serve --http`'s MCP sessions: rmcp's in-memory ones, at most so many at once and
//! so many for each client, each ending after so long without a message.
//!
//! A session past a limit is refused in [`SessionManager::create_session`]; rmcp
//! answers that with a bare 500, so the refusal is also noted in a task-local that
//! `serve_http` turns into an answer that says what to do ([`refused`]). The same
//! task-local tells `create_session` which client asks.

use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

use super::per_client::{Client, Held, Shares};

/// Why a new session was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// `--max-sessions` sessions are open.
    Full(usize),
    /// This client holds `--max-sessions-per-client` sessions.
    ClientFull(Client, usize),
}

/// The request being handled: who sent it, and whether its new session was refused.
struct Asking {
    client: Client,
    refused: Cell<Option<Refusal>>,
}

tokio::task_local! {
    static ASKING: Asking;
}

/// Runs `handle` (one HTTP request of `client`) and says whether it asked for a
/// session past a limit, and which.
pub(super) async fn refused<T>(
    client: Client,
    handle: impl Future<Output = T>,
) -> (T, Option<Refusal>) {
    let asking = Asking {
        client,
        refused: Cell::new(None),
    };
    ASKING
        .scope(asking, async {
            let output = handle.await;
            (output, ASKING.with(|asking| asking.refused.get()))
        })
        .await
}

/// Notes `refusal` for the request being handled, if it is one of [`refused`]'s.
fn note(refusal: Refusal) {
    let _ = ASKING.try_with(|asking| asking.refused.set(Some(refusal)));
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionsError {
    /// As many sessions as allowed are open.
    #[error("{0} MCP sessions are open, the most --max-sessions allows")]
    Full(usize),
    /// The client holds as many sessions as one client may.
    #[error("{0} holds {1} MCP sessions, the most --max-sessions-per-client allows")]
    ClientFull(Client, usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's [`LocalSessionManager`], holding at most `max` sessions, and at most
/// `shares.max()` of one client.
#[derive(Debug)]
pub(super) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    shares: Arc<Shares>,
    /// The client's share each session holds. A session that ended (idle, closed,
    /// its transport gone) leaves `inner`'s map on its own; its share here is given
    /// back at the next `create_session` or `close_session`.
    held: Mutex<HashMap<SessionId, Held>>,
    /// Held while a session is counted and made, so two cannot take the last place.
    creating: tokio::sync::Mutex<()>,
}

impl BoundedSessions {
    /// At most `max` sessions and `per_client` of one client, each closed after
    /// `idle` without a message.
    pub(super) fn new(max: usize, per_client: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        Self {
            inner,
            max,
            shares: Shares::new(per_client),
            held: Mutex::default(),
            creating: tokio::sync::Mutex::new(()),
        }
    }

    /// The shares held, less those of sessions that ended; how many sessions are open.
    async fn forget_ended(&self) -> usize {
        let open = self.inner.sessions.read().await;
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|id, _| open.contains_key(id));
        open.len()
    }

    /// How many sessions are open.
    #[cfg(test)]
    async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        // Closed sessions (DELETE, idle, ended) leave this map.
        if self.forget_ended().await >= self.max {
            note(Refusal::Full(self.max));
            return Err(SessionsError::Full(self.max));
        }
        // A request not made through `refused` (none is) would count for no client.
        let share = match ASKING.try_with(|asking| asking.client) {
            Ok(client) => match self.shares.take(client) {
                Some(share) => Some(share),
                None => {
                    let max = self.shares.max();
                    note(Refusal::ClientFull(client, max));
                    return Err(SessionsError::ClientFull(client, max));
                }
            },
            Err(_) => None,
        };
        let (id, transport) = self.inner.create_session().await?;
        if let Some(share) = share {
            self.held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.clone(), share);
        }
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    // `restore_session` keeps the default (not supported): there is no session store,
    // and a restore would make a session past the limit.
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(n: u8) -> Client {
        Client::of(std::net::IpAddr::from([127, 0, 0, n]))
    }

    /// `sessions.create_session()` as asked by `client`: whether it was made, and the
    /// refusal noted.
    async fn create(
        sessions: &BoundedSessions,
        client: Client,
    ) -> (Option<SessionId>, Option<Refusal>) {
        let (made, refusal) = refused(client, sessions.create_session()).await;
        (made.ok().map(|(id, _)| id), refusal)
    }

    #[tokio::test]
    async fn past_the_limit_a_session_is_refused_and_noted_until_one_closes() {
        let sessions = BoundedSessions::new(2, 2, Duration::from_secs(60));
        let (first, _) = create(&sessions, client(2)).await;
        let (second, _) = create(&sessions, client(3)).await;
        assert!(first.is_some() && second.is_some());
        let (third, refusal) = create(&sessions, client(4)).await;
        assert_eq!((third, refusal), (None, Some(Refusal::Full(2))));
        assert_eq!(sessions.open().await, 2);

        sessions
            .close_session(&first.expect("made"))
            .await
            .expect("closed");
        let (again, refusal) = create(&sessions, client(4)).await;
        assert!(again.is_some());
        assert_eq!(refusal, None);
    }

    #[tokio::test]
    async fn past_its_share_a_client_is_refused_while_others_get_sessions() {
        let sessions = BoundedSessions::new(10, 2, Duration::from_secs(60));
        let (a, b) = (client(2), client(3));
        let (first, _) = create(&sessions, a).await;
        let (_second, _) = create(&sessions, a).await;
        let (third, refusal) = create(&sessions, a).await;
        assert_eq!((third, refusal), (None, Some(Refusal::ClientFull(a, 2))));
        let (other, refusal) = create(&sessions, b).await;
        assert!(other.is_some() && refusal.is_none());

        // Closing one gives its place back to the client.
        sessions
            .close_session(&first.expect("made"))
            .await
            .expect("closed");
        let (again, refusal) = create(&sessions, a).await;
        assert!(again.is_some() && refusal.is_none());
        // A session that ended without a close gives it back too.
        let ended = again.expect("made");
        sessions.inner.sessions.write().await.remove(&ended);
        let (after, refusal) = create(&sessions, a).await;
        assert!(after.is_some() && refusal.is_none());
    }
}
