//! `piton build [DIR | FILE]`: builds a tool project or a single source file into a
//! component and prints its path.

use std::path::PathBuf;

use super::out::Outcome;
use crate::build::{self, BuildError, Toolchains};

/// Builds `path` (default: the current folder) into `out` and prints the component's
/// path on stdout.
pub(super) fn build(path: Option<PathBuf>, out: Option<PathBuf>) -> Outcome {
    let path = path.unwrap_or_else(|| PathBuf::from("."));
    match build::build(&path, out.as_deref(), &Toolchains::from_env()) {
        Ok(built) => {
            println!("{}", built.wasm.display());
            Outcome::Success
        }
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                BuildError::NotFound { .. }
                | BuildError::UnknownLanguage { .. }
                | BuildError::ManyLanguages { .. } => Outcome::Usage,
                _ => Outcome::ErrorResult,
            }
        }
    }
}
