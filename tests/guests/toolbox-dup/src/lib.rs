//! A broken toolbox: it declares two tools named `same`, which piton refuses to load.
//! The tests rename the bytes of [`MODE`] in the component to break it other ways:
//! `none__` declares no tool, `many__` declares 129, `trap__` traps in `tools`.
#![allow(missing_docs)]

mod bindings {
    #![allow(missing_docs, clippy::all, unreachable_pub)]
    wit_bindgen::generate!({
        world: "toolbox-plugin",
        path: "../../../wit",
    });
}

use bindings::exports::piton::tool::toolbox::{Content, Guest, ToolDecl, ToolError, ToolHints};
use bindings::piton::tool::types::ToolSpec;

struct Dup;

/// What `tools` does; read at run time, so that renaming these bytes changes it.
static MODE: &str = "piton-test-mode:dup___";

impl Guest for Dup {
    fn tools() -> Vec<ToolDecl> {
        let decl = |name: String| ToolDecl {
            spec: ToolSpec {
                name,
                description: "One of two tools with one name.".to_owned(),
                input_schema: r#"{"type":"object","properties":{}}"#.to_owned(),
                parallel: true,
            },
            hints: ToolHints {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
            has_hints_for: false,
        };
        match std::hint::black_box(MODE).trim_start_matches("piton-test-mode:") {
            "none__" => Vec::new(),
            "many__" => (0..129).map(|i| decl(format!("tool_{i}"))).collect(),
            "trap__" => panic!("tools() traps"),
            _ => vec![decl("same".to_owned()), decl("same".to_owned())],
        }
    }

    fn hints_for(_tool: String, _args: String) -> Option<ToolHints> {
        None
    }

    fn run(_tool: String, _args: String) -> Result<Vec<Content>, ToolError> {
        Ok(Vec::new())
    }
}

bindings::export!(Dup with_types_in bindings);
