//! `json_schema_2020_12_tool` for the MCP conformance suite's `json-schema-2020-12`
//! scenario, which checks that `$schema`, `$defs` and `additionalProperties` reach the
//! client as written. `#[tool]` derives schemas without `$schema`, so this tool
//! implements [`Tool`] by hand with the scenario's schema, word for word.
//!
//! A call returns its arguments as JSON.

use piton_guest_sdk::serde_json::{self, json};
use piton_guest_sdk::{Content, Hints, Tool, ToolError, ToolSpec};

/// The tool.
struct JsonSchemaTool;

impl Tool for JsonSchemaTool {
    fn spec() -> ToolSpec {
        ToolSpec {
            name: "json_schema_2020_12_tool".to_owned(),
            description: "Tool with JSON Schema 2020-12 features".to_owned(),
            input_schema: json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "type": "object",
                        "properties": {
                            "street": { "type": "string" },
                            "city": { "type": "string" }
                        }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" }
                },
                "additionalProperties": false
            }),
            parallel: true,
        }
    }

    fn hints() -> Hints {
        Hints::read_only().open_world(false)
    }

    fn run(args: &str) -> Result<Vec<Content>, ToolError> {
        let args: serde_json::Value =
            serde_json::from_str(args).map_err(|e| ToolError::input(e.to_string()))?;
        Ok(vec![Content::json(&args)])
    }
}

piton_guest_sdk::export!(JsonSchemaTool);
