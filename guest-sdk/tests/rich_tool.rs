//! A tool with the options and types a real one uses.

use piton_guest_sdk::{Content, Hints, Tool, ToolError, schemars, serde, tool};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "piton_guest_sdk::serde")]
#[schemars(crate = "piton_guest_sdk::schemars")]
/// A half-open range.
pub struct Range {
    start: u32,
    end: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "piton_guest_sdk::serde", rename_all = "snake_case")]
#[schemars(crate = "piton_guest_sdk::schemars")]
/// What a range counts.
pub enum Mode {
    /// Lines.
    Lines,
    /// Bytes.
    Bytes,
}

#[derive(serde::Serialize)]
#[serde(crate = "piton_guest_sdk::serde")]
/// The items taken.
pub struct Slice {
    mode: &'static str,
    items: Vec<u32>,
}

fn slice_hints(args: &Value) -> Option<Hints> {
    (args.get("mode")? == "lines").then(Hints::read_only)
}

/// Take a slice of a file,
/// by lines or bytes.
///
/// # Arguments
///
/// * `range` - Which part to take
/// * `mode` - What the range counts
/// * `r#type` - Unused, checks raw names
#[tool(
    name = "take-slice",
    parallel = false,
    destructive = false,
    idempotent,
    hints_for = slice_hints
)]
pub fn slice(
    range: Range,
    mode: Mode,
    limit: Option<u32>,
    #[serde(default)] r#type: String,
) -> Result<Slice, ToolError> {
    if range.end < range.start {
        return Err(ToolError::input("end is before start"));
    }
    let _ = r#type;
    let end = limit.map_or(range.end, |limit| range.end.min(range.start + limit));
    let mode = match mode {
        Mode::Lines => "lines",
        Mode::Bytes => "bytes",
    };
    Ok(Slice {
        mode,
        items: (range.start..end).collect(),
    })
}

#[test]
fn spec() {
    let spec = SliceTool::spec();
    assert_eq!(spec.name, "take-slice");
    assert_eq!(
        spec.description,
        "Take a slice of a file, by lines or bytes."
    );
    assert!(!spec.parallel);
    let schema = spec.input_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["range", "mode"]));
    assert_eq!(schema["properties"]["range"]["$ref"], "#/$defs/Range");
    assert_eq!(
        schema["properties"]["range"]["description"],
        "Which part to take"
    );
    assert_eq!(
        schema["properties"]["mode"]["description"],
        "What the range counts"
    );
    assert_eq!(
        schema["properties"]["type"]["description"],
        "Unused, checks raw names"
    );
    assert_eq!(
        schema["properties"]["limit"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(schema["$defs"]["Mode"]["oneOf"][1]["const"], "bytes");
    assert_eq!(
        schema["$defs"]["Range"]["required"],
        json!(["start", "end"])
    );
    assert_eq!(schema.get("title"), None);
}

#[test]
fn hints() {
    assert_eq!(
        SliceTool::hints(),
        Hints::worst().destructive(false).idempotent(true)
    );
    assert_eq!(
        SliceTool::hints_for(r#"{"mode": "lines"}"#),
        Some(Hints::read_only())
    );
    assert_eq!(SliceTool::hints_for(r#"{"mode": "bytes"}"#), None);
    assert_eq!(SliceTool::hints_for("not json"), None);
}

#[test]
fn ok_values_become_json() {
    let out = SliceTool::run(r#"{"range": {"start": 1, "end": 4}, "mode": "bytes", "limit": 2}"#);
    assert_eq!(
        out,
        Ok(vec![Content::Json(
            r#"{"mode":"bytes","items":[1,2]}"#.to_owned()
        )])
    );
}

#[test]
fn errors_pass_through() {
    let out = SliceTool::run(r#"{"range": {"start": 4, "end": 1}, "mode": "lines"}"#);
    assert_eq!(out, Err(ToolError::Input("end is before start".to_owned())));
}

#[test]
fn nested_argument_errors_name_the_path() {
    let out = SliceTool::run(r#"{"range": {"start": 1, "end": "x"}, "mode": "lines"}"#);
    assert_eq!(
        out,
        Err(ToolError::Input(
            "range.end: invalid type: string \"x\", expected u32".to_owned()
        ))
    );
    let out = SliceTool::run(r#"{"range": {"start": 1, "end": 2}, "mode": "words"}"#);
    assert_eq!(
        out,
        Err(ToolError::Input(
            "mode: unknown variant `words`, expected `lines` or `bytes`".to_owned()
        ))
    );
}
