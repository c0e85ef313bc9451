//! `piton new --lang LANG DIR`: makes a tool project from a template and says what to
//! do next.

use std::path::Path;

use super::out::Outcome;
use crate::build::Lang;
use crate::build::new::{NewError, new_project};

/// Makes the project and prints its files and the next commands.
pub(super) fn new(lang: &str, dir: &Path) -> Outcome {
    let Some(lang) = Lang::from_name(lang) else {
        eprintln!(
            "error: --lang {lang:?} is not one piton builds: use rust, python, js, ts, c or go"
        );
        return Outcome::Usage;
    };
    match new_project(lang, dir) {
        Ok(made) => {
            println!("made the {lang} tool `{}` in {}:", made.tool, dir.display());
            // A Go project's SDK is one folder of many files: named once.
            let mut sdk_shown = false;
            for file in &made.files {
                if lang == Lang::Go && file.starts_with("piton/") {
                    if !sdk_shown {
                        println!("  piton/    (piton's Go SDK, which go.mod points at)");
                        sdk_shown = true;
                    }
                    continue;
                }
                println!("  {file}");
            }
            println!(
                "next: piton build {}    (its README says how to test and call it)",
                dir.display()
            );
            Outcome::Success
        }
        Err(
            e @ (NewError::BadName { .. } | NewError::Exists { .. } | NewError::NoTemplate { .. }),
        ) => {
            eprintln!("error: piton new: {e}");
            Outcome::Usage
        }
        Err(e) => {
            eprintln!("error: piton new: {e}");
            Outcome::ErrorResult
        }
    }
}
