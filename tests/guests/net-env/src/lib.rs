//! Hostile guest: an open-world tool, granted a host with a secret header, that looks
//! for the secret (or anything else of piton's) in its environment and arguments.

use piton_guest_sdk::serde_json::{Value, json};
use piton_guest_sdk::tool;

/// Report the environment and arguments.
#[tool(read_only, open_world = true)]
fn net_env() -> Value {
    json!({
        "env": std::env::vars().collect::<Vec<_>>(),
        "args": std::env::args().collect::<Vec<_>>(),
    })
}
