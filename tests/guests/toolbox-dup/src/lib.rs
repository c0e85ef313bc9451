//! A broken toolbox: it declares two tools named `same`, which piton refuses to load.
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

impl Guest for Dup {
    fn tools() -> Vec<ToolDecl> {
        let decl = ToolDecl {
            spec: ToolSpec {
                name: "same".to_owned(),
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
        vec![decl.clone(), decl]
    }

    fn hints_for(_tool: String, _args: String) -> Option<ToolHints> {
        None
    }

    fn run(_tool: String, _args: String) -> Result<Vec<Content>, ToolError> {
        Ok(Vec::new())
    }
}

bindings::export!(Dup with_types_in bindings);
