//! Hostile guest: an input schema just under what piton allows, 14 levels of
//! `allOf` of two `$ref`s to the next level (2^16 subschemas applied per value).
//! A value of the wrong type breaks it 2^14 times; a long `list` of strings takes
//! long to check.

use piton_guest_sdk::serde_json::{Map, Value, json};
use piton_guest_sdk::{Content, Hints, Tool, ToolError, ToolSpec};

/// The tool.
struct SchemaSlow;

/// `levels` levels of doubling `$ref`s under `$defs`, the last a string.
fn doubling(levels: usize) -> Map<String, Value> {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/l{}", i + 1);
        defs.insert(
            format!("l{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("l{levels}"), json!({"type": "string"}));
    defs
}

impl Tool for SchemaSlow {
    fn spec() -> ToolSpec {
        ToolSpec {
            name: "schema_slow".to_owned(),
            description: "An input schema just under piton's bound.".to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "a": {"$ref": "#/$defs/l0"},
                    "list": {"type": "array", "items": {"$ref": "#/$defs/l0"}}
                },
                "$defs": doubling(14),
            }),
            parallel: true,
        }
    }

    fn hints() -> Hints {
        Hints::read_only().open_world(false)
    }

    fn run(_args: &str) -> Result<Vec<Content>, ToolError> {
        Ok(vec![Content::text("checked")])
    }
}

piton_guest_sdk::export!(SchemaSlow);
