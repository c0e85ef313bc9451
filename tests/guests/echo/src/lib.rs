//! `echo`: the message back with `Echo: ` before it, as the `echo` tool of
//! `@modelcontextprotocol/server-everything` answers, so the mcp bench can serve the
//! same tool from piton (a fresh sandbox a call) and from a native Node.js server.

use piton_guest_sdk::tool;

/// Echoes back the input.
///
/// Args:
///     message: Message to echo
#[tool(read_only, open_world = false)]
fn echo(message: String) -> String {
    format!("Echo: {message}")
}
