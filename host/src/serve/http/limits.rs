//! What `serve --http` allows each client at most: connections, sessions, and the
//! time a request's head, its body, an idle connection and a quiet session may take.

use std::time::Duration;

/// What `serve --http` holds open for its clients, at most: a slow or idle client is
/// let go, and too many of them wait or are refused, so they cannot starve the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Connections open at once (at least 1). Past it, new ones are not accepted
    /// (they wait in the listen backlog) until one closes.
    pub max_connections: usize,
    /// Connections one client (one IPv4 address, or one IPv6 /64) holds at once.
    /// Past it, its new ones are answered 429 and closed; other clients still get in.
    pub max_connections_per_client: usize,
    /// MCP sessions open at once. Past it, `initialize` gets 503 until a session is
    /// closed or expires; 2026-07-28 requests need no session and are not counted.
    pub max_sessions: usize,
    /// MCP sessions one client holds at once. Past it, its `initialize` gets 429.
    pub max_sessions_per_client: usize,
    /// How long a request's head may take, from its first byte or from connecting.
    pub header_timeout: Duration,
    /// How long a request's body may take, from the end of its head.
    pub body_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// How long an MCP session may go without a message before it ends.
    pub session_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            max_connections_per_client: per_client(512),
            max_sessions: 256,
            max_sessions_per_client: per_client(256),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            session_timeout: Duration::from_secs(300),
        }
    }
}

/// A client's share of `max` when none is given: a quarter of it (at least 1), so that
/// at least four clients get in whatever one of them does.
pub fn per_client(max: usize) -> usize {
    (max / 4).max(1)
}
