//! What a component's imports could let its tools do: each WASI interface it imports
//! sorted into a capability piton.toml must grant (files, network, environment) or
//! one every call gets and that reaches nothing outside the call (clocks, random
//! numbers, streams, captured stdio, exit).
//!
//! The sorting is `piton check`'s ([`import_check`]): an interface denied unless
//! granted is a capability, one given or captured is harmless.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::wasm::check::{ImportUse, import_check};

/// A capability a tool's imports could use, if piton.toml grants it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// `wasi:filesystem/*`: files in the folders `mounts` grants.
    Files,
    /// `wasi:sockets/*` and `wasi:http/*`: the hosts `network` grants, when the
    /// tool is open_world.
    Network,
    /// `wasi:cli/environment`: the variables `env` grants.
    Environment,
}

impl Capability {
    /// The three, in the order they are shown.
    pub const ALL: [Capability; 3] = [Self::Files, Self::Network, Self::Environment];

    /// `files`, `network` or `environment`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Files => "files",
            Self::Network => "network",
            Self::Environment => "environment",
        }
    }

    /// The piton.toml key of a `[tools.NAME]` section that grants it.
    pub const fn key(self) -> &'static str {
        match self {
            Self::Files => "mounts",
            Self::Network => "network",
            Self::Environment => "env",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one imported interface is to the person deciding to trust a component.
/// Serialized as its [name](ImportKind::name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ImportKind {
    /// It could use this capability, if granted.
    Capability(Capability),
    /// Every call gets it, and it reaches nothing outside the call: clocks, random
    /// numbers, streams, stdio captured into the log, exit, the contract's types.
    Harmless,
    /// Not an interface piton links (a load refuses it): shown, never trusted.
    Unknown,
}

impl ImportKind {
    /// What the import `name` (`wasi:http/types@0.2.3`) is.
    pub fn of(name: &str) -> Self {
        match import_check(name).gives {
            ImportUse::Contract | ImportUse::Given | ImportUse::Captured => Self::Harmless,
            ImportUse::Unknown => Self::Unknown,
            ImportUse::DeniedUnlessGranted => {
                let interface = interface(name);
                if interface.starts_with("wasi:filesystem/") {
                    Self::Capability(Capability::Files)
                } else if interface.starts_with("wasi:sockets/")
                    || interface.starts_with("wasi:http/")
                {
                    Self::Capability(Capability::Network)
                } else if interface == "wasi:cli/environment" {
                    Self::Capability(Capability::Environment)
                } else {
                    // Denied, but not one of the three: never taken as harmless.
                    Self::Unknown
                }
            }
        }
    }

    /// `files`, `network`, `environment`, `harmless` or `unknown`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Capability(capability) => capability.name(),
            Self::Harmless => "harmless",
            Self::Unknown => "unknown",
        }
    }
}

impl Serialize for ImportKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// An import's interface without its version: `wasi:http/types@0.2.3` gives
/// `wasi:http/types`, so a component built against a newer WASI 0.2 release imports
/// the same interfaces.
pub fn interface(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

/// A component's imports by what they are: each interface once, without its version,
/// sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Imports(BTreeMap<ImportKind, BTreeSet<String>>);

impl Imports {
    /// The imports named `names` (with or without versions), sorted by kind.
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut by_kind: BTreeMap<ImportKind, BTreeSet<String>> = BTreeMap::new();
        for name in names {
            by_kind
                .entry(ImportKind::of(name))
                .or_default()
                .insert(interface(name).to_owned());
        }
        Self(by_kind)
    }

    /// The interfaces of `kind` (empty when there are none).
    pub fn of_kind(&self, kind: ImportKind) -> impl Iterator<Item = &str> {
        self.0.get(&kind).into_iter().flatten().map(String::as_str)
    }

    /// Whether an import could use `capability`.
    pub fn uses(&self, capability: Capability) -> bool {
        self.0
            .get(&ImportKind::Capability(capability))
            .is_some_and(|set| !set.is_empty())
    }

    /// Each kind with its interfaces, capabilities first, then harmless, then unknown.
    pub fn iter(&self) -> impl Iterator<Item = (ImportKind, &BTreeSet<String>)> {
        self.0.iter().map(|(kind, set)| (*kind, set))
    }

    /// The harmless ones in short (`clocks, random, stdio`): the family of each.
    pub fn harmless_families(&self) -> Vec<&'static str> {
        let mut families: Vec<&'static str> = self
            .of_kind(ImportKind::Harmless)
            .map(|i| match i {
                "piton:tool/types" => "piton:tool",
                "wasi:cli/stdin" | "wasi:cli/stdout" | "wasi:cli/stderr" => "stdio (captured)",
                "wasi:cli/exit" => "exit",
                i if i.starts_with("wasi:cli/terminal-") => "terminal (never one)",
                i if i.starts_with("wasi:io/") => "streams",
                i if i.starts_with("wasi:clocks/") => "clocks",
                i if i.starts_with("wasi:random/") => "random",
                _ => "other",
            })
            .collect();
        families.sort_unstable();
        families.dedup();
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_sorted_into_capabilities() {
        let cap = |c| ImportKind::Capability(c);
        let table = [
            ("wasi:filesystem/types@0.2.6", cap(Capability::Files)),
            ("wasi:filesystem/preopens@0.2.0", cap(Capability::Files)),
            ("wasi:sockets/tcp@0.2.12", cap(Capability::Network)),
            (
                "wasi:sockets/ip-name-lookup@0.2.0",
                cap(Capability::Network),
            ),
            ("wasi:http/outgoing-handler@0.2.3", cap(Capability::Network)),
            ("wasi:cli/environment@0.2.6", cap(Capability::Environment)),
            ("wasi:clocks/wall-clock@0.2.6", ImportKind::Harmless),
            ("wasi:random/random@0.2.6", ImportKind::Harmless),
            ("wasi:cli/stdout@0.2.6", ImportKind::Harmless),
            ("wasi:io/streams@0.2.6", ImportKind::Harmless),
            ("piton:tool/types@0.1.1", ImportKind::Harmless),
            ("piton:tool/types@0.1.2", ImportKind::Harmless),
            ("acme:evil/backdoor", ImportKind::Unknown),
        ];
        for (name, kind) in table {
            assert_eq!(ImportKind::of(name), kind, "{name}");
        }
    }

    #[test]
    fn two_versions_of_one_interface_are_one_import() {
        let imports = Imports::of([
            "wasi:http/types@0.2.3",
            "wasi:http/types@0.2.12",
            "wasi:clocks/wall-clock@0.2.0",
        ]);
        let network: Vec<&str> = imports
            .of_kind(ImportKind::Capability(Capability::Network))
            .collect();
        assert_eq!(network, ["wasi:http/types"]);
        assert!(imports.uses(Capability::Network));
        assert!(!imports.uses(Capability::Files));
        assert_eq!(imports.harmless_families(), ["clocks"]);
        assert_eq!(
            serde_json::to_value(&imports).ok(),
            Some(serde_json::json!({
                "network": ["wasi:http/types"],
                "harmless": ["wasi:clocks/wall-clock"],
            }))
        );
    }
}
