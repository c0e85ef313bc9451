//! Hostile guest: panics, which traps.

use piton_guest_sdk::tool;

/// Panic.
#[tool(read_only, open_world = false)]
fn panic() -> String {
    panic!("the guest panicked on purpose")
}
