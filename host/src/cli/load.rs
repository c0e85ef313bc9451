//! `--plugins` and `--config`, and loading the tools they name through the library's
//! [`Loader`], with what did not load reported on stderr.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::out::say;
use crate::loader::Loader;
use crate::registry::Registry;

#[derive(Debug, ClapArgs)]
pub(super) struct PluginsArg {
    /// The plugins folder. Default: $PITON_PLUGINS, else ./plugins if it holds .wasm
    /// files, else the examples built into piton.
    #[arg(long, value_name = "DIR")]
    pub(super) plugins: Option<PathBuf>,
    /// The grants and settings file. Default: $PITON_CONFIG, else piton.toml in the
    /// plugins folder, else ./piton.toml.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
}

/// The loader the flags describe, or `None` after saying why there is none.
pub(super) fn loader(arg: PluginsArg) -> Option<Loader> {
    match Loader::from_flags(arg.plugins, arg.config) {
        Ok(loader) => Some(loader),
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}

/// One load, with each server, plugin and piton.toml section that did not make it
/// in reported on stderr; `None` (after saying why) when nothing could be loaded.
pub(super) async fn load(loader: &Loader) -> Option<Registry> {
    match loader.load().await {
        Ok(loaded) => {
            for error in &loaded.server_errors {
                say(format_args!("warning: MCP server not added: {error}"));
            }
            for error in &loaded.errors {
                say(format_args!("warning: plugin not loaded: {error}"));
            }
            for warning in &loaded.warnings {
                eprintln!("warning: {warning}");
            }
            for name in &loaded.unused_config {
                eprintln!("warning: piton.toml has [tools.{name}] but no tool is called {name}");
            }
            Some(loaded.registry)
        }
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}
