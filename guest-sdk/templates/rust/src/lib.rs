//! The `__NAME__` piton tool. Build it with `piton build` (or
//! `cargo build --release --target wasm32-wasip2`) and drop the `.wasm` into a
//! plugins folder; test it with `cargo test`.

use piton_guest_sdk::{ToolError, tool};

/// Count the words in a text.
///
/// Words are separated by whitespace.
///
/// Args:
///     text: The text to count
#[tool(read_only, open_world = false)]
fn __NAME__(text: String) -> Result<usize, ToolError> {
    if text.len() > 1 << 20 {
        return Err(ToolError::input("text is over 1 MiB: send a shorter one"));
    }
    Ok(text.split_whitespace().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        assert_eq!(__NAME__("one two  three".to_owned()).ok(), Some(3));
    }

    #[test]
    fn refuses_a_huge_text() {
        assert!(__NAME__("a ".repeat(1 << 20)).is_err());
    }
}
