//! What a component declares about its tools, as its code gives it (each tool's
//! spec, hints, and whether it answers `hints-for`), and the copy of it kept on disk
//! beside the compiled code, so that a start whose cache has lost a component's code
//! (trimmed, or compiled by another piton) but kept its specs lists its tools
//! without compiling it.
//!
//! A kept copy is hostile input like the rest of the cache folder: it is used only
//! when the folder and the file are private to this user (as a compiled entry is),
//! when it parses within its size, names the digest it is looked up by, and passes
//! every check a load makes of what a guest returns. Even then it is only believed
//! until the component's code is compiled: its specs are read again from that code
//! before any call runs it, and a copy that differs is refused (the tools' calls
//! fail, the copy is replaced, and a server loads its tools again).

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::bindings::{self, ToolDecl};
use super::diagnose::World;

/// What a load reads of a component, in the form the kept copy is written in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Specs {
    /// The SHA-256 of the component's bytes.
    pub(crate) sha256: String,
    /// `plugin` or `toolbox`.
    pub(crate) world: WorldName,
    /// The interfaces the component imports.
    pub(crate) imports: Vec<String>,
    /// Each tool, in the order the component declares them.
    pub(crate) tools: Vec<Declared>,
}

/// The world, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorldName {
    /// `plugin`.
    Plugin,
    /// `toolbox-plugin`.
    Toolbox,
}

/// One tool as its component declares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Declared {
    name: String,
    description: String,
    /// As the guest gave it: JSON text.
    input_schema: String,
    parallel: bool,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
    has_hints_for: bool,
}

/// The name a kept copy's file has after the digest: what a load reads and how it
/// checks it, so a piton that reads specs otherwise uses copies of its own.
const FORMAT: &str = "piton specs 1, piton:tool 0.1";

/// The largest kept copy read: twice the most piton reads of a toolbox's specs
/// (`TOOLBOX_FUEL`, 8 MiB), for JSON's escapes and the rest.
pub(crate) const MAX_SIZE: u64 = 16 << 20;

/// The most imports a kept copy may name, and the longest name.
const MAX_IMPORTS: usize = 4096;
const MAX_IMPORT_NAME: usize = 1024;

/// The 16 hex digits in a kept copy's file name after the digest.
pub(crate) fn format_key() -> String {
    hex::encode(
        Sha256::digest(FORMAT.as_bytes())
            .get(..8)
            .unwrap_or_default(),
    )
}

impl From<World> for WorldName {
    fn from(world: World) -> Self {
        match world {
            World::Plugin => Self::Plugin,
            World::Toolbox => Self::Toolbox,
        }
    }
}

impl From<WorldName> for World {
    fn from(world: WorldName) -> Self {
        match world {
            WorldName::Plugin => Self::Plugin,
            WorldName::Toolbox => Self::Toolbox,
        }
    }
}

impl Declared {
    /// From what the guest gave.
    pub(crate) fn of(decl: &ToolDecl) -> Self {
        Self {
            name: decl.spec.name.clone(),
            description: decl.spec.description.clone(),
            input_schema: decl.spec.input_schema.clone(),
            parallel: decl.spec.parallel,
            read_only: decl.hints.read_only,
            destructive: decl.hints.destructive,
            idempotent: decl.hints.idempotent,
            open_world: decl.hints.open_world,
            has_hints_for: decl.has_hints_for,
        }
    }

    /// A read-only tool named `name`, for tests.
    #[cfg(test)]
    pub(crate) fn example(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            description: "Count.".to_owned(),
            input_schema: "{\"type\":\"object\"}".to_owned(),
            parallel: true,
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
            has_hints_for: true,
        }
    }

    /// As the guest gives it, to be checked as if it had.
    pub(crate) fn to_decl(&self) -> ToolDecl {
        ToolDecl {
            spec: bindings::plugin::piton::tool::types::ToolSpec {
                name: self.name.clone(),
                description: self.description.clone(),
                input_schema: self.input_schema.clone(),
                parallel: self.parallel,
            },
            hints: bindings::ToolHints {
                read_only: self.read_only,
                destructive: self.destructive,
                idempotent: self.idempotent,
                open_world: self.open_world,
            },
            has_hints_for: self.has_hints_for,
        }
    }
}

impl Specs {
    /// The kept copy in `text`, if it is one of the component `sha256` in this
    /// format; why not otherwise. What it declares is checked by the load, as a
    /// guest's answer is.
    pub(crate) fn parse(text: &[u8], sha256: &str) -> Result<Self, String> {
        let specs: Self = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        if specs.sha256 != sha256 {
            return Err(format!(
                "it holds the specs of another component ({})",
                crate::term::cut_end(&specs.sha256, 64)
            ));
        }
        specs.checked()
    }

    /// These specs, if they could be a component's: one tool for a plugin, imports
    /// within bounds; why not otherwise.
    pub(crate) fn checked(self) -> Result<Self, String> {
        if self.world == WorldName::Plugin && self.tools.len() != 1 {
            return Err(format!("a plugin of {} tools", self.tools.len()));
        }
        if self.imports.len() > MAX_IMPORTS
            || self.imports.iter().any(|name| name.len() > MAX_IMPORT_NAME)
        {
            return Err("its imports are over what a component has".to_owned());
        }
        Ok(self)
    }

    /// The kept copy's text.
    pub(crate) fn to_text(&self) -> Vec<u8> {
        // Strings and booleans only: it always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Each tool as its guest gives it.
    pub(crate) fn decls(&self) -> Vec<ToolDecl> {
        self.tools.iter().map(Declared::to_decl).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Specs {
        Specs {
            sha256: "ab".repeat(32),
            world: WorldName::Plugin,
            imports: vec!["wasi:cli/environment@0.2.3".to_owned()],
            tools: vec![Declared::example("count")],
        }
    }

    #[test]
    fn a_kept_copy_reads_back_as_written_and_only_under_its_own_digest() {
        let text = specs().to_text();
        assert_eq!(Specs::parse(&text, &"ab".repeat(32)), Ok(specs()));
        let other = Specs::parse(&text, &"cd".repeat(32)).expect_err("another digest");
        assert!(other.contains("another component"), "{other}");
    }

    #[test]
    fn a_kept_copy_that_is_not_one_is_refused() {
        let sha = "ab".repeat(32);
        let mut two = specs();
        two.tools.push(two.tools[0].clone());
        let mut many_imports = specs();
        many_imports.imports = vec!["x".to_owned(); MAX_IMPORTS + 1];
        let mut unknown: serde_json::Value =
            serde_json::from_slice(&specs().to_text()).expect("JSON");
        unknown["tools"][0]["grants"] = serde_json::json!("all");
        for text in [
            two.to_text(),
            many_imports.to_text(),
            serde_json::to_vec(&unknown).expect("JSON"),
            b"{".to_vec(),
            Vec::new(),
        ] {
            assert!(
                Specs::parse(&text, &sha).is_err(),
                "{}",
                String::from_utf8_lossy(&text)
            );
        }
    }

    #[test]
    fn the_format_key_is_sixteen_hex_digits_and_stays_the_same() {
        let key = format_key();
        assert_eq!(key.len(), 16);
        assert_eq!(key, format_key());
        assert!(key.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
