//! The upstream side of MCP: other MCP servers whose tools join the registry (the
//! seed's `MCP` and `MCPTool`), configured by `[mcp.NAME]` sections of piton.toml.
//!
//! An [`UpstreamServer`] connects on first use (a child process over stdio, Streamable
//! HTTP, or a server in this process); its tools join as `{server}__{tool}` with the
//! hints their annotations declare. A question the server asks during a call of
//! one of its tools is passed on to the person who made the call (relay.rs), and so
//! is a 2026-07-28 server's `input_required` (rounds.rs).

mod connection;
mod convert;
mod handler;
mod relay;
mod rounds;
mod server;
mod stderr;
#[cfg(test)]
mod testing;
mod tool;

pub use crate::config::mcp::{StdioCommand, UpstreamConfig, UpstreamConnect, UpstreamProtocol};
pub use connection::SAFE_ENV;
pub use server::{UpstreamError, UpstreamServer, check_server_name};
pub use tool::UpstreamTool;
