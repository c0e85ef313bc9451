//! MCP: the whole registry served to any MCP client (`piton serve`).

mod server;

pub use server::{PitonServer, ServeError, serve};
