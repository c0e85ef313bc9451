//! Builds the example plugins in ../plugins, and code mode's interpreter in
//! ../guest-sdk/code, to components that the `piton` binary carries, so a fresh clone
//! runs them with no other step; and lists the `piton new` templates
//! (../guest-sdk/templates/LANG/...) and the Go SDK (../guest-sdk/go) for the binary to
//! carry.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    piton_guest_builder::Guests::in_folder("../plugins")
        .embed(true)
        .build_into("bundled_plugins.rs");
    // Code mode's interpreter: a guest that is no tool, so not among the examples.
    piton_guest_builder::Guests::in_folder("../guest-sdk/code")
        .embed(true)
        .build_into("code_guests.rs");
    templates();
    go_sdk();
    skipped_tests();
}

/// `PITON_SKIP=haproxy,...` asks `cargo test` to skip the tests that need what
/// tests/packages.txt lists under those names: each such test is built ignored (so
/// the run lists it as "ignored, PITON_SKIP names haproxy") and the build warns.
fn skipped_tests() {
    let list = Path::new("../tests/packages.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=PITON_SKIP");
    let text = std::fs::read_to_string(list).expect("tests/packages.txt reads");
    let mut names: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "-")
        .collect();
    names.sort_unstable();
    names.dedup();
    let values: Vec<String> = names.iter().map(|name| format!("{name:?}")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(piton_skip, values({}))",
        values.join(", ")
    );
    let asked = std::env::var("PITON_SKIP").unwrap_or_default();
    for name in asked.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if names.contains(&name) {
            println!("cargo:rustc-cfg=piton_skip={name:?}");
            println!("cargo:warning=PITON_SKIP names {name}: the tests that need it are ignored");
        } else {
            println!(
                "cargo:warning=PITON_SKIP names {name:?}, which tests/packages.txt does not \
                 know (it knows {}); nothing is skipped for it",
                names.join(", ")
            );
        }
    }
}

/// Writes `templates.rs`: `TEMPLATES`, every template file as (language, path, text).
fn templates() {
    let root = Path::new("../guest-sdk/templates");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let mut out = String::from(
        "/// Every `piton new` template file: (language, path in the project, text).\n\
         pub(crate) const TEMPLATES: &[(&str, &str, &str)] = &[\n",
    );
    for file in &files {
        let relative = file.strip_prefix(root).expect("walked under the root");
        let mut parts = relative.iter().map(|p| p.to_string_lossy());
        let lang = parts.next().expect("a language folder");
        let path: Vec<_> = parts.collect();
        let absolute = std::fs::canonicalize(file).expect("a template file resolves");
        let _ = writeln!(
            out,
            "    ({lang:?}, {:?}, include_str!({:?})),",
            path.join("/"),
            absolute.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("templates.rs");
    std::fs::write(dest, out).expect("templates.rs is written");
}

/// Writes `go_sdk.rs`: `GO_SDK`, the Go SDK's module as (path in it, text), without
/// its own tests and README: what `piton build` compiles a Go tool with and `piton new`
/// puts in a Go project.
fn go_sdk() {
    let root = Path::new("../guest-sdk/go");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let mut out = String::from(
        "/// The Go SDK's files: (path in the module, text).\n\
         pub(crate) const GO_SDK: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        let relative = file.strip_prefix(root).expect("walked under the root");
        let name = relative.to_string_lossy();
        if name.ends_with("_test.go") || name == "README.md" {
            continue;
        }
        let absolute = std::fs::canonicalize(file).expect("an SDK file resolves");
        let _ = writeln!(
            out,
            "    ({:?}, include_str!({:?})),",
            name.replace('\\', "/"),
            absolute.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("go_sdk.rs");
    std::fs::write(dest, out).expect("go_sdk.rs is written");
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.')
            || name == "target"
            || name == "node_modules"
            || name == "__pycache__"
            || name.ends_with(".wasm")
        {
            continue;
        }
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}
