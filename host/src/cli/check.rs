//! `piton check FILE.wasm`: loads one component as a load would, without installing
//! it, and prints its tools and what each import gives a call; exit 0 when it would
//! load, 1 when not.

use std::io::{self, Write};
use std::path::Path;

use serde_json::json;

use super::out::{Outcome, pretty, say};
use crate::limits::format_size;
use crate::supply::capability::{Capability, Imports};
use crate::term::Shown;
use crate::tool::Tool as _;
use crate::wasm::check::ImportUse;
use crate::wasm::{RuntimeConfig, WasmRuntime};

pub(super) async fn check(path: &Path, as_json: bool) -> io::Result<Outcome> {
    let runtime = match WasmRuntime::new(RuntimeConfig::default()) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Stopped);
        }
    };
    let checked = match runtime.check_file(path).await {
        Ok(checked) => checked,
        Err(e) => {
            if as_json {
                let report = json!({"file": path, "loads": false, "error": e.to_string()});
                writeln!(io::stdout().lock(), "{}", pretty(&report))?;
            }
            say(format_args!("error: {e}"));
            return Ok(Outcome::ErrorResult);
        }
    };
    let info = checked.tools.first().map(|t| t.info().clone());
    let imports = Imports::of(checked.imports.iter().map(|i| i.name.as_str()));
    let capabilities: Vec<&str> = (Capability::ALL.into_iter())
        .filter(|c| imports.uses(*c))
        .map(Capability::name)
        .collect();
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if as_json {
        let tools: Vec<_> = checked
            .tools
            .iter()
            .map(|t| {
                let spec = t.spec();
                json!({
                    "name": spec.name,
                    "description": spec.description,
                    "parallel": spec.parallel,
                    "input_schema": spec.input_schema,
                    "hints": t.hints(),
                })
            })
            .collect();
        let report = json!({
            "file": path,
            "loads": true,
            "world": checked.world,
            "size": info.as_ref().map(|i| i.size),
            "sha256": info.as_ref().map(|i| &i.sha256),
            "tools": tools,
            "imports": checked.imports,
            "capabilities": capabilities,
        });
        writeln!(out, "{}", shown.text(&pretty(&report)))?;
        return Ok(Outcome::Success);
    }
    let count = checked.tools.len();
    writeln!(
        out,
        "{}: loads: a {} with {count} tool{}, {}",
        shown.cell(&path.display().to_string()),
        checked.world,
        if count == 1 { "" } else { "s" },
        info.as_ref().map_or_else(String::new, |i| format!(
            "{} (sha256 {})",
            format_size(i.size),
            &i.sha256[..16.min(i.sha256.len())]
        )),
    )?;
    for tool in &checked.tools {
        let spec = tool.spec();
        writeln!(out, "tool {} [{}]", shown.cell(&spec.name), tool.hints())?;
        let first = spec.description.lines().next().unwrap_or_default();
        writeln!(out, "  description: {}", shown.cell(first))?;
        writeln!(
            out,
            "  input schema: {}",
            shown.cell(&spec.input_schema.to_string())
        )?;
    }
    writeln!(out, "imports, with nothing granted:")?;
    for import in &checked.imports {
        let gives = match import.gives {
            ImportUse::Contract => "contract",
            ImportUse::Given => "given",
            ImportUse::Captured => "captured",
            ImportUse::DeniedUnlessGranted => "DENIED",
            ImportUse::Unknown => "unknown",
        };
        writeln!(
            out,
            "  {gives:<9}{}: {}",
            shown.cell(&import.name),
            import.why
        )?;
    }
    writeln!(
        out,
        "capabilities its imports could use, if piton.toml grants them: {}",
        if capabilities.is_empty() {
            "none".to_owned()
        } else {
            capabilities.join(", ")
        }
    )?;
    Ok(Outcome::Success)
}
