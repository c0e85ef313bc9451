//! Hostile guest: reports every environment variable, argument and stdin byte it
//! can see; with `fail`, as its error message (which the audit log must not repeat
//! a granted secret from).

use std::io::Read as _;

use piton_guest_sdk::{ToolError, tool};

/// Report the environment, arguments, stdin and working directory; as an error
/// with `fail`.
#[tool(read_only, open_world = false)]
fn read_env(fail: Option<bool>) -> Result<serde_json::Value, ToolError> {
    let mut stdin = String::new();
    let stdin_result = std::io::stdin()
        .read_to_string(&mut stdin)
        .map_err(|e| e.to_string());
    let seen = serde_json::json!({
        "env": std::env::vars().collect::<Vec<_>>(),
        "args": std::env::args().collect::<Vec<_>>(),
        "stdin": stdin,
        "stdin_result": stdin_result.map(|_| ()).err(),
        "cwd": std::env::current_dir().ok().map(|p| p.display().to_string()),
    });
    if fail == Some(true) {
        return Err(ToolError::failed(format!("what I saw: {seen}")));
    }
    Ok(seen)
}
