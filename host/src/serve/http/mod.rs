//! `piton serve --http ADDR`: the served registry over MCP's Streamable HTTP at
//! `/mcp`, one `Session` per session (rmcp's `StreamableHttpService`), on
//! hyper; and beside it `/healthz`, `/readyz` and `/metrics` (see `probes`).
//!
//! DNS-rebinding protection: a request whose `Host` (or a present `Origin`) does not
//! name this server (see `HostCheck`) gets 403 before anything else looks at it.
//! rmcp's own Host/Origin lists are turned off in favour of it: they cannot express
//! the rule for a server bound to every interface (any IP literal, no names), and one
//! check is easier to trust than two.
//!
//! Clients cannot hold it open (`HttpLimits`): a request's head and body must
//! arrive in time and an idle connection is closed (see `deadline`), connections past
//! the limit wait in the listen backlog, sessions past the limit are refused with 503
//! (see `sessions`), and a request body is at most [`MAX_BODY`]. Nor can one client
//! take every place: past its share (see `per_client`) its new connections and
//! sessions are refused with 429, and other clients still get in.
//!
//! Stopping (`shutdown` resolves): the listener is closed, so new connections are
//! refused; new calls are refused with an error; kept-alive connections close once
//! their current answer is sent; requests in flight get the grace to finish, then the
//! calls still running answer with an error (see `stop`); once every answer is
//! written the sessions end and the server returns.

mod body;
mod deadline;
mod ends_with_answer;
pub(super) mod host_check;
mod lean;
#[cfg(test)]
mod lean_guard_tests;
#[cfg(test)]
mod lean_tests;
pub(super) mod limits;
pub(super) mod per_client;
pub(super) mod probes;
mod server;
mod sessions;

pub use self::body::MAX_BODY;
pub use self::server::{MCP_PATH, serve_http};
