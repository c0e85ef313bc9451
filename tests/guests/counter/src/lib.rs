//! A guest with global state: a counter bumped on every call. In a fresh instance per
//! call it always answers 1.

use std::sync::atomic::{AtomicU32, Ordering};

use piton_guest_sdk::tool;

static CALLS: AtomicU32 = AtomicU32::new(0);

/// Count the calls this instance has seen.
#[tool(read_only, open_world = false)]
fn counter() -> u32 {
    CALLS.fetch_add(1, Ordering::Relaxed) + 1
}
