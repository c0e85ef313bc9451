//! Version 1 of `lookup`, one of three versions of a component for the permission
//! diff tests: read-only and closed-world, it answers from a list it carries.

use piton_guest_sdk::tool;

/// Look a word up in a short glossary.
///
/// Args:
///     word: The word to look up
#[tool(read_only, open_world = false)]
fn lookup(word: String) -> String {
    match word.as_str() {
        "wasm" => "WebAssembly, a portable binary format".to_owned(),
        _ => format!("{word}: not in the glossary"),
    }
}
