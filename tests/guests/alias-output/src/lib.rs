//! Hostile guest: a result of 60 text blocks that all point at the same 2 MiB of its
//! memory. The guest holds 2 MiB; a host that copied the whole result before checking
//! its size would allocate 120 MiB, and more with more blocks.

use piton_guest_sdk::serde_json::json;
use piton_guest_sdk::{Content, Hints, Tool, ToolError, ToolSpec};

/// The tool.
struct AliasOutput;

impl Tool for AliasOutput {
    fn spec() -> ToolSpec {
        ToolSpec {
            name: "alias_output".to_owned(),
            description: "Returns one buffer 60 times over.".to_owned(),
            input_schema: json!({"type": "object"}),
            parallel: true,
        }
    }

    fn hints() -> Hints {
        Hints::read_only().open_world(false)
    }

    fn run(_args: &str) -> Result<Vec<Content>, ToolError> {
        let buffer: &'static mut str = Box::leak("a".repeat(2 << 20).into_boxed_str());
        let (ptr, len) = (buffer.as_mut_ptr(), buffer.len());
        Ok((0..60)
            .map(|_| {
                // SAFETY: none. Every block claims the same leaked buffer on purpose:
                // the component model passes each string by pointer, so the host sees
                // 60 strings at one address. The instance is thrown away after the call.
                Content::Text(unsafe { String::from_raw_parts(ptr, len, len) })
            })
            .collect())
    }
}

piton_guest_sdk::export!(AliasOutput);
