//! Hostile guest: an input schema of 1 MB of JSON (a long `description` inside it),
//! over the size piton accepts.

use piton_guest_sdk::serde_json::json;
use piton_guest_sdk::{Content, Hints, Tool, ToolError, ToolSpec};

/// The tool.
struct BigSchema;

impl Tool for BigSchema {
    fn spec() -> ToolSpec {
        ToolSpec {
            name: "big_schema".to_owned(),
            description: "An input schema of 1 MB.".to_owned(),
            input_schema: json!({"type": "object", "description": "s".repeat(1 << 20)}),
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

piton_guest_sdk::export!(BigSchema);
