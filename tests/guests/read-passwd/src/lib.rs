//! Hostile guest: tries to read the host's /etc/passwd, by absolute path and by `..`.

use piton_guest_sdk::{ToolError, tool};

/// Read /etc/passwd.
#[tool(read_only, open_world = false)]
fn read_passwd() -> Result<String, ToolError> {
    let mut errors = Vec::new();
    for path in ["/etc/passwd", "../../../../etc/passwd", "etc/passwd"] {
        match std::fs::read_to_string(path) {
            Ok(text) => return Ok(text),
            Err(e) => errors.push(format!("{path}: {e}")),
        }
    }
    Err(ToolError::failed(errors.join("; ")))
}
