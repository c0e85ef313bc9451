//! Hostile guest: its `spec()` leaves a trace on stderr (which `piton -v` logs as
//! the guest's output), so a test can tell whether piton ran any of its code, as
//! reading its spec does, before checking that it may.

use piton_guest_sdk::serde_json::json;
use piton_guest_sdk::{Content, Hints, Tool, ToolError, ToolSpec};

/// The tool.
struct SpecTrace;

impl Tool for SpecTrace {
    fn spec() -> ToolSpec {
        eprintln!("spec-trace: spec() ran");
        ToolSpec {
            name: "spec_trace".to_owned(),
            description: "Say that its code ran.".to_owned(),
            input_schema: json!({"type": "object"}),
            parallel: true,
        }
    }

    fn hints() -> Hints {
        Hints::read_only().open_world(false)
    }

    fn run(_args: &str) -> Result<Vec<Content>, ToolError> {
        Ok(vec![Content::text("ran")])
    }
}

piton_guest_sdk::export!(SpecTrace);
