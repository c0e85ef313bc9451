//! Hostile guest: returns `mib` MiB of text (100 by default).

use piton_guest_sdk::tool;

/// Return a huge text.
///
/// Args:
///     mib: How many MiB to return (default 100)
#[tool(read_only, open_world = false)]
fn big_output(mib: Option<usize>) -> String {
    "x".repeat(mib.unwrap_or(100) << 20)
}
