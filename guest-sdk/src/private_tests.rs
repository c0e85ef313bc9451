use std::collections::BTreeMap;

use serde_json::json;

use super::{Wrap, hints_for, input_schema, parse_args};
use crate::{Content, Hints, Image, ToolError};

/// What `#[tool]` generates for a return value.
macro_rules! contents {
    ($value:expr) => {{
        #[allow(unused_imports)]
        use super::{ViaDirect as _, ViaJson as _};
        (&&Wrap::new($value)).__piton_contents("test_tool")
    }};
}

fn json(text: &str) -> Vec<Content> {
    vec![Content::Json(text.to_owned())]
}

#[test]
fn text_stays_text() {
    assert_eq!(contents!(String::from("hi")), vec![Content::text("hi")]);
    assert_eq!(contents!("hi"), vec![Content::text("hi")]);
    assert_eq!(
        contents!(std::borrow::Cow::Borrowed("hi")),
        vec![Content::text("hi")]
    );
}

#[test]
fn unit_is_no_content() {
    assert_eq!(contents!(()), Vec::<Content>::new());
}

#[test]
fn images_and_contents_pass_as_they_are() {
    let png = Image::png(vec![1, 2, 3]);
    assert_eq!(contents!(png.clone()), vec![Content::Image(png.clone())]);
    assert_eq!(
        contents!(vec![png.clone()]),
        vec![Content::Image(png.clone())]
    );
    let mixed = vec![Content::text("Page loaded"), Content::Image(png)];
    assert_eq!(contents!(mixed.clone()), mixed);
    assert_eq!(contents!(Content::text("one")), vec![Content::text("one")]);
}

#[test]
fn anything_serializable_is_json() {
    assert_eq!(contents!(3usize), json("3"));
    assert_eq!(
        contents!(vec!["a".to_owned(), "b".to_owned()]),
        json(r#"["a","b"]"#)
    );
    assert_eq!(contents!(json!({"k": true})), json(r#"{"k":true}"#));
    assert_eq!(contents!(Some(1.5)), json("1.5"));

    #[derive(serde::Serialize)]
    struct Count {
        words: usize,
    }
    assert_eq!(contents!(Count { words: 2 }), json(r#"{"words":2}"#));
}

#[test]
#[should_panic(expected = "tool `test_tool` returned a")]
fn unserializable_json_panics() {
    let _ = contents!(BTreeMap::from([((1, 2), 3)]));
}

#[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
struct Args {
    /// The text.
    text: String,
    limit: Option<u32>,
    #[serde(default)]
    items: Vec<Item>,
}

#[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
struct Item {
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[test]
fn schema_is_an_untitled_object() {
    let schema = input_schema::<Args>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema.get("title"), None);
    assert_eq!(schema.get("$schema"), None);
    assert_eq!(schema["required"], json!(["text"]));
    assert_eq!(schema["properties"]["text"]["description"], "The text.");
    assert_eq!(
        schema["properties"]["items"]["items"]["$ref"],
        "#/$defs/Item"
    );
    assert_eq!(schema["$defs"]["Item"]["type"], "object");
}

#[test]
fn zero_parameter_schema() {
    assert_eq!(
        input_schema::<NoArgs>(),
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn args_parse_with_optional_fields() {
    let args: Args = parse_args(r#"{"text": "a"}"#).expect("valid args");
    assert_eq!(
        args,
        Args {
            text: "a".to_owned(),
            limit: None,
            items: Vec::new()
        }
    );
    assert!(parse_args::<NoArgs>("{}").is_ok());
}

#[test]
fn arg_errors_name_the_field() {
    let error = |args: &str| parse_args::<Args>(args).expect_err("bad args");
    assert_eq!(
        error(r#"{"text": 3}"#),
        ToolError::Input("text: invalid type: integer `3`, expected a string".to_owned())
    );
    assert_eq!(
        error("{}"),
        ToolError::Input("missing field `text`".to_owned())
    );
    assert_eq!(
        error(r#"{"text": "a", "items": [{"name": 1}]}"#),
        ToolError::Input("items[0].name: invalid type: integer `1`, expected a string".to_owned())
    );
    assert_eq!(
        error(r#"["a"]"#),
        ToolError::Input("the arguments must be a JSON object, not an array".to_owned())
    );
    assert!(
        error("{")
            .message()
            .starts_with("the arguments are not JSON: ")
    );
}

#[test]
fn hints_for_gets_parsed_args() {
    fn by_command(args: &serde_json::Value) -> Option<Hints> {
        (args.get("command")? == "ls").then(Hints::read_only)
    }
    assert_eq!(
        hints_for(r#"{"command": "ls"}"#, by_command),
        Some(Hints::read_only())
    );
    assert_eq!(hints_for(r#"{"command": "rm"}"#, by_command), None);
    assert_eq!(hints_for("not json", by_command), None);
}
