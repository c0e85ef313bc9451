//! `--plugins` and `--config`, and loading the tools they name through the library's
//! [`Loader`], with what did not load reported on stderr.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::out::say;
use crate::loader::{Loader, LoaderError};
use crate::registry::Registry;
use crate::wasm::{Compiles, WasmRuntime};

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
/// Components the cache lacks are compiled, optimised, before it returns (so the
/// command runs them optimised, and the next start finds them cached), with a
/// progress bar when stderr is a terminal.
pub(super) async fn load(loader: &Loader) -> Option<Registry> {
    let runtime = loader.runtime();
    let before = runtime.compiles();
    let refused = *runtime.specs_refused().borrow();
    let loaded = async {
        let mut loaded = loader.load().await;
        runtime.optimised().await;
        // Tools made from kept specs that their code contradicts refuse calls: load
        // them again, from their code, now in the cache.
        if *runtime.specs_refused().borrow() != refused {
            loaded = loader.load().await;
            runtime.optimised().await;
        }
        report(loaded)
    };
    let loaded = match compiles_bar() {
        Some(bar) => with_progress(runtime, before, bar, loaded).await,
        None => loaded.await,
    };
    loaded.ok()
}

/// [`load`] without waiting for the optimised compiles, giving why nothing could be
/// loaded (said on stderr too): how `serve`'s [`Server`](crate::serve::Server) loads,
/// at start and at every reload. Its tools answer on baseline code meanwhile; the
/// progress bar, on a terminal, follows the compiles in the background.
pub(super) async fn load_reported(loader: &Loader) -> Result<Registry, LoaderError> {
    let runtime = loader.runtime().clone();
    let before = runtime.compiles();
    let loaded = report(loader.load().await);
    if let Some(bar) = compiles_bar()
        && runtime.compiles().asked > before.asked
    {
        let following = runtime.clone();
        tokio::spawn(async move {
            with_progress(&following, before, bar, following.optimised()).await;
        });
    }
    loaded
}

/// Says on stderr what of `loaded` did not make it in, or why nothing did.
fn report(loaded: Result<crate::loader::Loaded, LoaderError>) -> Result<Registry, LoaderError> {
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

/// A progress bar for compiles on stderr, if stderr is a terminal: piped or captured
/// stderr (the tests', a log file's) never gets one, and it never goes to stdout,
/// which `piton serve` keeps for the protocol.
fn compiles_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let style = ProgressStyle::with_template("compiling plugins [{bar:20}] {pos}/{len} {elapsed}")
        .ok()?
        .progress_chars("#>·");
    Some(ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr()).with_style(style))
}

/// Runs `work`, showing on `bar` how far the compiles `runtime` was asked for since
/// `before` are, and when it is done how many there were and how long they took.
/// Work that compiles nothing shows nothing.
async fn with_progress<T>(
    runtime: &WasmRuntime,
    before: Compiles,
    bar: ProgressBar,
    work: impl std::future::Future<Output = T>,
) -> T {
    let started = Instant::now();
    let since = |now: Compiles| {
        (
            now.done.saturating_sub(before.done),
            now.asked.saturating_sub(before.asked),
        )
    };
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut work = std::pin::pin!(work);
    let result = loop {
        tokio::select! {
            result = &mut work => break result,
            _ = tick.tick() => {
                let (done, asked) = since(runtime.compiles());
                if asked > 0 {
                    bar.set_length(u64::from(asked));
                    bar.set_position(u64::from(done));
                }
            }
        }
    };
    bar.finish_and_clear();
    let (_, asked) = since(runtime.compiles());
    if asked > 0 {
        eprintln!(
            "compiled {asked} plugin{} in {:.1} s; the next start takes them from the cache",
            if asked == 1 { "" } else { "s" },
            started.elapsed().as_secs_f64()
        );
    }
    result
}
