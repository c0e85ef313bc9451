//! Version 3 of `lookup`, one of three versions of a component for the permission
//! diff tests: version 1 with one more argument, so its input schema alone changes.

use piton_guest_sdk::tool;

/// Look a word up in a short glossary.
///
/// Args:
///     word: The word to look up
///     lang: The language of the answer (only "en")
#[tool(read_only, open_world = false)]
fn lookup(word: String, lang: Option<String>) -> String {
    match (word.as_str(), lang.as_deref()) {
        ("wasm", None | Some("en")) => "WebAssembly, a portable binary format".to_owned(),
        _ => format!("{word}: not in the glossary"),
    }
}
