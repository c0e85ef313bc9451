//! `serve --http`'s MCP sessions: rmcp's in-memory ones, at most so many at once,
//! each ending after so long without a message.
//!
//! A session past the limit is refused in [`SessionManager::create_session`]; rmcp
//! answers that with a bare 500, so the refusal is also noted in a task-local that
//! `serve_http` turns into a 503 that says what to do ([`refused`]).

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

tokio::task_local! {
    /// Set when this request's new session was refused for the limit.
    static REFUSED: Cell<bool>;
}

/// Runs `handle` (one HTTP request) and says whether it asked for a session past
/// the limit.
pub(super) async fn refused<T>(handle: impl Future<Output = T>) -> (T, bool) {
    REFUSED
        .scope(Cell::new(false), async {
            let output = handle.await;
            (output, REFUSED.with(Cell::get))
        })
        .await
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionsError {
    /// As many sessions as allowed are open.
    #[error("{0} MCP sessions are open, the most --max-sessions allows")]
    Full(usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's [`LocalSessionManager`], holding at most `max` sessions.
#[derive(Debug)]
pub(super) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    /// Held while a session is counted and made, so two cannot take the last place.
    creating: tokio::sync::Mutex<()>,
}

impl BoundedSessions {
    /// At most `max` sessions, each closed after `idle` without a message.
    pub(super) fn new(max: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        Self {
            inner,
            max,
            creating: tokio::sync::Mutex::new(()),
        }
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
        if self.inner.sessions.read().await.len() >= self.max {
            let _ = REFUSED.try_with(|refused| refused.set(true));
            return Err(SessionsError::Full(self.max));
        }
        Ok(self.inner.create_session().await?)
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
        Ok(self.inner.close_session(id).await?)
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

    #[tokio::test]
    async fn past_the_limit_a_session_is_refused_and_noted_until_one_closes() {
        let sessions = BoundedSessions::new(2, Duration::from_secs(60));
        let (first, _) = sessions.create_session().await.expect("first");
        let (_second, _) = sessions.create_session().await.expect("second");
        let (third, was_refused) = refused(sessions.create_session()).await;
        assert!(
            matches!(third, Err(SessionsError::Full(2))),
            "{:?}",
            third.map(|(id, _)| id)
        );
        assert!(was_refused);
        assert_eq!(sessions.open().await, 2);

        sessions.close_session(&first).await.expect("closed");
        let (again, was_refused) = refused(sessions.create_session()).await;
        assert!(again.is_ok(), "{:?}", again.err());
        assert!(!was_refused);
    }
}
