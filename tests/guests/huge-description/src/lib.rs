//! Hostile guest: its description is one line of 50 MB, which once overflowed the
//! width of `piton list`'s table (a panic).

use piton_guest_sdk::serde_json::json;
use piton_guest_sdk::{Content, Hints, Tool, ToolError, ToolSpec};

/// The tool.
struct HugeDescription;

impl Tool for HugeDescription {
    fn spec() -> ToolSpec {
        ToolSpec {
            name: "huge_description".to_owned(),
            description: "x".repeat(50_000_000),
            input_schema: json!({"type": "object"}),
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

piton_guest_sdk::export!(HugeDescription);
