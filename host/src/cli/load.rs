//! `--plugins` and `--config`, and loading the tools they name through the library's
//! [`Loader`], with what did not load reported on stderr.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::out::say;
use crate::loader::{Loader, LoaderError};
use crate::registry::Registry;
use crate::term::{ProgressLine, progress_text};
use crate::wasm::WasmRuntime;

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
/// Components the cache lacks are compiled meanwhile, with a progress bar when
/// stderr is a terminal.
pub(super) async fn load(loader: &Loader) -> Option<Registry> {
    load_reported(loader).await.ok()
}

/// [`load`], giving why nothing could be loaded (said on stderr too): how `serve`'s
/// [`Server`](crate::serve::Server) loads, at start and at every reload.
pub(super) async fn load_reported(loader: &Loader) -> Result<Registry, LoaderError> {
    let loading = loader.load();
    let loaded = match ProgressLine::on_stderr() {
        Some(line) => with_progress(loader.runtime(), line, loading).await,
        None => loading.await,
    };
    match loaded {
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
            Ok(loaded.registry)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Err(e)
        }
    }
}

/// Runs `loading`, showing on `line` how far the compiles it asks of `runtime` are,
/// and when it is done how many there were and how long they took. A load that finds
/// every component in the cache shows nothing.
async fn with_progress<T>(
    runtime: &WasmRuntime,
    mut line: ProgressLine,
    loading: impl std::future::Future<Output = T>,
) -> T {
    let before = runtime.compiles();
    let started = std::time::Instant::now();
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
    let mut loading = std::pin::pin!(loading);
    let result = loop {
        tokio::select! {
            result = &mut loading => break result,
            _ = tick.tick() => {
                let now = runtime.compiles();
                let asked = now.asked.saturating_sub(before.asked);
                if asked > 0 {
                    line.show(&progress_text("compiling plugins", now.done.saturating_sub(before.done), asked));
                }
            }
        }
    };
    line.clear();
    let asked = runtime.compiles().asked.saturating_sub(before.asked);
    if asked > 0 {
        eprintln!(
            "compiled {asked} plugin{} in {:.1} s; the next start takes them from the cache",
            if asked == 1 { "" } else { "s" },
            started.elapsed().as_secs_f64()
        );
    }
    result
}
