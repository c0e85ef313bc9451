//! `piton build [DIR | FILE]`: builds a tool project or a single source file into a
//! component, writes into it the specs its code gives (so the plugins folder lists its
//! tools without compiling it), and prints its path.

use std::path::{Path, PathBuf};

use super::out::{Outcome, say};
use crate::build::{self, BuildError, Toolchains};
use crate::source::ToolSource;
use crate::wasm::{RuntimeConfig, WasmRuntime};

/// Builds `path` (default: the current folder) into `out`, writes its specs into it,
/// and prints the component's path on stdout.
pub(super) async fn build(path: Option<PathBuf>, out: Option<PathBuf>) -> Outcome {
    let path = path.unwrap_or_else(|| PathBuf::from("."));
    let built = tokio::task::spawn_blocking(move || {
        build::build(&path, out.as_deref(), &Toolchains::from_env())
    })
    .await;
    let built = match built {
        Ok(Ok(built)) => built,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            return match e {
                BuildError::NotFound { .. }
                | BuildError::UnknownLanguage { .. }
                | BuildError::ManyLanguages { .. } => Outcome::Usage,
                _ => Outcome::ErrorResult,
            };
        }
        Err(_) => return Outcome::Stopped,
    };
    if let Err(why) = write_specs(&built.wasm).await {
        say(format_args!(
            "warning: {} is built, but its specs are not written into it ({why}); it \
             loads as it is, its tools listed once it is compiled. `piton check {}` \
             says whether and why it loads",
            built.wasm.display(),
            built.wasm.display()
        ));
    }
    println!("{}", built.wasm.display());
    Outcome::Success
}

/// Writes into the component `file` the specs its code gives, replacing the file
/// whole (a reader sees the old file or the new one). The new file is on disk before
/// it takes the old one's name, so a crash in between leaves one or the other, not an
/// empty file.
async fn write_specs(file: &Path) -> Result<(), String> {
    // No compile cache: a build reads specs on baseline code and leaves no trace.
    let config = RuntimeConfig {
        cache_dir: None,
        ..RuntimeConfig::default()
    };
    let runtime = WasmRuntime::new(config).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(file).map_err(|e| e.to_string())?;
    let source = ToolSource::File(file.to_path_buf());
    let with = (runtime.with_specs_section(source, bytes).await).map_err(|e| e.to_string())?;
    let mut temp = tempfile::NamedTempFile::new_in(crate::whole_file::folder_of(file))
        .map_err(|e| e.to_string())?;
    std::io::Write::write_all(&mut temp, &with).map_err(|e| e.to_string())?;
    let permissions = std::fs::metadata(file).map_err(|e| e.to_string())?;
    std::fs::set_permissions(temp.path(), permissions.permissions()).map_err(|e| e.to_string())?;
    crate::whole_file::replace(temp, file).map_err(|e| e.to_string())
}
