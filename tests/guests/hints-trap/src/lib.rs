//! Hostile guest: its hints-for panics.

use piton_guest_sdk::{Hints, tool};

fn trap_hints(_args: &serde_json::Value) -> Option<Hints> {
    panic!("hints-for panicked on purpose")
}

/// Say hello, after a hints-for that traps.
#[tool(hints_for = trap_hints)]
fn hints_trap() -> String {
    "unreachable: hints-for traps first".into()
}
