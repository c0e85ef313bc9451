//! A source's folder copied to a temporary folder to build in (JavaScript, TypeScript
//! and Go modules may import other files of their folder), without what is not source
//! (`node_modules`, `target`, hidden entries, `.wasm` files), and bounded, so that
//! building a file in a big folder says so instead of copying it all.

use std::path::Path;

use super::project::{BuildError, Lang, Source};

/// What a staged folder may hold at most (files, bytes).
const MAX_FILES: usize = 2000;
const MAX_BYTES: u64 = 64 << 20;

/// Copies the source's folder into `to`: its files, without `node_modules`, `target`,
/// hidden entries and `.wasm` files; at most [`MAX_FILES`] files of [`MAX_BYTES`].
pub(crate) fn stage(source: &Source, to: &Path, lang: Lang) -> Result<(), BuildError> {
    let mut budget = (MAX_FILES, MAX_BYTES);
    let too_big = || BuildError::Failed {
        lang,
        message: format!(
            "{}: its folder {} holds more than {MAX_FILES} files or {} MiB, all of which \
             piton copies to build it (modules may import each other); put the tool in \
             a folder of its own",
            source.file.display(),
            source.dir.display(),
            MAX_BYTES >> 20
        ),
    };
    copy_tree(&source.dir, to, 0, &mut budget, &too_big)?;
    // A single file given outside its folder's listing (or hidden) is still the source.
    if let Some(name) = source.file.file_name() {
        let staged = to.join(name);
        if !staged.is_file() {
            copy_file(&source.file, &staged)?;
        }
    }
    Ok(())
}

fn copy_tree(
    from: &Path,
    to: &Path,
    depth: usize,
    budget: &mut (usize, u64),
    too_big: &dyn Fn() -> BuildError,
) -> Result<(), BuildError> {
    if depth > 16 {
        return Err(too_big());
    }
    let entries = std::fs::read_dir(from).map_err(|error| BuildError::Io {
        what: format!("cannot read the folder {}", from.display()),
        error,
    })?;
    std::fs::create_dir_all(to).map_err(|error| BuildError::Io {
        what: format!("cannot make {}", to.display()),
        error,
    })?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if text.starts_with('.')
            || text == "node_modules"
            || text == "target"
            || text.ends_with(".wasm")
        {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            copy_tree(&path, &to.join(&name), depth + 1, budget, too_big)?;
        } else if meta.is_file() {
            if budget.0 == 0 || budget.1 < meta.len() {
                return Err(too_big());
            }
            budget.0 -= 1;
            budget.1 -= meta.len();
            copy_file(&path, &to.join(&name))?;
        }
    }
    Ok(())
}

fn copy_file(from: &Path, to: &Path) -> Result<(), BuildError> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|error| BuildError::Io {
            what: format!("cannot copy {}", from.display()),
            error,
        })
}

/// Writes `text` to `path`, making its folder.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), BuildError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|error| BuildError::Io {
            what: format!("cannot make {}", parent.display()),
            error,
        })?;
    }
    std::fs::write(path, text).map_err(|error| BuildError::Io {
        what: format!("cannot write {}", path.display()),
        error,
    })
}
