//! The serving side of MCP: the whole registry offered to any MCP client (`piton
//! serve`), over stdio or Streamable HTTP, following changes of the tool set.
//!
//! [`Server`] is the whole of `piton serve` for a Rust program: load, serve over a
//! [`Transport`], reload on change, stop on a [`StopHandle`] (or, if asked, a
//! signal) without cutting calls short. Below it, [`Served`] holds the registry being
//! served; a [`Session`] is one session on it; [`serve`] runs one over a byte stream
//! (stdio) and [`serve_http`] runs the HTTP endpoint with its connection, session and
//! time limits. Both stop without cutting calls short (stop.rs).

mod answer;
mod ask;
mod http;
mod reply;
mod rounds;
mod served;
mod server;
mod session;
mod signal;
mod stateless;
mod stdio;
mod stop;
#[cfg(test)]
mod test_tools;
mod traced;

pub use http::host_check::{AllowedHost, HostCheck};
pub use http::limits::{HttpLimits, per_client};
pub use http::probes::{HEALTH_PATH, METRICS_PATH, READY_PATH};
pub use http::{MAX_BODY, MCP_PATH, serve_http};
pub use served::Served;
pub use server::{Server, ServerError, Started, StopHandle, Transport};
pub use session::{ServeError, Session};
pub use signal::{Signal, next_signal};
pub use stdio::{serve, serve_until};
pub use stop::{DEFAULT_GRACE, Drained, FLUSH as SHUTDOWN_FLUSH};
