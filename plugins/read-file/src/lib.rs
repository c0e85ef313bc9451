//! Read a file's contents: with nothing granted the sandbox has no files, so every
//! call fails, which is the point of the example.
//!
//! Run with: `cargo run --release -- call read_file '{"path":"/etc/passwd"}'`
//! (exits 1: the tool cannot see the host's files).

use piton_guest_sdk::{ToolError, tool};

/// Read a file's contents as text.
///
/// Args:
///     path: The file's path inside the sandbox
#[tool(read_only, open_world = false)]
fn read_file(path: String) -> Result<String, ToolError> {
    std::fs::read_to_string(&path)
        .map_err(|e| ToolError::failed(format!("cannot read {path}: {e}")))
}
