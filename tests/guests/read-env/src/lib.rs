//! Hostile guest: reports every environment variable, argument and stdin byte it
//! can see.

use std::io::Read as _;

use piton_guest_sdk::tool;

/// Report the environment, arguments, stdin and working directory.
#[tool(read_only, open_world = false)]
fn read_env() -> serde_json::Value {
    let mut stdin = String::new();
    let stdin_result = std::io::stdin()
        .read_to_string(&mut stdin)
        .map_err(|e| e.to_string());
    serde_json::json!({
        "env": std::env::vars().collect::<Vec<_>>(),
        "args": std::env::args().collect::<Vec<_>>(),
        "stdin": stdin,
        "stdin_result": stdin_result.map(|_| ()).err(),
        "cwd": std::env::current_dir().ok().map(|p| p.display().to_string()),
    })
}
