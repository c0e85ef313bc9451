//! A tool without parameters, returning nothing, described by its options.

use piton_guest_sdk::{Hints, Tool, tool};
use serde_json::json;

#[tool(description = "Ring the bell.", open_world = false)]
fn ring() {}

#[test]
fn spec_has_an_empty_object_schema() {
    let spec = RingTool::spec();
    assert_eq!(spec.name, "ring");
    assert_eq!(spec.description, "Ring the bell.");
    assert_eq!(
        spec.input_schema,
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn hints_left_out_are_the_worst_case() {
    assert_eq!(RingTool::hints(), Hints::worst().open_world(false));
}

#[test]
fn unit_is_no_content() {
    ring();
    assert_eq!(RingTool::run("{}"), Ok(Vec::new()));
    // Extra arguments are ignored, as the schema does not forbid them.
    assert_eq!(RingTool::run(r#"{"loud": true}"#), Ok(Vec::new()));
}
