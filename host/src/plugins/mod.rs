//! The plugins side: where plugins are (a folder, or the examples built into piton),
//! reading their components, what a load protects from the tools' own grants, and
//! watching a folder for changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::config::pins::{Pin, Pins};
use crate::config::values::env_path;
use crate::error::{LoadError, LoadErrorKind};
use crate::protected::Protected;
use crate::source::ToolSource;
use crate::supply::at_load::{self, Judged};
use crate::supply::lock::{LOCK_FILE, Lock};
use crate::upstream::{StdioCommand, UpstreamConnect};
use crate::wasm::{LoadFrom, RuntimeConfig, Sections, WasmRuntime, WasmTool};

mod entry;
#[cfg(test)]
mod tests;
mod watch;
pub use watch::{FolderWatch, Watched};

/// Where the plugins come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginsAt {
    /// Every `*.wasm` file in a folder.
    Folder(PathBuf),
    /// The examples built into this binary.
    Bundled,
}

impl PluginsAt {
    /// The CLI's rule: `flag`, else `$PITON_PLUGINS`, else `./plugins` if it holds
    /// `.wasm` files, else the bundled examples.
    pub fn resolve(flag: Option<PathBuf>) -> Self {
        if let Some(dir) = flag.or_else(|| env_path("PITON_PLUGINS")) {
            return Self::Folder(dir);
        }
        let local = Path::new("plugins");
        if wasm_files(local).is_ok_and(|files| !files.is_empty()) {
            return Self::Folder(local.to_path_buf());
        }
        Self::Bundled
    }

    /// The CLI's rule for piton.toml: `flag`, else `$PITON_CONFIG`, else `piton.toml`
    /// in the plugins folder, else `./piton.toml`; `None` when there is none.
    pub fn config_file(&self, flag: Option<PathBuf>) -> Option<PathBuf> {
        if let Some(file) = flag.or_else(|| env_path("PITON_CONFIG")) {
            return Some(file);
        }
        let beside = match self {
            Self::Folder(folder) => Some(folder.join("piton.toml")),
            Self::Bundled => None,
        };
        beside
            .into_iter()
            .chain([PathBuf::from("piton.toml")])
            .find(|file| file.is_file())
    }
}

/// Why a plugins folder could not be read at all.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the plugins folder {}: {source}; pass --plugins DIR or set PITON_PLUGINS", .folder.display())]
pub struct FolderError {
    /// The folder.
    pub folder: PathBuf,
    /// The reason.
    pub source: std::io::Error,
}

/// What a load from `at` with `config` on `runtime` protects (see [`Protected`]):
/// the plugins folder (with the bundled examples, `./plugins`, which a later start
/// would load), every config file on the lookup path whether it exists or not
/// (`config`'s own file, `$PITON_CONFIG`, `piton.toml` in the plugins folder,
/// `./piton.toml`), the compile cache (the runtime's and the default one), and what
/// each `[mcp.*]` stdio server runs: the files its command line names, its program
/// found on `PATH`, and the folder given as its `cwd` (the modules a script imports
/// from beside it).
pub fn protected(at: &PluginsAt, config: &Config, runtime: &WasmRuntime) -> Protected {
    let mut protected = Protected::new();
    match at {
        PluginsAt::Folder(folder) => {
            protected.add("the plugins folder", folder);
            protected.add("the config file", &folder.join("piton.toml"));
        }
        PluginsAt::Bundled => protected.add("the plugins folder", Path::new("plugins")),
    }
    let files = config
        .file
        .clone()
        .into_iter()
        .chain(env_path("PITON_CONFIG"))
        .chain([PathBuf::from("piton.toml")]);
    for file in files {
        protected.add("the config file", &file);
        protected.add("the lock file", &file.with_file_name(LOCK_FILE));
    }
    let caches = runtime
        .cache_dir()
        .map(Path::to_path_buf)
        .into_iter()
        .chain(RuntimeConfig::default_cache_dir());
    for cache in caches {
        protected.add("the compile cache", &cache);
    }
    for (name, server) in &config.mcp {
        if let UpstreamConnect::Stdio(command) = &server.connect {
            for file in command_files(command) {
                protected.add(&format!("a file [mcp.{name}] runs"), &file);
            }
            if let Some(program) = on_path(command) {
                protected.add(&format!("the program [mcp.{name}] runs"), &program);
            }
            // Where it runs: a script finds the modules it imports there.
            if let Some(cwd) = &command.cwd {
                protected.add(&format!("the folder [mcp.{name}] runs in"), cwd);
            }
        }
    }
    protected
}

/// The file an upstream stdio server's program is, when it is a bare name found on
/// its `PATH` (its `env`'s, else piton's), as the system finds it at start.
fn on_path(command: &StdioCommand) -> Option<PathBuf> {
    let program = Path::new(&command.program);
    if program.components().count() != 1 {
        return None;
    }
    let path = match command.env.get("PATH") {
        Some(path) => std::ffi::OsString::from(path),
        None => std::env::var_os("PATH")?,
    };
    let base = command.cwd.clone().unwrap_or_default();
    std::env::split_paths(&path)
        .map(|folder| base.join(folder).join(program))
        .find(|file| is_program(file))
}

#[cfg(unix)]
fn is_program(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(file)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_program(file: &Path) -> bool {
    file.is_file()
}

/// The files an upstream stdio server's command line names: its program when given as a
/// path, and each argument naming an existing file (`python server.py`), relative to its
/// `cwd`. Whoever rewrites one runs code as piton at the next connect.
fn command_files(command: &StdioCommand) -> Vec<PathBuf> {
    let base = command.cwd.clone().unwrap_or_default();
    let program = Path::new(&command.program);
    let program = (program.components().count() > 1).then(|| base.join(program));
    let args = command
        .args
        .iter()
        .map(|arg| base.join(arg))
        .filter(|path| path.is_file());
    program.into_iter().chain(args).collect()
}

/// Reads every component of `at` as its tools, all at once, in file-name order (a
/// plugins folder) or name order (the bundled examples): each is its tools (one for
/// a `plugin`, several for a `toolbox-plugin`) or the reason it did not load. A file
/// that `config` pins is refused, unread by the engine, when its digest is another;
/// so is a file a tool of `config` could change through a link (see
/// `plugins/entry.rs`). Tool pins and the rest of piton.toml are applied by
/// [`Loader`](crate::loader::Loader).
pub async fn read(
    runtime: &WasmRuntime,
    at: &PluginsAt,
    config: &Config,
) -> Result<Vec<Result<Vec<WasmTool>, LoadError>>, FolderError> {
    read_locked(runtime, at, config, &BTreeMap::new(), &Lock::default()).await
}

/// [`read`], each file that `locked` (piton.lock's pins, by file name) names refused,
/// unread by the engine, when its digest is not the one recorded; and each file
/// piton.toml's `[trust]` refuses, with `lock`'s signers (see
/// [`crate::supply::at_load`]).
pub async fn read_locked(
    runtime: &WasmRuntime,
    at: &PluginsAt,
    config: &Config,
    locked: &BTreeMap<String, Pin>,
    lock: &Lock,
) -> Result<Vec<Result<Vec<WasmTool>, LoadError>>, FolderError> {
    // Every component's specs first, on baseline code where the cache lacks its
    // optimised code; the optimised compiles after (see wasm/optimise.rs).
    let _held = runtime.hold_optimising();
    Ok(match at {
        PluginsAt::Folder(folder) => {
            let files = wasm_files(folder).map_err(|source| FolderError {
                folder: folder.clone(),
                source,
            })?;
            for line in at_load::not_recorded(&files, lock) {
                tracing::info!("{line}");
            }
            let judged = at_load::judge(&files, lock, &config.trust);
            load_judged(runtime, files, judged, config, locked).await
        }
        PluginsAt::Bundled => {
            let loads = crate::bundled::plugins().iter().map(|(name, bytes)| {
                let runtime = runtime.clone();
                let source = ToolSource::Bundled((*name).to_owned());
                let load_source = source.clone();
                (source, async move {
                    runtime
                        .load(LoadFrom::Bytes(load_source, bytes.to_vec()), None)
                        .await
                })
            });
            on_every_core(loads).await
        }
    })
}

/// Loads each of `files` as the trust policy `judged` it (see [`at_load::judge`]):
/// a refused file is not read by the engine, a file whose signature verified loads
/// only with the bytes verified; every pin of piton.toml and of `locked` holds too.
async fn load_judged(
    runtime: &WasmRuntime,
    files: Vec<PathBuf>,
    mut judged: BTreeMap<String, Judged>,
    config: &Config,
    locked: &BTreeMap<String, Pin>,
) -> Vec<Result<Vec<WasmTool>, LoadError>> {
    let pins: &Pins = &config.pins;
    let check = entry::check(config);
    let loads = files.into_iter().map(|file| {
        let runtime = runtime.clone();
        let source = ToolSource::File(file.clone());
        let name = file.file_name().and_then(|name| name.to_str());
        let (untrusted, verified) = match name.and_then(|name| judged.remove(name)) {
            Some(Judged::Refused(why)) => (Some(why), None),
            Some(Judged::Verified(pin)) => (None, Some(pin)),
            None => (None, None),
        };
        let lock_pin = name.and_then(|name| locked.get(name)).cloned();
        let pins: Vec<Pin> = (pins.file(&file).into_iter())
            .chain(lock_pin)
            .chain(verified)
            .collect();
        let check = check.clone();
        let plugin = source.clone();
        (source, async move {
            if let Some(why) = untrusted {
                return Err(LoadError {
                    plugin,
                    kind: LoadErrorKind::Untrusted(why),
                });
            }
            let pins: Vec<&Pin> = pins.iter().collect();
            runtime
                .load_file_checked(&file, &pins, Some(check), Sections::Believed)
                .await
        })
    });
    on_every_core(loads).await
}

/// Runs each load as a task of its own, so that their work outside the blocking pool
/// (checking a component against the linker, reading its specs in an instance) is
/// spread over every worker thread instead of taking turns in one; the results in the
/// order given. A load that panics is reported as its plugin's error.
async fn on_every_core<F>(
    loads: impl Iterator<Item = (ToolSource, F)>,
) -> Vec<Result<Vec<WasmTool>, LoadError>>
where
    F: std::future::Future<Output = Result<Vec<WasmTool>, LoadError>> + Send + 'static,
{
    let tasks: Vec<_> = loads
        .map(|(source, load)| (source, tokio::spawn(load)))
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for (source, task) in tasks {
        results.push(task.await.unwrap_or_else(|e| {
            Err(LoadError {
                plugin: source,
                kind: LoadErrorKind::Io(std::io::Error::other(format!(
                    "loading it failed in piton: {e}"
                ))),
            })
        }));
    }
    results
}

/// The component bytes of the bundled example `package` (e.g. `"word-count"`).
pub fn bundled_bytes(package: &str) -> Option<&'static [u8]> {
    crate::bundled::plugins()
        .iter()
        .find(|(name, _)| *name == package)
        .map(|(_, bytes)| *bytes)
}

/// The `*.wasm` entries directly in `folder`, sorted by name: files, and folders
/// so named (each reported as a load error rather than skipped in silence).
fn wasm_files(folder: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|ext| ext == "wasm") && (path.is_file() || path.is_dir())
        })
        .collect();
    files.sort();
    Ok(files)
}
