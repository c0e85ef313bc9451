//! The library's one way in: a [`Loader`] turns a plugins folder (or the bundled
//! examples), its piton.toml and the `[mcp.*]` servers it names into a
//! [`Registry`], and loads it again when they change. The CLI, `serve`'s reload and
//! a Rust program all use it.
//!
//! A reload keeps what is costly to make: the wasm runtime (engine, pooling
//! allocator, epoch thread, compile cache) and the connections of upstream servers
//! whose `[mcp.NAME]` section did not change.
//!
//! ```no_run
//! use piton_host::loader::Loader;
//! use piton_host::plugins::PluginsAt;
//! use piton_host::wasm::{RuntimeConfig, WasmRuntime};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = WasmRuntime::new(RuntimeConfig::default())?;
//! // plugins/piton.toml if there is one; `with_config_file` names another file.
//! let loader = Loader::new(runtime, PluginsAt::Folder("plugins".into()));
//! let loaded = loader.load().await?; // Err: the folder or piton.toml cannot be used
//! for error in &loaded.errors {
//!     eprintln!("not loaded: {error}");
//! }
//! let result = loaded
//!     .registry
//!     .call("word_count", serde_json::json!({"text": "a b c"}))
//!     .await?; // Err: the call stops the run (a trap)
//! match result {
//!     Ok(content) => println!("{}", content[0].to_model_text()), // "3"
//!     Err(error) => println!("{error}"), // an error result the model sees
//! }
//! loader.close().await; // ends upstream servers' connections and processes
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::code::interpreter::Interpreter;
use crate::config::audit::AuditSettings;
use crate::config::tracing::TracingSettings;
use crate::config::{Config, ConfigError};
use crate::error::{LoadError, LoadErrorKind};
use crate::group::ToolGroup as _;
use crate::limits::{format_size, format_size_about};
use crate::load_pins::{file_name, tool_pins_hold};
use crate::name_claims;
use crate::observe::{ObserveError, Observer};
use crate::plugins::{self, FolderError, PluginsAt, Watched};
use crate::protected::Protected;
use crate::registry::Registry;
use crate::source::ToolSource;
use crate::supply::lock::{Lock, LockError, lock_file};
use crate::tool::Tool as _;
use crate::upstream::{UpstreamConfig, UpstreamServer};
use crate::wasm::{RuntimeConfig, RuntimeError, WasmRuntime, WasmTool};

/// Where a [`Loader`] gets piton.toml from; a file is read anew at every load.
#[derive(Clone, Debug)]
enum ConfigFrom {
    /// `piton.toml` in the plugins folder, if there is one (none for the bundled
    /// examples). Nothing from the environment or the working folder.
    Beside,
    /// The CLI's lookup (see [`PluginsAt::config_file`]): this file if given, else
    /// `$PITON_CONFIG`, `piton.toml` in the plugins folder, `./piton.toml`.
    Lookup(Option<PathBuf>),
    /// This file.
    File(PathBuf),
    /// A configuration the program made.
    Given(Box<Config>),
}

/// The tables an [`Observer`] was made from.
type ObserveSettings = (AuditSettings, TracingSettings);

/// Loads the tools of a plugins folder, its piton.toml and its upstream servers into
/// a [`Registry`], as often as asked.
pub struct Loader {
    runtime: WasmRuntime,
    at: PluginsAt,
    config: ConfigFrom,
    /// The upstream servers made so far, by name, with the section each came from:
    /// the same section gives the same server (one connection) at the next load.
    upstreams: Mutex<BTreeMap<String, (UpstreamConfig, UpstreamServer)>>,
    /// Whether the runtime was sized from piton.toml's `[runtime]` table (the CLI),
    /// so that a table removed since is a change too; else the program sized it.
    sized_by_config: bool,
    /// The metrics, audit log and spans of every registry loaded, made at the first
    /// load from its `[audit]` and `[tracing]` tables, with those tables.
    observer: Mutex<Option<(ObserveSettings, Arc<Observer>)>>,
    /// With it (`piton serve`), every registry asks the person before the calls
    /// piton.toml's `[approve]` names.
    consent: Option<crate::consent::Keeper>,
    /// Whether every registry has code mode's tool, whatever `[code] enabled` says
    /// (`serve --code-mode`).
    code_mode: bool,
    /// Code mode's interpreter, compiled at the first load that needs it.
    interpreter: tokio::sync::OnceCell<Arc<Interpreter>>,
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("plugins", &self.at)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What one load gave: the registry, and what did not make it in.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Loaded {
    /// Every tool and upstream server that loaded.
    pub registry: Registry,
    /// Every plugin that did not load, with the reason.
    pub errors: Vec<LoadError>,
    /// Every `[mcp.NAME]` server that was not added, with the reason.
    pub server_errors: Vec<LoadError>,
    /// `[tools.NAME]` sections of piton.toml that match no tool any component read
    /// declares (those with a `sha256` pin are in `warnings` instead).
    pub unused_config: Vec<String>,
    /// Settings read but not in effect, such as a `[runtime]` table changed since the
    /// runtime was made, a pin of a file or tool that is not there, or a compile
    /// cache over its `max_size` with what this load uses.
    pub warnings: Vec<String>,
}

/// Why nothing could be loaded at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoaderError {
    /// piton.toml cannot be read or used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The plugins folder cannot be read.
    #[error(transparent)]
    Folder(#[from] FolderError),
    /// The metrics or the audit log cannot be set up.
    #[error("{0}")]
    Observe(String),
    /// The key that seals approvals cannot be had (piton.toml `[approve]`).
    #[error("{0}")]
    Approve(String),
    /// piton.lock cannot be read or used: nothing is loaded, since what it records
    /// cannot be checked.
    #[error(transparent)]
    Lock(#[from] LockError),
}

impl Loader {
    /// Loads from `at` on `runtime`, with the `piton.toml` in the plugins folder if
    /// there is one. Unlike the CLI, it reads nothing from the environment
    /// (`$PITON_CONFIG`) or the working folder: a program chooses its configuration
    /// ([`Loader::with_config_file`], [`Loader::with_config`]).
    pub fn new(runtime: WasmRuntime, at: PluginsAt) -> Self {
        Self {
            runtime,
            at,
            config: ConfigFrom::Beside,
            upstreams: Mutex::new(BTreeMap::new()),
            sized_by_config: false,
            observer: Mutex::new(None),
            consent: None,
            code_mode: false,
            interpreter: tokio::sync::OnceCell::new(),
        }
    }

    /// The CLI's loader: the plugins folder from `plugins`, else `$PITON_PLUGINS`,
    /// else `./plugins` if it holds `.wasm` files, else the bundled examples (see
    /// [`PluginsAt::resolve`]); piton.toml from `config` if given, else looked up;
    /// the runtime sized by piton.toml's `[runtime]` table as it is now (a reload
    /// keeps the runtime: a later change of the table takes effect at restart).
    pub fn from_flags(
        plugins: Option<PathBuf>,
        config: Option<PathBuf>,
    ) -> Result<Self, RuntimeError> {
        let at = PluginsAt::resolve(plugins);
        // A file that does not parse sizes nothing here: the first load reports it.
        let settings = at
            .config_file(config.clone())
            .and_then(|file| Config::load(&file).ok())
            .map(|config| config.runtime)
            .unwrap_or_default();
        let runtime = WasmRuntime::new(RuntimeConfig::default().with_settings(&settings))?;
        let mut loader = Self::new(runtime, at);
        loader.config = ConfigFrom::Lookup(config);
        loader.sized_by_config = true;
        Ok(loader)
    }

    /// Reads piton.toml from `file` at every load.
    #[must_use]
    pub fn with_config_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.config = ConfigFrom::File(file.into());
        self
    }

    /// Gives every registry loaded the consent policy of its piton.toml's
    /// `[approve]` (see [`Registry::call_asking`](crate::registry::Registry::call_asking)),
    /// kept by `keeper` across loads.
    #[must_use]
    pub fn with_consent(mut self, keeper: crate::consent::Keeper) -> Self {
        self.consent = Some(keeper);
        self
    }

    /// Gives every registry loaded code mode's tool (see [`crate::code`]), as
    /// piton.toml's `[code] enabled = true` does; the rest of `[code]` still applies.
    #[must_use]
    pub fn with_code_mode(mut self) -> Self {
        self.code_mode = true;
        self
    }

    /// Uses `config` at every load instead of reading piton.toml.
    #[must_use]
    pub fn with_config(mut self, config: Config) -> Self {
        self.config = ConfigFrom::Given(Box::new(config));
        self
    }

    /// The runtime every wasm tool runs on.
    pub fn runtime(&self) -> &WasmRuntime {
        &self.runtime
    }

    /// Where the plugins come from.
    pub fn plugins(&self) -> &PluginsAt {
        &self.at
    }

    /// The piton.toml a load reads now, if any.
    pub fn config_file(&self) -> Option<PathBuf> {
        match &self.config {
            ConfigFrom::Beside => match &self.at {
                PluginsAt::Folder(folder) => {
                    Some(folder.join("piton.toml")).filter(|file| file.is_file())
                }
                PluginsAt::Bundled => None,
            },
            ConfigFrom::Lookup(flag) => self.at.config_file(flag.clone()),
            ConfigFrom::File(file) => Some(file.clone()),
            ConfigFrom::Given(config) => config.file.clone(),
        }
    }

    /// The piton.lock a load holds the plugins folder to: beside the config file,
    /// else in the plugins folder (see [`lock_file`]); `None` for the bundled examples.
    pub fn lock_file(&self) -> Option<PathBuf> {
        let PluginsAt::Folder(folder) = &self.at else {
            return None;
        };
        lock_file(self.config_file().as_deref(), Some(folder))
    }

    /// What to watch for changes that call for a reload: the plugins folder and the
    /// config file; `None` for the bundled examples, which cannot change.
    pub fn watched(&self) -> Option<Watched> {
        match &self.at {
            PluginsAt::Folder(folder) => Some(Watched {
                folder: folder.clone(),
                files: self
                    .config_file()
                    .into_iter()
                    .chain(self.lock_file())
                    .collect(),
            }),
            PluginsAt::Bundled => None,
        }
    }

    /// Loads everything: piton.toml, then its upstream servers (first, so that a
    /// wasm tool in a server's `{server}__` name space is the one refused), then
    /// every plugin with its `[tools.NAME]` settings. A plugin or server that fails
    /// is reported in [`Loaded`] and the rest still load; a tool granted "write" on a
    /// place piton loads or trusts ([`plugins::protected`]) is not loaded, nor is a
    /// component whose digest is not the one piton.toml pins for its file or for one
    /// of its tools (see [`crate::config::pins`]), nor one whose digest is not the
    /// one piton.lock records for its file (see [`crate::supply::lock`]; a lock that
    /// cannot be read stops the load), nor a tool whose name another file
    /// declares too (see [`crate::name_claims`]). Then the compile cache is trimmed:
    /// see [`WasmRuntime::trim_cache`]. Optimised compiles start once it returns.
    pub async fn load(&self) -> Result<Loaded, LoaderError> {
        // Held for the whole load, not only the read: on 2 cores they slowed the rest
        // of it several times over (docs/performance.md, "Where a start ... waited").
        let _held = self.runtime.hold_optimising();
        let started = std::time::SystemTime::now();
        let config = self.read_config()?;
        let mut loaded = Loaded::default();
        let observer = self.observer_for(&config, &mut loaded.warnings)?;
        loaded.warnings.extend(self.runtime_not_as_set(&config));
        for server in self.upstreams_of(&config) {
            let added = server.and_then(|server| loaded.registry.add_group(server));
            if let Err(error) = added {
                loaded.server_errors.push(error);
            }
        }
        let protected = plugins::protected(&self.at, &config, &self.runtime);
        let (mut files, mut named, mut read_tools) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
        let (lock, locked) = match self.lock_file() {
            Some(file) => {
                let lock = Lock::load(&file)?;
                let pins = lock.pins(&file);
                (lock, pins)
            }
            None => (Lock::default(), BTreeMap::new()),
        };
        for read in plugins::read_locked(&self.runtime, &self.at, &config, &locked, &lock).await? {
            let tools = match read {
                Ok(tools) => tools,
                Err(error) => {
                    files.extend(file_name(&error.plugin));
                    loaded.errors.push(error);
                    continue;
                }
            };
            files.extend(tools.first().and_then(|tool| file_name(&tool.source())));
            named.extend(tools.iter().map(|tool| tool.spec().name.clone()));
            if let Err(error) = tool_pins_hold(&tools, &config.pins) {
                loaded.errors.push(error);
                continue;
            }
            read_tools.extend(tools);
        }
        // A name two files declare is neither's (see name_claims), before any
        // [tools.NAME] grant is applied, and after its renames.
        let bound = (config.tools.iter())
            .filter_map(|(name, settings)| Some((name.clone(), settings.from.clone()?)))
            .collect();
        let (tools, refused) = name_claims::by_declared_name(read_tools, &bound, &files);
        loaded.errors.extend(refused);
        let mut configured = Vec::with_capacity(tools.len());
        let mut modes = BTreeMap::new();
        for tool in tools {
            let mode = (config.tools.get(&tool.spec().name)).and_then(|settings| settings.approve);
            match self.configured(tool, &config, &protected) {
                Ok(tool) => {
                    modes.extend(mode.map(|mode| (tool.spec().name.clone(), mode)));
                    configured.push(tool);
                }
                Err(error) => loaded.errors.push(error),
            }
        }
        if let Some(keeper) = &self.consent {
            let consent = (keeper.consent(&config.approve, modes, &mut loaded.warnings)).map_err(
                |message| {
                    let file = self.config_file().unwrap_or_else(|| "piton.toml".into());
                    LoaderError::Approve(format!("{}: {message}", file.display()))
                },
            )?;
            loaded.registry.set_consent(Arc::new(consent));
        }
        let (tools, refused) = name_claims::by_served_name(configured);
        loaded.errors.extend(refused);
        for tool in tools {
            if let Err(error) = loaded.registry.add(tool) {
                loaded.errors.push(error);
            }
        }
        // In file order, each file's errors in the order found.
        loaded.errors.sort_by_key(|error| error.plugin.to_string());
        loaded.unused_config = config
            .tools
            .keys()
            .filter(|name| !named.contains(*name) && !config.pins.tools.contains_key(*name))
            .cloned()
            .collect();
        loaded.warnings.extend(crate::load_pins::pins_not_found(
            &self.at,
            &config.pins,
            &files,
            &named,
        ));
        if config.code.enabled || self.code_mode {
            let added = crate::code::setup::add_code_tool(
                &self.runtime,
                &self.interpreter,
                &config.code,
                &mut loaded.registry,
            )
            .await;
            match added {
                Ok(warnings) => loaded.warnings.extend(warnings),
                Err(error) => loaded.errors.push(error),
            }
        }
        loaded
            .warnings
            .extend(self.trim_cache(started, config.cache.max_size).await);
        loaded.registry.set_observer(observer);
        Ok(loaded)
    }

    /// The observer every registry of this loader reports to: made at the first
    /// load from `config`'s `[audit]` and `[tracing]` tables (opening the audit log,
    /// starting the span exporter), kept after. A table changed since is a warning:
    /// it takes effect at restart.
    fn observer_for(
        &self,
        config: &Config,
        warnings: &mut Vec<String>,
    ) -> Result<Arc<Observer>, LoaderError> {
        let mut made = self.observer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(((audit, tracing), observer)) = &*made {
            for (changed, table) in [
                (*audit != config.audit, "audit"),
                (*tracing != config.tracing, "tracing"),
            ] {
                if changed {
                    warnings.push(format!(
                        "piton.toml [{table}] takes effect when piton starts, not at a \
                         reload; restart piton to apply it"
                    ));
                }
            }
            return Ok(observer.clone());
        }
        let observer = Observer::new(&config.audit, &config.tracing, self.runtime.cache_counts())
            .map_err(|e| {
            let file = self.config_file().unwrap_or_else(|| "piton.toml".into());
            LoaderError::Observe(match e {
                ObserveError::Audit { .. } => format!(
                    "{}: audit.to: {e}; give a file piton can create or append to (its \
                     folder must exist), or to = \"stderr\"",
                    file.display()
                ),
                ObserveError::Tracing { .. } => format!(
                    "{}: tracing.otlp: {e}; check the collector's address, or leave `otlp` \
                     out",
                    file.display()
                ),
                other => other.to_string(),
            })
        })?;
        *made = Some((
            (config.audit.clone(), config.tracing.clone()),
            observer.clone(),
        ));
        Ok(observer)
    }

    /// The observer of the registries loaded so far (none before the first load):
    /// their metrics, and the audit log.
    pub fn observer(&self) -> Option<Arc<Observer>> {
        let made = self.observer.lock().unwrap_or_else(PoisonError::into_inner);
        made.as_ref().map(|(_, observer)| observer.clone())
    }

    /// Trims the compile cache to `max_size` (see [`WasmRuntime::trim_cache`]),
    /// keeping what was used since `started`; a warning when that alone is over it.
    async fn trim_cache(&self, started: std::time::SystemTime, max_size: u64) -> Option<String> {
        let runtime = self.runtime.clone();
        let trimmed = tokio::task::spawn_blocking(move || runtime.trim_cache(started, max_size))
            .await
            .ok()??;
        if trimmed.removed > 0 {
            tracing::info!(
                removed = trimmed.removed,
                freed = %format_size_about(trimmed.freed),
                "compile cache: removed entries unused for a week, or used longest ago \
                 while over max_size"
            );
        }
        (trimmed.kept > max_size).then(|| {
            format!(
                "the compile cache holds {} of plugins this load uses, over piton.toml's \
                 [cache] max_size of {}; raise max_size so that they stay cached",
                format_size_about(trimmed.kept),
                format_size_about(max_size)
            )
        })
    }

    /// `tool` with its `[tools.NAME]` settings of `config`, if any; an error when they
    /// do not apply or grant a protected place.
    fn configured(
        &self,
        tool: WasmTool,
        config: &Config,
        protected: &Protected,
    ) -> Result<WasmTool, LoadError> {
        let Some(settings) = config.tools.get(&tool.spec().name) else {
            return self.fits_the_pool(tool);
        };
        let name = tool.spec().name.clone();
        let source = tool.source();
        let invalid = |message: String| LoadError {
            plugin: source.clone(),
            kind: LoadErrorKind::Invalid(format!("piton.toml [tools.{name}]: {message}")),
        };
        let tool = tool
            .configured(settings)
            .map_err(|e| invalid(e.to_string()))?;
        protected
            .check(tool.grants())
            .map_err(|e| invalid(e.to_string()))?;
        self.fits_the_pool(tool)
    }

    /// `tool`, unless its memory limit is over the most the runtime's pool gives one
    /// memory: growing past that would fail as the guest's own fault, not as its
    /// limit.
    fn fits_the_pool(&self, tool: WasmTool) -> Result<WasmTool, LoadError> {
        let most = self.runtime.config().max_memory;
        let memory = tool.limits().memory;
        if memory <= most {
            return Ok(tool);
        }
        let name = &tool.spec().name;
        Err(LoadError {
            plugin: tool.source(),
            kind: LoadErrorKind::Invalid(format!(
                "its memory limit of {} is over piton.toml's [runtime] max_memory of {}, \
                 the most any tool may have; lower [tools.{name}] memory or raise max_memory",
                format_size(memory),
                format_size(most),
            )),
        })
    }

    /// What of `config`'s `[runtime]` table the runtime does not run with: it is
    /// sized once, so a change shows only after a restart.
    fn runtime_not_as_set(&self, config: &Config) -> Option<String> {
        let running = self.runtime.config();
        let base = if self.sized_by_config {
            RuntimeConfig {
                cache_dir: running.cache_dir.clone(),
                ..RuntimeConfig::default()
            }
        } else {
            running.clone()
        };
        let differ = base.with_settings(&config.runtime).differences(running);
        (!differ.is_empty()).then(|| {
            format!(
                "piton.toml [runtime] takes effect when piton starts, not at a reload: {}; \
                 restart piton to apply it",
                differ.join(", ")
            )
        })
    }

    /// Closes every upstream server's connection, so stdio servers and their process
    /// groups end before the program does (dropping them at exit would leave that to
    /// a task that never runs), and waits (a few seconds at most) until the audit
    /// records of calls that have ended are written. A later load connects again.
    pub async fn close(&self) {
        let servers: Vec<UpstreamServer> = self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|(_, server)| server.clone())
            .collect();
        futures::future::join_all(servers.iter().map(|server| server.close())).await;
        // The records of calls that ended are written before the program ends.
        if let Some(observer) = self.observer() {
            let _ = tokio::task::spawn_blocking(move || observer.flush()).await;
        }
    }

    fn read_config(&self) -> Result<Config, ConfigError> {
        match (&self.config, self.config_file()) {
            (ConfigFrom::Given(config), _) => Ok(Config::clone(config)),
            (_, Some(file)) => Config::load(&file),
            (_, None) => Ok(Config::default()),
        }
    }

    /// The upstream servers `config` describes, by name: the server made at an
    /// earlier load for an unchanged section (one connection), a new one for a new
    /// or changed section. Servers whose sections are gone are forgotten: they end
    /// when the last registry holding them does.
    fn upstreams_of(&self, config: &Config) -> Vec<Result<UpstreamServer, LoadError>> {
        let mut known = self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        known.retain(|name, _| config.mcp.contains_key(name));
        config
            .mcp
            .iter()
            .map(|(name, section)| {
                if let Some((was, server)) = known.get(name)
                    && was == section
                {
                    return Ok(server.clone());
                }
                let server = UpstreamServer::from_config(name, section).map_err(|e| LoadError {
                    plugin: ToolSource::Mcp(name.clone()),
                    kind: LoadErrorKind::Invalid(e.problem.to_string()),
                })?;
                known.insert(name.clone(), (section.clone(), server.clone()));
                Ok(server)
            })
            .collect()
    }
}
