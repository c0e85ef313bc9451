//! The pins of one load, checked: a tool pinned to another digest than its
//! component's is refused, and a pin that matched nothing is a warning.

use std::collections::BTreeSet;

use crate::config::pins::{Pins, file_section};
use crate::error::LoadError;
use crate::plugins::PluginsAt;
use crate::source::ToolSource;
use crate::tool::Tool as _;
use crate::wasm::WasmTool;

/// A warning for each pin of `pins` that matched nothing: a file pin with no such
/// file among `files` (the file names read), a tool pin with no tool of that name
/// among `named` (the tools of every component read, loaded or refused). What is
/// pinned and not there is not served; it does not stop the others, so that
/// removing one file cannot take down the rest.
pub(crate) fn pins_not_found(
    at: &PluginsAt,
    pins: &Pins,
    files: &BTreeSet<String>,
    named: &BTreeSet<String>,
) -> Vec<String> {
    let folder = match at {
        PluginsAt::Folder(folder) => format!("the plugins folder {}", folder.display()),
        PluginsAt::Bundled => "the bundled examples (no plugins folder)".to_owned(),
    };
    let files = pins.files.iter().filter(|(name, _)| !files.contains(*name));
    let files = files.map(|(name, sha256)| {
        format!(
            "piton.toml's {} pins sha256 = \"{sha256}\", but {folder} has no such file, so \
             nothing is served from it; put the file back, or remove the pin",
            file_section(name)
        )
    });
    let tools = pins.tools.iter().filter(|(name, _)| !named.contains(*name));
    let tools = tools.map(|(name, sha256)| {
        format!(
            "piton.toml's [tools.{name}] pins sha256 = \"{sha256}\", but no plugin read \
             gives a tool named {name}, so it is not served; add the plugin that gives it \
             (a file refused above may be the one), or remove the pin"
        )
    });
    files.chain(tools).collect()
}

/// The file name of a plugins folder's file `source`; `None` for other sources.
pub(crate) fn file_name(source: &ToolSource) -> Option<String> {
    match source {
        ToolSource::File(path) => Some(path.file_name()?.to_str()?.to_owned()),
        _ => None,
    }
}

/// `Ok` unless a tool of `tools` (one component's) is pinned to another digest than
/// the component's: then the error refusing the component, each of its tools.
pub(crate) fn tool_pins_hold(tools: &[WasmTool], pins: &Pins) -> Result<(), LoadError> {
    for tool in tools {
        if let Some(pin) = pins.tool(&tool.spec().name) {
            pin.check(&tool.source(), &tool.info().sha256)?;
        }
    }
    Ok(())
}
