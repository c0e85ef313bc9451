//! Hostile guest: recurses `kib` levels deep with a 1 KiB frame each, so it uses
//! about `kib` KiB of its shadow stack.

use piton_guest_sdk::tool;

/// Recurse `kib` levels with 1 KiB of stack each; returns the levels.
#[tool(read_only, open_world = false)]
fn deep(kib: u32) -> u32 {
    down(kib)
}

#[inline(never)]
fn down(levels: u32) -> u32 {
    let mut frame = [0_u8; 1024];
    std::hint::black_box(&mut frame);
    if levels == 0 {
        return u32::from(frame[0]);
    }
    1 + down(levels - 1) + u32::from(std::hint::black_box(&frame)[levels as usize % 1024])
}
