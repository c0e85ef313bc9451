//! A toolbox written with the SDK: a read-only `words` and an add-only `append`
//! (with a `hints_for` that narrows an empty line to read-only), one component.

use piton_guest_sdk::{Hints, ToolError, serde_json::Value, tool};

/// Count the words in a text.
///
/// Args:
///     text: The text to count
#[tool(read_only, open_world = false, export = false)]
fn words(text: String) -> usize {
    text.split_whitespace().count()
}

/// Append a line to /out/log.
///
/// Args:
///     line: The line to add
#[tool(destructive = false, open_world = false, hints_for = append_hints, export = false)]
fn append(line: String) -> Result<String, ToolError> {
    use std::io::Write as _;
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open("/out/log")
        .map_err(|e| ToolError::failed(format!("cannot open /out/log: {e}")))?;
    writeln!(log, "{line}").map_err(|e| ToolError::failed(format!("cannot write: {e}")))?;
    Ok("appended".to_owned())
}

/// An empty line changes nothing.
fn append_hints(args: &Value) -> Option<Hints> {
    (args["line"] == "").then(|| Hints::read_only().open_world(false))
}

piton_guest_sdk::toolbox!(WordsTool, AppendTool);
