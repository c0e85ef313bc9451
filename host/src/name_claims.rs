//! Whose a tool name is when plugin files disagree.
//!
//! piton.toml's `[tools.NAME]` settings (mounts, network, secrets, environment) go
//! to a tool by the name it gives itself, and any component can give its tools any
//! names (a toolbox up to 128). So a name is never settled by which file sorts
//! first, or which was there before:
//!
//! - A name declared by two or more files of the plugins folder is served by none of
//!   them, and none gets `[tools.NAME]`: each is refused, naming the others.
//! - `[tools.NAME] from = "FILE.wasm"` gives the name and its section to that file
//!   alone: its tool is served with them, and a tool of that name from any other file
//!   is refused, naming both. When that file is not there or gives no such tool, no
//!   tool of that name is served: a binding outlives its file, so that removing a
//!   plugin never hands its grants to another.
//! - Two tools that end up with one name after piton.toml's renames (`name = ...`)
//!   are both refused too.
//!
//! Every load decides afresh, so at a reload of `piton serve` a file that newly
//! declares a served tool's name takes that tool out of service, with its grants,
//! until piton.toml says whose the name is (or one file is removed).
//!
//! ```toml
//! [tools.read_env]
//! env  = { SECRET = "…" }
//! from = "read_env.wasm"   # a file of the plugins folder, by its file name
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{Bound, LoadError, LoadErrorKind};
use crate::source::ToolSource;
use crate::tool::Tool;

/// A `from` value that is not a plugins folder file name ending in `.wasm`: what
/// was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a file name ending in .wasm; from names the plugins folder's file whose \
     tool gets this section, by its file name alone, such as from = \"read_env.wasm\""
)]
pub struct NotAPluginFile(pub String);

/// `Ok` when `file`, a `from` value, names a file of the plugins folder by its file
/// name, ending in `.wasm`; else what to write.
pub(crate) fn check_from(file: &str) -> Result<(), NotAPluginFile> {
    let path = Path::new(file);
    let plain = path.file_name().is_some_and(|f| f == path.as_os_str())
        && path.extension().is_some_and(|e| e == "wasm");
    if plain {
        return Ok(());
    }
    Err(NotAPluginFile(file.to_owned()))
}

/// The tools of `tools` (every component read, in file order) whose declared names
/// are theirs to serve (see the module's rules), in the order given, and the errors
/// refusing the others. `bound` holds piton.toml's `from` of each `[tools.NAME]`
/// that has one, by NAME; `files` are the file names of the plugins folder that were
/// read, loaded or not.
pub(crate) fn by_declared_name<T: Tool>(
    tools: Vec<T>,
    bound: &BTreeMap<String, String>,
    files: &BTreeSet<String>,
) -> (Vec<T>, Vec<LoadError>) {
    let sources = sources_by_name(&tools);
    let mut kept = Vec::with_capacity(tools.len());
    let mut refused = Vec::new();
    for tool in tools {
        let name = tool.spec().name.clone();
        let source = tool.source();
        let from = bound.get(&name).cloned();
        let declared = sources.get(&name).map(Vec::as_slice).unwrap_or_default();
        let kind = match from {
            Some(from) if file_name(&source) != Some(from.as_str()) => {
                let bound = match declared
                    .iter()
                    .find(|other| file_name(other) == Some(from.as_str()))
                {
                    Some(other) => Bound::Declared(other.clone()),
                    None if files.contains(&from) => Bound::NoSuchTool,
                    None => Bound::NoSuchFile,
                };
                Some(LoadErrorKind::NotFrom { name, from, bound })
            }
            Some(_) => None,
            None if declared.len() > 1 => Some(contested(name, &source, declared)),
            None => None,
        };
        match kind {
            Some(kind) => refused.push(LoadError {
                plugin: source,
                kind,
            }),
            None => kept.push(tool),
        }
    }
    (kept, refused)
}

/// Where each name of `tools` comes from, every file that declares it.
fn sources_by_name<T: Tool>(tools: &[T]) -> BTreeMap<String, Vec<ToolSource>> {
    let mut sources: BTreeMap<String, Vec<ToolSource>> = BTreeMap::new();
    for tool in tools {
        sources
            .entry(tool.spec().name.clone())
            .or_default()
            .push(tool.source());
    }
    sources
}

/// The tools of `tools` (configured: renamed as piton.toml says) whose names no other
/// of them has, in the order given, and the errors refusing the others.
pub(crate) fn by_served_name<T: Tool>(tools: Vec<T>) -> (Vec<T>, Vec<LoadError>) {
    let sources = sources_by_name(&tools);
    let mut kept = Vec::with_capacity(tools.len());
    let mut refused = Vec::new();
    for tool in tools {
        let name = tool.spec().name.clone();
        match sources.get(&name) {
            Some(declared) if declared.len() > 1 => {
                let source = tool.source();
                refused.push(LoadError {
                    kind: contested(name, &source, declared),
                    plugin: source,
                });
            }
            _ => kept.push(tool),
        }
    }
    (kept, refused)
}

/// The error refusing `name` of `source`, which `declared` (`source` among them) all
/// declare.
fn contested(name: String, source: &ToolSource, declared: &[ToolSource]) -> LoadErrorKind {
    let mut others: Vec<ToolSource> = declared.iter().filter(|s| *s != source).cloned().collect();
    if others.is_empty() {
        // One file twice (a toolbox is refused before this): name it all the same.
        others.push(source.clone());
    }
    LoadErrorKind::Contested { name, others }
}

/// The file name of a plugins folder's file `source`; `None` for other sources.
fn file_name(source: &ToolSource) -> Option<&str> {
    match source {
        ToolSource::File(path) => path.file_name()?.to_str(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_is_a_wasm_file_name_alone() {
        assert!(check_from("read_env.wasm").is_ok());
        for bad in [
            "",
            "read_env",
            "../a.wasm",
            "/p/a.wasm",
            "d/a.wasm",
            "a.wasm/",
            ".",
        ] {
            assert_eq!(
                check_from(bad),
                Err(NotAPluginFile(bad.to_owned())),
                "{bad}"
            );
        }
        let shown = NotAPluginFile("d/a.wasm".into()).to_string();
        assert!(
            shown.starts_with("\"d/a.wasm\" is not a file name ending in .wasm"),
            "{shown}"
        );
    }
}
