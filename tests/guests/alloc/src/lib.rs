//! Hostile guest: allocates and touches 1 GiB.

use piton_guest_sdk::tool;

/// Allocate 1 GiB.
#[tool(read_only, open_world = false)]
fn alloc() -> usize {
    let big = vec![1u8; 1 << 30];
    std::hint::black_box(&big).len()
}
