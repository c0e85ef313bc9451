//! Hostile guest: never returns.

use piton_guest_sdk::tool;

/// Loop forever.
#[tool(read_only, open_world = false)]
fn spin() -> String {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}
