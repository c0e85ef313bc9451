//! MCP: the whole registry served to any MCP client (`piton serve`, over stdio or
//! Streamable HTTP), following changes of the tool set.

mod client;
pub(crate) mod config;
mod deadline;
mod http;
mod server;
mod sessions;
mod stderr;
mod tool;
mod upstream;
mod watch;

pub use client::{McpServer, McpServerError, SAFE_ENV, StdioCommand, check_server_name};
pub use http::{HostCheck, HttpLimits, MAX_BODY, MCP_PATH, serve_http};
pub use server::{PitonServer, ServeError, serve};
pub use tool::McpTool;
pub use watch::{FolderWatch, Served, Watched};
