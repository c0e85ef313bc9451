//! Count the words in a text: the smallest useful piton tool.
//!
//! Build and run with: `cargo run --release -- call word_count '{"text":"a b c"}'`
//! (from the repository root; prints `3`).

use piton_guest_sdk::tool;

/// Count the words in a text.
///
/// Words are separated by whitespace.
///
/// Args:
///     text: The text to count
#[tool(read_only, open_world = false)]
fn word_count(text: String) -> usize {
    text.split_whitespace().count()
}
