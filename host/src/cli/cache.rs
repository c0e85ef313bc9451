//! `piton cache`: where the compile cache is and what it holds; `piton cache clean`
//! removes every entry. Only files named as piton names its entries are counted or
//! removed (see [`crate::wasm::cache`]).

use std::io::{self, Write};

use clap::Subcommand;

use super::out::Outcome;
use crate::config::cache::DEFAULT_MAX_SIZE;
use crate::limits::{format_size, format_size_about};
use crate::wasm::RuntimeConfig;
use crate::wasm::cache::{self, MAX_UNUSED, Usage};

/// What `piton cache` does.
#[derive(Debug, Subcommand)]
pub(super) enum CacheAction {
    /// Remove every compiled component and kept specs from the cache (the next load
    /// compiles what it needs again); other files in the folder are left alone.
    Clean,
}

pub(super) fn cache(action: Option<CacheAction>) -> io::Result<Outcome> {
    let Some(dir) = RuntimeConfig::default_cache_dir() else {
        eprintln!(
            "error: no compile cache: set PITON_CACHE_DIR (or XDG_CACHE_HOME or HOME) to \
             say where it is"
        );
        return Ok(Outcome::Usage);
    };
    let mut out = io::stdout().lock();
    match action {
        None => match cache::usage(&dir) {
            Ok(Usage {
                entries,
                specs,
                bytes,
            }) => {
                writeln!(out, "compile cache: {}", dir.display())?;
                writeln!(
                    out,
                    "entries:       {entries} ({}, with {specs} components' kept specs)",
                    format_size_about(bytes)
                )?;
                writeln!(
                    out,
                    "Each load removes the entries no load used for {} days, and trims the \
                     cache to piton.toml's [cache] max_size (default {}), the entries used \
                     longest ago first. `piton cache clean` removes them all.",
                    MAX_UNUSED.as_secs() / 86_400,
                    format_size(DEFAULT_MAX_SIZE)
                )?;
                if dir.exists()
                    && let Err(e) = cache::check_private(&dir)
                {
                    eprintln!("warning: {e}");
                }
                Ok(Outcome::Success)
            }
            Err(e) => {
                eprintln!(
                    "error: cannot read the compile cache {}: {e}",
                    dir.display()
                );
                Ok(Outcome::Stopped)
            }
        },
        Some(CacheAction::Clean) => match cache::clean(&dir) {
            Ok(cleaned) => {
                for (path, e) in &cleaned.failed {
                    eprintln!("warning: cannot remove {}: {e}", path.display());
                }
                writeln!(
                    out,
                    "removed {} compiled component{} and {} kept specs ({}) from {}",
                    cleaned.removed,
                    if cleaned.removed == 1 { "" } else { "s" },
                    cleaned.removed_specs,
                    format_size_about(cleaned.freed),
                    dir.display()
                )?;
                Ok(if cleaned.failed.is_empty() {
                    Outcome::Success
                } else {
                    Outcome::Stopped
                })
            }
            Err(e) => {
                eprintln!(
                    "error: cannot read the compile cache {}: {e}",
                    dir.display()
                );
                Ok(Outcome::Stopped)
            }
        },
    }
}
