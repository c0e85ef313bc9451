//! What a file that does not load as a tool is, in one line with the fix: not
//! WebAssembly, a core module, a truncated component, a wasi:cli command, a component
//! of another interface or another piton:tool version.

/// The interface a piton tool exports.
pub(super) const TOOL_EXPORT: &str = "piton:tool/tool@0.1.2";
/// The interface a piton toolbox (several tools) exports.
pub(super) const TOOLBOX_EXPORT: &str = "piton:tool/toolbox@0.1.2";

/// The interface code mode's interpreter imports to call the registry's tools.
const REGISTRY_IMPORT: &str = "piton:tool/registry";

/// Why a component that imports `import` cannot be a tool, when `import` is code
/// mode's `piton:tool/registry` (any version): through it a plugin would call the
/// registry's other tools, and so reach what their grants give them.
pub(super) fn registry_import_problem(import: &str) -> Option<String> {
    let interface = import.split('@').next().unwrap_or(import);
    (interface == REGISTRY_IMPORT).then(|| {
        format!(
            "a component that imports {}, which piton gives code mode's interpreter alone: \
             a tool may not call the registry's other tools (it would reach their grants); \
             remove the import, and take what another tool gives as an argument",
            one_line(import)
        )
    })
}

/// Which piton world a component exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum World {
    /// `plugin`: one tool.
    Plugin,
    /// `toolbox-plugin`: several tools.
    Toolbox,
}

/// Whether `export` is `interface` (`pkg/name@version`) at a version this piton loads:
/// the same major version, or for 0.x the same minor one (wasmtime's semver lookup).
fn compatible(export: &str, interface: &str) -> bool {
    let Some((name, version)) = interface.split_once('@') else {
        return false;
    };
    let family = match version.split('.').collect::<Vec<_>>()[..] {
        ["0", minor, ..] => format!("0.{minor}."),
        [major, ..] => format!("{major}."),
        [] => return false,
    };
    export
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('@'))
        .is_some_and(|v| v.starts_with(&family))
}

/// Which world a component with these exports fits, or why it is not a piton tool.
pub(super) fn world_of(exports: &[String]) -> Result<World, NotATool> {
    let tool = exports.iter().any(|e| compatible(e, TOOL_EXPORT));
    let toolbox = exports.iter().any(|e| compatible(e, TOOLBOX_EXPORT));
    match (tool, toolbox) {
        (true, true) => Err(NotATool::Both),
        (true, false) => Ok(World::Plugin),
        (false, true) => Ok(World::Toolbox),
        (false, false) => Err(exports_problem(exports)),
    }
}

/// Why a component is not a piton tool this piton loads, judged from its exports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(super) enum NotATool {
    /// It exports both the tool and the toolbox interface.
    #[error(
        "a component that exports both {} and {}; export one: the tool interface for one \
         tool, the toolbox for several",
        TOOL_EXPORT,
        TOOLBOX_EXPORT
    )]
    Both,
    /// A `wasi:cli` command.
    #[error(
        "a wasi:cli command (it exports wasi:cli/run), not a piton tool; write the tool as a \
         library (crate-type cdylib) with piton-guest-sdk's #[tool] and build it for \
         wasm32-wasip2"
    )]
    Command,
    /// A piton interface at a version this piton does not load: the export.
    #[error(
        "a tool for {}, but this piton loads {}; build it with a piton-guest-sdk for \
         piton:tool {}, or use a piton that loads {}",
        one_line(.0),
        TOOL_EXPORT,
        version_of(TOOL_EXPORT),
        version_of(.0)
    )]
    OtherVersion(String),
    /// No piton interface: its exports.
    #[error(
        "a component that does not export {} (it exports {}); write the tool with \
         piton-guest-sdk's #[tool]",
        TOOL_EXPORT,
        listed(.0)
    )]
    Exports(Vec<String>),
}

/// The version of `interface` (`pkg/name@version`); empty when it has none.
fn version_of(interface: &str) -> &str {
    interface.split_once('@').map_or("", |(_, v)| v)
}

/// Up to five of `exports`, on one line.
fn listed(exports: &[String]) -> String {
    if exports.is_empty() {
        return "nothing".to_owned();
    }
    let mut names: Vec<String> = exports.iter().take(5).map(|e| one_line(e)).collect();
    if exports.len() > 5 {
        names.push(format!("and {} more", exports.len() - 5));
    }
    names.join(", ")
}

/// The start of a wasm binary.
const MAGIC: &[u8; 4] = b"\0asm";
/// Version and layer of a core module (version 1, layer 0).
const CORE_MODULE: [u8; 4] = [1, 0, 0, 0];

/// Why `bytes` cannot be a component, judged from its first bytes alone; `None` when
/// it has a component's header.
pub(super) fn header_problem(bytes: &[u8]) -> Option<String> {
    if bytes.is_empty() {
        return Some(
            "an empty file; remove it from the plugins folder, or build the tool for \
             wasm32-wasip2"
                .to_owned(),
        );
    }
    if !bytes.starts_with(MAGIC) {
        return Some(
            "not WebAssembly (no \\0asm header at its start); remove it from the plugins \
             folder, or build the tool for wasm32-wasip2"
                .to_owned(),
        );
    }
    if bytes.get(4..8) == Some(&CORE_MODULE[..]) {
        return Some(
            "a core WebAssembly module, not a component; build the tool for wasm32-wasip2, \
             or wrap the module with `wasm-tools component new`"
                .to_owned(),
        );
    }
    None
}

/// A compile error of a file of `len` bytes whose header looked right, in one line.
pub(super) fn compile_problem(message: &str, len: usize) -> String {
    let truncated =
        message.contains("unexpected end") || message.contains(&format!("(bound = {len})"));
    if truncated {
        return format!(
            "a truncated component (it ends early, at {len} bytes); copy or build it again"
        );
    }
    format!(
        "not a loadable WebAssembly component ({}); build it for wasm32-wasip2 or with \
         `wasm-tools component new`",
        one_line(message)
    )
}

/// Why a component with these exports, none of them a piton interface this piton
/// loads, is not a piton tool.
fn exports_problem(exports: &[String]) -> NotATool {
    if exports.iter().any(|e| e.starts_with("wasi:cli/run@")) {
        return NotATool::Command;
    }
    let other_version = |interface: &str| {
        let (name, _) = interface.split_once('@').unwrap_or((interface, ""));
        exports
            .iter()
            .find(|e| e.strip_prefix(name).is_some_and(|v| v.starts_with('@')))
    };
    match other_version(TOOL_EXPORT).or_else(|| other_version(TOOLBOX_EXPORT)) {
        Some(other) => NotATool::OtherVersion(other.clone()),
        None => NotATool::Exports(exports.to_vec()),
    }
}

/// The first line of `text`, at most 300 characters: wasmtime's and wasmparser's
/// messages may span lines (byte arrays one per line).
pub(super) fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim_end();
    let mut cut: String = line.chars().take(300).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        assert!(header_problem(b"").is_some_and(|m| m.starts_with("an empty file")));
        assert!(header_problem(b"MZ\x90\0").is_some_and(|m| m.starts_with("not WebAssembly")));
        assert!(header_problem(b"\0asm\x01\0\0\0").is_some_and(|m| m.starts_with("a core")));
        assert_eq!(header_problem(b"\0asm\x0d\0\x01\0"), None);
    }

    #[test]
    fn worlds_match_compatible_versions() {
        let of = |e: &[&str]| world_of(&e.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(of(&["piton:tool/tool@0.1.0"]), Ok(World::Plugin));
        assert_eq!(of(&["piton:tool/tool@0.1.1"]), Ok(World::Plugin));
        assert_eq!(
            of(&["exports", "piton:tool/toolbox@0.1.7"]),
            Ok(World::Toolbox)
        );
        let newer = "piton:tool/tool@0.2.0";
        let error = of(&[newer]).unwrap_err();
        assert_eq!(error, NotATool::OtherVersion(newer.to_owned()));
        // The fix names both versions.
        assert!(
            error
                .to_string()
                .contains("piton:tool 0.1.2, or use a piton that loads 0.2.0")
        );
        assert_eq!(
            of(&["piton:tool/toolbox@0.10.0"]),
            Err(NotATool::OtherVersion(
                "piton:tool/toolbox@0.10.0".to_owned()
            ))
        );
        assert_eq!(
            of(&["piton:tool/tool@0.1.0", "piton:tool/toolbox@0.1.1"]),
            Err(NotATool::Both)
        );
        assert_eq!(of(&["wasi:cli/run@0.2.3"]), Err(NotATool::Command));
        let many: Vec<String> = (0..7).map(|i| format!("e{i}")).collect();
        let error = of(&many.iter().map(String::as_str).collect::<Vec<_>>()).unwrap_err();
        assert_eq!(error, NotATool::Exports(many));
        assert!(
            error
                .to_string()
                .contains("(it exports e0, e1, e2, e3, e4, and 2 more)")
        );
    }

    #[test]
    fn the_registry_import_is_refused_at_any_version() {
        for import in ["piton:tool/registry@0.1.2", "piton:tool/registry@9.0.0"] {
            let problem = registry_import_problem(import).expect("refused");
            assert!(
                problem.contains(&format!("imports {import}, which")),
                "{problem}"
            );
        }
        assert_eq!(registry_import_problem("piton:tool/types@0.1.2"), None);
        assert_eq!(registry_import_problem("piton:tool/registry-x@0.1.2"), None);
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(one_line("a\n  b"), "a");
        assert_eq!(one_line(&"x".repeat(400)).chars().count(), 301);
        assert!(!compile_problem("bad\n[\n0x0,\n]", 10).contains('\n'));
    }
}
