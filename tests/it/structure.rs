//! The host's layout: no two modules import each other, directly or round a
//! longer loop, every module says what it owns, and no source file is too long.
//!
//! A module is one file of host/src. An import is any path that names another
//! module (`crate::a::b`, `super::b`), and a folder module's declaration of its
//! children (`mod b;`). A name taken from lib.rs or a folder's mod.rs (`crate::Tool`,
//! `super::Thing`) is an import of that file, which declares the importer: so inside
//! the crate, modules name the module that defines a thing, never a parent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file of host/src may be, in lines.
const MAX_LINES: usize = 600;

/// Every module of the library: its path (`crate::wasm::tool`) and its file.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("host/src reads") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("main.rs") {
                continue;
            }
            let relative = path.strip_prefix(src).expect("under src");
            let mut parts: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
                parts.pop();
            }
            let name = std::iter::once("crate".to_owned())
                .chain(parts)
                .collect::<Vec<_>>()
                .join("::");
            found.insert(name, path);
        }
    }
    found
}

/// `text` without comments, string literals and the contents of `#[cfg(test)] mod
/// tests { .. }` other than its `crate::` paths (a test module's `super::` is its
/// own file).
fn code_of(text: &str) -> (String, String) {
    let (main, tests) = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let strip = |text: &str| {
        text.lines()
            .map(|line| {
                let line = line.split("//").next().unwrap_or("");
                // Drop string literals: a message may say `crate::x` or `super::`.
                let mut out = String::new();
                let mut in_string = false;
                let mut escaped = false;
                for c in line.chars() {
                    if in_string {
                        match (escaped, c) {
                            (true, _) => escaped = false,
                            (false, '\\') => escaped = true,
                            (false, '"') => in_string = false,
                            _ => {}
                        }
                    } else if c == '"' {
                        in_string = true;
                    } else {
                        out.push(c);
                    }
                }
                out
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    (strip(main), strip(tests))
}

/// The identifier at the start of `text`.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Every path that starts with `root::` in `code`, as its segments after the root;
/// a `{a, b::c}` group gives one path for each of its items.
fn paths_after(code: &str, root: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let needle = format!("{root}::");
    let mut rest = code;
    while let Some(at) = rest.find(&needle) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + needle.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        paths.extend(expand(rest));
    }
    paths
}

/// The paths written at the start of `text`: `a::b::C`, or a `{..}` group.
fn expand(text: &str) -> Vec<Vec<String>> {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 0;
        let mut items = Vec::new();
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push(&group[start..i]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&group[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return items
            .into_iter()
            .filter(|item| !item.trim().is_empty())
            .flat_map(expand)
            .collect();
    }
    let first = ident(text);
    if first.is_empty() {
        return Vec::new();
    }
    let after = &text[first.len()..];
    match after.strip_prefix("::") {
        Some(more) => expand(more)
            .into_iter()
            .map(|mut tail| {
                tail.insert(0, first.to_owned());
                tail
            })
            .chain(
                // `a::{..}` or `a::*` still names `a`.
                expand(more).is_empty().then(|| vec![first.to_owned()]),
            )
            .collect(),
        None => vec![vec![first.to_owned()]],
    }
}

/// The module a path names: the longest prefix that is a module.
fn resolve(path: &[String], modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    (1..=path.len()).rev().find_map(|n| {
        let name = path[..n].join("::");
        modules.contains_key(&name).then_some(name)
    })
}

/// Who imports whom.
fn imports(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (name, file) in modules {
        let text = std::fs::read_to_string(file).expect("a source file reads");
        let (code, tests) = code_of(&text);
        let is_folder_module = file.ends_with("mod.rs") || file.ends_with("lib.rs");
        let parent: Vec<String> = {
            let mut p: Vec<String> = name.split("::").map(str::to_owned).collect();
            if !is_folder_module {
                p.pop();
            }
            p
        };
        let grandparent: Vec<String> = parent[..parent.len().saturating_sub(1)].to_vec();
        let own: Vec<String> = name.split("::").map(str::to_owned).collect();
        let mut named = Vec::new();
        for path in paths_after(&code, "crate")
            .into_iter()
            .chain(paths_after(&tests, "crate"))
        {
            named.push([vec!["crate".to_owned()], path].concat());
        }
        for path in paths_after(&code, "super") {
            let base = if is_folder_module {
                &grandparent
            } else {
                &parent
            };
            named.push([base.clone(), path].concat());
        }
        // A folder module's children: it declares them (`mod view;`), so a child
        // that takes a name from it (`super::X`, `crate::X`) closes a loop.
        if is_folder_module {
            for child in modules.keys().filter_map(|m| {
                m.strip_prefix(&format!("{name}::"))
                    .filter(|rest| !rest.contains("::"))
            }) {
                named.push([own.clone(), vec![child.to_owned()]].concat());
            }
        }
        let targets: BTreeSet<String> = named
            .iter()
            .filter_map(|path| resolve(path, modules))
            .filter(|target| target != name)
            .collect();
        graph.insert(name.clone(), targets);
    }
    graph
}

/// The groups of modules that import each other, directly or round a longer loop
/// (each a strongly connected set of two or more modules), sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(node) = todo.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|node| (node, reach(node))).collect();
    let mut groups: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    for (node, from_here) in &reached {
        let group: BTreeSet<String> = from_here
            .iter()
            .filter(|other| reached.get(other).is_some_and(|back| back.contains(*node)))
            .cloned()
            .collect();
        if group.len() > 1 {
            groups.insert(group);
        }
    }
    groups.into_iter().collect()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_two_modules_import_each_other() {
    let modules = modules(&src());
    assert!(modules.len() > 20, "host/src was not read: {modules:?}");
    let graph = imports(&modules);
    let found: Vec<String> = cycles(&graph)
        .iter()
        .map(|group| {
            let edges: Vec<String> = group
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| group.contains(*to))
                        .map(move |to| format!("{from} -> {to}"))
                })
                .collect();
            edges.join(", ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "modules import each other (name the module that defines a thing, \
         crate::tool::Tool rather than crate::Tool, and move what both need below both):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_cycle_check_sees_a_loop_through_the_crate_root() {
    // What the check above would say of a module that took `Tool` from lib.rs.
    let modules: BTreeMap<String, PathBuf> = [("crate", "lib.rs"), ("crate::tool", "tool.rs")]
        .map(|(m, f)| (m.to_owned(), PathBuf::from(f)))
        .into();
    let path = |text: &str| expand(text).into_iter().next().unwrap_or_default();
    assert_eq!(
        resolve(&[vec!["crate".to_owned()], path("Tool")].concat(), &modules),
        Some("crate".to_owned())
    );
    assert_eq!(
        resolve(
            &[vec!["crate".to_owned()], path("tool::Tool")].concat(),
            &modules
        ),
        Some("crate::tool".to_owned())
    );
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("crate".to_owned(), ["crate::tool".to_owned()].into()),
        ("crate::tool".to_owned(), ["crate".to_owned()].into()),
    ]
    .into();
    assert_eq!(cycles(&graph).len(), 1);
    assert_eq!(
        paths_after("use crate::{a::B, c::{D, e::F}};", "crate"),
        [&["a", "B"][..], &["c", "D"], &["c", "e", "F"]]
            .map(|p| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
    );
}

#[test]
fn every_module_says_what_it_owns_and_none_is_too_long() {
    let mut problems = Vec::new();
    for file in modules(&src()).values() {
        let text = std::fs::read_to_string(file).expect("a source file reads");
        let shown = file.strip_prefix(src()).unwrap_or(file).display();
        if !text.starts_with("//!") {
            problems.push(format!("{shown}: no //! header saying what it owns"));
        }
        let lines = text.lines().count();
        if lines > MAX_LINES {
            problems.push(format!(
                "{shown}: {lines} lines, over {MAX_LINES}; split it"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
