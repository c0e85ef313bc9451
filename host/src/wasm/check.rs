//! `piton check`: everything a load does to one component file (compile, the world it
//! exports, each tool's spec, schema and hints, read in an instance with no
//! capabilities), without installing it, plus what each WASI import would give the
//! tool in piton's sandbox with nothing granted.

use std::path::Path;

use serde::Serialize;

use super::load::LoadFrom;
use super::runtime::WasmRuntime;
use super::tool::WasmTool;
use crate::config::pins::Pin;
use crate::error::{LoadError, LoadErrorKind};
use crate::group::CheckedTool;
use crate::tool::Tool as _;

/// What a call gets from one interface a component imports, in piton's sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportUse {
    /// The piton contract's own types.
    Contract,
    /// Given to every call: streams, clocks, random numbers, exit.
    Given,
    /// Given, but only into the host: stdout and stderr are captured into the log
    /// (never the protocol), stdin is empty.
    Captured,
    /// Denied unless piton.toml grants it (and the tool's hints allow it).
    DeniedUnlessGranted,
    /// Not a WASI 0.2 interface piton knows: a load would fail to link it.
    Unknown,
}

/// One import and what it gives.
#[derive(Debug, Clone, Serialize)]
pub struct ImportCheck {
    /// The interface, e.g. `wasi:filesystem/types@0.2.3`.
    pub name: String,
    /// What a call gets from it.
    pub gives: ImportUse,
    /// In words, with the piton.toml key that grants it when there is one.
    pub why: &'static str,
}

/// What `piton check` found in a component that loads.
#[derive(Debug)]
pub struct Checked {
    /// The world it exports: `plugin` or `toolbox-plugin`.
    pub world: &'static str,
    /// Its tools, as a load gives them (nothing granted).
    pub tools: Vec<WasmTool>,
    /// Each interface it imports.
    pub imports: Vec<ImportCheck>,
}

impl WasmRuntime {
    /// Loads the component in `path` as a load does, without adding it anywhere, and
    /// says what each of its imports would give a call.
    pub async fn check_file(&self, path: &Path) -> Result<Checked, LoadError> {
        self.check(LoadFrom::File(path.to_path_buf())).await
    }

    /// [`WasmRuntime::check_file`] of a file or of a component's bytes (fetched, not
    /// yet written anywhere).
    pub async fn check(&self, what: LoadFrom) -> Result<Checked, LoadError> {
        self.check_pinned(what, None).await
    }

    /// [`WasmRuntime::check`], refused unless the bytes compiled have `pin`'s digest
    /// (checked before any of it is compiled or runs), as [`WasmRuntime::load`] does.
    pub async fn check_pinned(
        &self,
        what: LoadFrom,
        pin: Option<&Pin>,
    ) -> Result<Checked, LoadError> {
        let mut tools = self.load(what.clone(), pin).await?;
        // Compiled optimised too, as a load's tools run in the end (and cached). Tools
        // made from kept specs their code contradicts are read again, from the code.
        self.optimised().await;
        if !tools.iter().all(WasmTool::optimised) {
            tools = self.load(what, pin).await?;
            self.optimised().await;
        }
        if let Some(tool) = tools.iter().find(|tool| !tool.optimised()) {
            return Err(LoadError {
                plugin: tool.source(),
                kind: LoadErrorKind::Compile(
                    "the optimising compiler (Cranelift) failed on it, though the baseline \
                     one did not; the log (PITON_LOG=warn) says why"
                        .to_owned(),
                ),
            });
        }
        // What a registry checks when the tool joins it: the name, the sizes, and
        // the input schema (an object schema, and what checking it may cost).
        for tool in &tools {
            CheckedTool::check_spec(tool.spec()).map_err(|e| LoadError {
                plugin: tool.source(),
                kind: LoadErrorKind::Invalid(e.to_string()),
            })?;
        }
        let world = if tools.first().is_some_and(WasmTool::in_toolbox) {
            "toolbox-plugin"
        } else {
            "plugin"
        };
        let imports = tools
            .first()
            .map(|t| {
                t.info()
                    .imports
                    .iter()
                    .map(|name| import_check(name))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Checked {
            world,
            tools,
            imports,
        })
    }
}

/// What the import `name` (an interface name with its version) gives a call.
pub fn import_check(name: &str) -> ImportCheck {
    let interface = name.split('@').next().unwrap_or(name);
    let (gives, why) = match interface {
        "piton:tool/types" => (ImportUse::Contract, "the piton:tool contract's types"),
        "wasi:cli/environment" => (
            ImportUse::DeniedUnlessGranted,
            "no variables and no arguments unless piton.toml grants `env`",
        ),
        "wasi:cli/stdin" => (ImportUse::Captured, "stdin is empty"),
        "wasi:cli/stdout" | "wasi:cli/stderr" => (
            ImportUse::Captured,
            "captured into piton's log (with -v), up to max_log; never the protocol",
        ),
        "wasi:cli/exit" => (
            ImportUse::Given,
            "exit ends the call: a nonzero code is a trap",
        ),
        i if i.starts_with("wasi:cli/terminal-") => (ImportUse::Given, "never a terminal"),
        i if i.starts_with("wasi:io/") => (ImportUse::Given, "streams and polling"),
        i if i.starts_with("wasi:clocks/") => (ImportUse::Given, "clocks"),
        i if i.starts_with("wasi:random/") => (ImportUse::Given, "random numbers"),
        i if i.starts_with("wasi:filesystem/") => (
            ImportUse::DeniedUnlessGranted,
            "no files unless piton.toml grants `mounts`; writes only when the hints are not read_only",
        ),
        i if i.starts_with("wasi:sockets/") => (
            ImportUse::DeniedUnlessGranted,
            "no DNS or sockets unless piton.toml grants `network` (TCP: `tcp = true`) and the tool is open_world",
        ),
        i if i.starts_with("wasi:http/") => (
            ImportUse::DeniedUnlessGranted,
            "no HTTP unless piton.toml grants `network` hosts and the tool is open_world",
        ),
        _ => (ImportUse::Unknown, "not an interface piton links"),
    };
    ImportCheck {
        name: name.to_owned(),
        gives,
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_sorted_by_what_they_give() {
        let gives = |name| import_check(name).gives;
        assert_eq!(gives("piton:tool/types@0.1.1"), ImportUse::Contract);
        // Code mode's import is its interpreter's alone: a plugin cannot link it.
        assert_eq!(gives("piton:tool/registry@0.1.2"), ImportUse::Unknown);
        assert_eq!(
            gives("wasi:filesystem/preopens@0.2.6"),
            ImportUse::DeniedUnlessGranted
        );
        assert_eq!(
            gives("wasi:sockets/tcp@0.2.0"),
            ImportUse::DeniedUnlessGranted
        );
        assert_eq!(
            gives("wasi:http/outgoing-handler@0.2.3"),
            ImportUse::DeniedUnlessGranted
        );
        assert_eq!(
            gives("wasi:cli/environment@0.2.9"),
            ImportUse::DeniedUnlessGranted
        );
        assert_eq!(gives("wasi:cli/stdout@0.2.0"), ImportUse::Captured);
        assert_eq!(gives("wasi:clocks/wall-clock@0.2.0"), ImportUse::Given);
        assert_eq!(gives("wasi:cli/terminal-stdout@0.2.0"), ImportUse::Given);
        assert_eq!(gives("acme:evil/backdoor"), ImportUse::Unknown);
    }
}
