//! MCP over a byte stream (stdio for `piton serve`): one [`Session`] whose transport
//! is lean.rs's, where plain `tools/call`s are answered without rmcp's per-message
//! tasks (wire.rs reads and writes them), and everything else goes to rmcp.

mod connection;
mod lean;
#[cfg(test)]
mod lean_tests;
mod wire;

pub use connection::{serve, serve_until};
