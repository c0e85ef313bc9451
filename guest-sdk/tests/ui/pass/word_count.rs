use piton_guest_sdk::{Content, Tool, tool};

/// Count the words in a text.
///
/// Args:
///     text: The text to count
#[tool(read_only, open_world = false)]
fn word_count(text: String) -> usize {
    text.split_whitespace().count()
}

fn main() {
    assert_eq!(word_count("a b".to_owned()), 2);
    let out = WordCountTool::run(r#"{"text": "a b c"}"#);
    assert_eq!(out, Ok(vec![Content::Json("3".to_owned())]));
}
