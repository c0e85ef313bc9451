//! What a file that does not load as a tool is, in one line with the fix: not
//! WebAssembly, a core module, a truncated component, a wasi:cli command, a component
//! of another interface or another piton:tool version.

/// The interface a piton tool exports.
pub(super) const TOOL_EXPORT: &str = "piton:tool/tool@0.1.0";

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

/// Why a component with these exports is not a piton tool, or `None` when it
/// exports the tool interface.
pub(super) fn exports_problem(exports: &[String]) -> Option<String> {
    if exports.iter().any(|e| e == TOOL_EXPORT) {
        return None;
    }
    if exports.iter().any(|e| e.starts_with("wasi:cli/run@")) {
        return Some(
            "a wasi:cli command (it exports wasi:cli/run), not a piton tool; write the tool \
             as a library (crate-type cdylib) with piton-guest-sdk's #[tool] and build it \
             for wasm32-wasip2"
                .to_owned(),
        );
    }
    let (package, _) = TOOL_EXPORT.split_once('@').unwrap_or((TOOL_EXPORT, ""));
    if let Some(other) = exports
        .iter()
        .find(|e| e.strip_prefix(package).is_some_and(|v| v.starts_with('@')))
    {
        let version = other.split_once('@').map_or("", |(_, v)| v);
        let ours = TOOL_EXPORT.split_once('@').map_or("", |(_, v)| v);
        return Some(format!(
            "a tool for {}, but this piton loads {TOOL_EXPORT}; build it with a \
             piton-guest-sdk for piton:tool {ours}, or use a piton that loads {version}",
            one_line(other)
        ));
    }
    let listed = if exports.is_empty() {
        "nothing".to_owned()
    } else {
        let mut names: Vec<String> = exports.iter().take(5).map(|e| one_line(e)).collect();
        if exports.len() > 5 {
            names.push(format!("and {} more", exports.len() - 5));
        }
        names.join(", ")
    };
    Some(format!(
        "a component that does not export {TOOL_EXPORT} (it exports {listed}); write the \
         tool with piton-guest-sdk's #[tool]"
    ))
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
    fn messages_are_one_line() {
        assert_eq!(one_line("a\n  b"), "a");
        assert_eq!(one_line(&"x".repeat(400)).chars().count(), 301);
        assert!(!compile_problem("bad\n[\n0x0,\n]", 10).contains('\n'));
    }
}
