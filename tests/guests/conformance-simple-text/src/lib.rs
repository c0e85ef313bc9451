//! `test_simple_text` for the MCP conformance suite's `tools-call-simple-text`
//! scenario: no arguments, one text block.

use piton_guest_sdk::tool;

/// Tests simple text content response.
#[tool(read_only, open_world = false)]
fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}
