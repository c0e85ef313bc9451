//! The example of the crate docs, called as the host calls it.

use piton_guest_sdk::{Content, Hints, Tool, ToolError, tool};
use serde_json::json;

/// Count the words in a text.
///
/// Args:
///     text: The text to count
#[tool(read_only, open_world = false)]
fn word_count(text: String) -> usize {
    text.split_whitespace().count()
}

#[test]
fn the_function_stays_callable() {
    assert_eq!(word_count("one two".to_owned()), 2);
}

#[test]
fn spec() {
    let spec = WordCountTool::spec();
    assert_eq!(spec.name, "word_count");
    assert_eq!(spec.description, "Count the words in a text.");
    assert!(spec.parallel);
    assert_eq!(
        spec.input_schema,
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text to count"},
            },
            "required": ["text"],
        })
    );
}

#[test]
fn hints() {
    assert_eq!(WordCountTool::hints(), Hints::read_only().open_world(false));
    assert_eq!(WordCountTool::hints_for(r#"{"text": "x"}"#), None);
}

#[test]
fn run() {
    assert_eq!(
        WordCountTool::run(r#"{"text": "a b c"}"#),
        Ok(vec![Content::Json("3".to_owned())])
    );
}

#[test]
fn bad_arguments_are_input_errors_naming_the_field() {
    assert_eq!(
        WordCountTool::run(r#"{"text": 3}"#),
        Err(ToolError::Input(
            "text: invalid type: integer `3`, expected a string".to_owned()
        ))
    );
    assert_eq!(
        WordCountTool::run("{}"),
        Err(ToolError::Input("missing field `text`".to_owned()))
    );
}
