//! Hostile guest: an input schema of about 3 KB whose level `i` is `allOf` of two
//! `$ref`s to level `i + 1`, 40 levels: 2^40 subschemas once the refs are followed.

use piton_guest_sdk::serde_json::{Map, Value, json};
use piton_guest_sdk::{Content, Hints, Tool, ToolError, ToolSpec};

/// The tool.
struct SchemaBomb;

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

impl Tool for SchemaBomb {
    fn spec() -> ToolSpec {
        ToolSpec {
            name: "schema_bomb".to_owned(),
            description: "An input schema of 2^40 subschemas.".to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/l0"}},
                "$defs": doubling(40),
            }),
            parallel: true,
        }
    }

    fn hints() -> Hints {
        Hints::read_only().open_world(false)
    }

    fn run(_args: &str) -> Result<Vec<Content>, ToolError> {
        Ok(vec![Content::text("unreachable: never loaded")])
    }
}

piton_guest_sdk::export!(SchemaBomb);
