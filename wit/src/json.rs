//! The arguments of a call are a JSON object (`run` and `hints-for` take its text):
//! what the host and a guest tell the model when they are something else.

use serde_json::Value;

/// The kind of a JSON value as a message names it: `null`, `a boolean`, `a number`,
/// `a string`, `an array` or `an object`.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What the model is told when a call's arguments are `args`, not a JSON object:
/// `the arguments must be a JSON object, not an array`.
pub fn not_an_object(args: &Value) -> String {
    format!(
        "the arguments must be a JSON object, not {}",
        json_kind(args)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_read_as_words() {
        let kinds = [
            (json!(null), "null"),
            (json!(true), "a boolean"),
            (json!(1.5), "a number"),
            (json!("s"), "a string"),
            (json!([1]), "an array"),
            (json!({}), "an object"),
        ];
        for (value, kind) in kinds {
            assert_eq!(json_kind(&value), kind);
        }
        assert_eq!(
            not_an_object(&json!([])),
            "the arguments must be a JSON object, not an array"
        );
    }
}
