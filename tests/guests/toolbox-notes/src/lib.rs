//! A toolbox written with wit-bindgen directly: two tools over the notes in the
//! folder mounted at `/notes`. `count` is read-only and has no `hints-for`; `wipe`
//! deletes every note, and narrows to read-only for `{"dry_run": true}`.
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

/// Where the notes are.
const NOTES: &str = "/notes";

const READ_ONLY: ToolHints = ToolHints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

struct Notes;

fn spec(name: &str, description: &str, schema: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: schema.to_owned(),
        parallel: true,
    }
}

/// The names of the notes, sorted.
fn notes() -> Result<Vec<String>, ToolError> {
    let entries = std::fs::read_dir(NOTES)
        .map_err(|e| ToolError::Failed(format!("cannot read {NOTES}: {e}")))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

fn dry_run(args: &str) -> bool {
    args.replace(' ', "").contains("\"dry_run\":true")
}

impl Guest for Notes {
    fn tools() -> Vec<ToolDecl> {
        vec![
            ToolDecl {
                spec: spec(
                    "count",
                    "Count the notes.",
                    r#"{"type":"object","properties":{}}"#,
                ),
                hints: READ_ONLY,
                has_hints_for: false,
            },
            ToolDecl {
                spec: spec(
                    "wipe",
                    "Delete every note.",
                    r#"{"type":"object","properties":{"dry_run":{"type":"boolean"}}}"#,
                ),
                hints: ToolHints {
                    read_only: false,
                    destructive: true,
                    idempotent: true,
                    open_world: false,
                },
                has_hints_for: true,
            },
        ]
    }

    fn hints_for(tool: String, args: String) -> Option<ToolHints> {
        (tool == "wipe" && dry_run(&args)).then_some(READ_ONLY)
    }

    fn run(tool: String, args: String) -> Result<Vec<Content>, ToolError> {
        match tool.as_str() {
            "count" => Ok(vec![Content::Text(notes()?.len().to_string())]),
            "wipe" => {
                let names = notes()?;
                if !dry_run(&args) {
                    for name in &names {
                        std::fs::remove_file(format!("{NOTES}/{name}"))
                            .map_err(|e| ToolError::Failed(format!("cannot delete {name}: {e}")))?;
                    }
                }
                Ok(vec![Content::Text(format!("wiped {}", names.len()))])
            }
            other => panic!("no tool named {other}"),
        }
    }
}

bindings::export!(Notes with_types_in bindings);
