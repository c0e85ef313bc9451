//! Builds the example plugins in ../plugins to components that the `piton` binary
//! carries, so a fresh clone runs them with no other step; and lists the `piton new`
//! templates (../guest-sdk/templates/LANG/...) for the binary to carry.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    piton_guest_builder::Guests::in_folder("../plugins")
        .embed(true)
        .build_into("bundled_plugins.rs");
    templates();
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
