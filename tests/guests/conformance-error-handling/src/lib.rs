//! `test_error_handling` for the MCP conformance suite's `tools-call-error` scenario:
//! no arguments, always an error result (isError) with the scenario's text.

use piton_guest_sdk::{ToolError, tool};

/// Tests error response.
#[tool(read_only, open_world = false)]
fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::failed(
        "This tool intentionally returns an error for testing",
    ))
}
