//! `piton new`: makes a tool project from the template of a language (carried in the
//! binary from `guest-sdk/templates/LANG/`): one example tool, its test and a README.
//! In every file `__NAME__` becomes the tool's name (the folder's name as a snake_case
//! identifier) and `__PROJECT__` the folder's name.

use std::fs;
use std::path::{Path, PathBuf};

use super::project::{BuildError, Lang};

include!(concat!(env!("OUT_DIR"), "/templates.rs"));

/// The Rust SDK a new Rust project depends on: this repository's `guest-sdk`.
const RUST_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../guest-sdk");

/// A project `new` made.
#[derive(Debug, Clone)]
pub struct NewProject {
    /// The project folder.
    pub dir: PathBuf,
    /// The example tool's name.
    pub tool: String,
    /// The files written, relative to `dir`.
    pub files: Vec<String>,
}

/// Why `new` made nothing.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The folder's name cannot name a tool.
    #[error(
        "{name:?} cannot name a tool project: use 1 to 64 lowercase letters, digits, '_' or \
         '-', starting with a letter (the tool is called by it, with '-' as '_')"
    )]
    BadName {
        /// The folder's name.
        name: String,
    },
    /// The folder exists and is not empty: nothing is overwritten.
    #[error("{} exists and is not empty: give a new folder", path.display())]
    Exists {
        /// The folder.
        path: PathBuf,
    },
    /// This piton carries no template for the language.
    #[error("this piton has no {lang} template")]
    NoTemplate {
        /// The language asked for.
        lang: Lang,
    },
    /// Writing the files failed.
    #[error(transparent)]
    Io(#[from] BuildError),
}

/// Makes a `lang` tool project in the folder `dir`, which must not exist or be empty.
pub fn new_project(lang: Lang, dir: &Path) -> Result<NewProject, NewError> {
    let project = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tool = tool_name(&project).ok_or_else(|| NewError::BadName {
        name: project.clone(),
    })?;
    if fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(NewError::Exists {
            path: dir.to_path_buf(),
        });
    }
    let files: Vec<_> = TEMPLATES
        .iter()
        .filter(|(l, _, _)| *l == lang.name())
        .collect();
    if files.is_empty() {
        return Err(NewError::NoTemplate { lang });
    }
    let io = |what: String| move |error| BuildError::Io { what, error };
    let mut written = Vec::new();
    for (_, path, text) in files {
        let path = path
            .replace("__PROJECT__", &project)
            .replace("__NAME__", &tool);
        let file = dir.join(&path);
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).map_err(io(format!("cannot make {}", parent.display())))?;
        }
        let text = text
            .replace("__PROJECT__", &project)
            .replace("__NAME__", &tool)
            .replace("__RUST_SDK__", RUST_SDK);
        fs::write(&file, text).map_err(io(format!("cannot write {}", file.display())))?;
        written.push(path);
    }
    // The SDK, for the project's own tests and its editor: a JavaScript or TypeScript
    // project imports it as `./piton.js` (with its types beside it), a Go project's
    // go.mod points at `./piton` (piton build puts its own copy in either's place).
    let mut sdk: Vec<(String, &str)> = match lang {
        Lang::Js => vec![("piton.js".to_owned(), super::js::SDK)],
        Lang::Ts => vec![
            ("piton.js".to_owned(), super::js::SDK),
            ("piton.d.ts".to_owned(), super::ts::SDK_TYPES),
        ],
        Lang::Go => super::go::sdk_files()
            .iter()
            .map(|(name, text)| (format!("piton/{name}"), *text))
            .collect(),
        Lang::Rust | Lang::Python | Lang::C => Vec::new(),
    };
    let tsconfig = super::ts::project_tsconfig();
    if lang == Lang::Ts {
        sdk.push(("tsconfig.json".to_owned(), &tsconfig));
    }
    for (name, text) in sdk {
        let file = dir.join(&name);
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).map_err(io(format!("cannot make {}", parent.display())))?;
        }
        fs::write(&file, text).map_err(io(format!("cannot write {}", file.display())))?;
        written.push(name);
    }
    Ok(NewProject {
        dir: dir.to_path_buf(),
        tool,
        files: written,
    })
}

/// The tool name a project folder's name gives: `word-count` → `word_count`.
fn tool_name(project: &str) -> Option<String> {
    let ok = (1..=64).contains(&project.len())
        && project.starts_with(|c: char| c.is_ascii_lowercase())
        && project
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    ok.then(|| project.replace('-', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_name_gives_a_snake_case_tool_name() {
        assert_eq!(tool_name("word-count").as_deref(), Some("word_count"));
        assert_eq!(tool_name("a1_b").as_deref(), Some("a1_b"));
        for bad in ["", "1abc", "Word", "a b", "a.b", "é", &"a".repeat(65)] {
            assert_eq!(tool_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn every_language_has_a_template_with_its_project_file() {
        for lang in Lang::ALL {
            let want = match lang {
                Lang::Rust => "src/lib.rs",
                Lang::Go => "tools.go",
                other => other.project_file(),
            };
            assert!(
                TEMPLATES
                    .iter()
                    .any(|(l, path, _)| *l == lang.name() && *path == want),
                "no {want} in the {lang} template"
            );
        }
    }

    #[test]
    fn a_project_is_made_with_names_filled_in_and_not_over_another() {
        let root = tempfile::tempdir().expect("a temp folder");
        let dir = root.path().join("my-tool");
        let made = new_project(Lang::Rust, &dir).expect("made");
        assert_eq!(made.tool, "my_tool");
        let lib = fs::read_to_string(dir.join("src/lib.rs")).expect("lib.rs");
        assert!(lib.contains("fn my_tool("), "{lib}");
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
        assert!(manifest.contains("name = \"my-tool\""), "{manifest}");
        assert!(!manifest.contains("__"), "{manifest}");
        assert!(matches!(
            new_project(Lang::Rust, &dir),
            Err(NewError::Exists { .. })
        ));
    }
}
