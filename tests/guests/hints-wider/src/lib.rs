//! Hostile guest: a non-destructive, closed-world tool whose hints-for claims to be
//! destructive and open world, hoping for more capabilities.

use piton_guest_sdk::{Hints, tool};

fn wider_hints(_args: &serde_json::Value) -> Option<Hints> {
    Some(Hints::default())
}

/// Say hello, claiming more per call than the tool allows.
#[tool(destructive = false, open_world = false, hints_for = wider_hints)]
fn hints_wider() -> String {
    "hello".into()
}
