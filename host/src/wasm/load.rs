//! Loading a component file as tools: compile (or take from the compile cache), find
//! which piton world it exports, and read its tools' specs and hints in an instance
//! with no capabilities. A `plugin` gives one tool; a `toolbox-plugin` gives one
//! [`WasmTool`] per tool it declares, all sharing one pre-linked component.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::Component;

use sha2::{Digest, Sha256};

use super::bindings::{self, PluginPre, ToolboxPluginPre};
use super::diagnose::{self, World};
use super::instance::{FUEL_EXHAUSTED, Instances, Pre, SPEC_FUEL, TOOLBOX_FUEL, from_wit_hints};
use super::runtime::WasmRuntime;
use super::tool::WasmTool;
use super::trap::{root_message, trap_text};
use crate::config::ToolConfig;
use crate::config::pins::Pin;
use crate::error::{LoadError, LoadErrorKind};
use crate::source::ToolSource;
use crate::tool::{ComponentInfo, ToolSpec};

/// The most tools one toolbox may declare.
const MAX_TOOLS: usize = 128;

/// What [`WasmRuntime::load`] loads: a component file, or a component's bytes.
#[derive(Clone, Debug)]
pub enum LoadFrom {
    /// A component file: hashed as it is read, and taken from the compile cache
    /// when the cache holds that hash. Listings and errors name the file.
    File(PathBuf),
    /// A component's bytes, and where they come from (which listings and errors
    /// name).
    Bytes(ToolSource, Vec<u8>),
}

impl WasmRuntime {
    /// Loads a component as its tools: one for a `plugin`, each tool of a
    /// `toolbox-plugin`. It is compiled (or taken from the compile cache), checked
    /// to fit the `plugin` or the `toolbox-plugin` world, and its tools' specs and
    /// hints are read in an instance with no capabilities.
    ///
    /// With a `pin`, the component is refused unless its SHA-256 is `pin`'s, before
    /// it is compiled or any of its code runs. The digest checked is that of the
    /// bytes compiled (or of those whose compiled code the cache holds under it); a
    /// file is hashed as it is read, so a file changed meanwhile is checked as it is
    /// compiled.
    pub async fn load(
        &self,
        what: LoadFrom,
        pin: Option<&Pin>,
    ) -> Result<Vec<WasmTool>, LoadError> {
        match what {
            LoadFrom::File(path) => self.load_file_checked(&path, pin.as_slice(), None).await,
            LoadFrom::Bytes(source, bytes) => self.load_bytes(source, bytes, pin.as_slice()).await,
        }
    }

    /// [`WasmRuntime::load`] of the file `path`, with `check` run on the file opened
    /// before any byte of it is read: an error it gives refuses the file (as
    /// [`LoadErrorKind::Invalid`]). The plugins folder checks there what the file is
    /// (its links, see `plugins::entry`). Every pin of `pins` (piton.toml's, piton.lock's)
    /// must hold.
    pub(crate) async fn load_file_checked(
        &self,
        path: &Path,
        pins: &[&Pin],
        check: Option<FileCheck>,
    ) -> Result<Vec<WasmTool>, LoadError> {
        let source = ToolSource::File(path.to_path_buf());
        let fail = |kind| LoadError {
            plugin: source.clone(),
            kind,
        };
        let opened = {
            let _job = self
                .inner
                .load_jobs
                .acquire()
                .await
                .map_err(|e| fail(LoadErrorKind::Io(std::io::Error::other(e))))?;
            let runtime = self.clone();
            let path = path.to_path_buf();
            tokio::task::spawn_blocking(move || open(&runtime, &path, check.as_deref()))
                .await
                .map_err(|e| fail(LoadErrorKind::Io(std::io::Error::other(e))))?
        };
        match opened {
            Ok(Opened::Cached(component, info)) => {
                for pin in pins {
                    pin.check(&source, &info.sha256)?;
                }
                self.tools_of(source, component, info).await
            }
            Ok(Opened::Bytes(bytes)) => self.load_bytes(source, bytes, pins).await,
            Err(Unreadable::Folder) => Err(fail(LoadErrorKind::Folder)),
            Err(Unreadable::Io(e)) => Err(fail(LoadErrorKind::Io(e))),
            Err(Unreadable::Refused(why)) => Err(fail(LoadErrorKind::Invalid(why.to_string()))),
        }
    }

    /// [`WasmRuntime::load`] of a component's `bytes`: the pin checked on exactly
    /// these bytes, the ones compiled.
    async fn load_bytes(
        &self,
        source: ToolSource,
        bytes: Vec<u8>,
        pins: &[&Pin],
    ) -> Result<Vec<WasmTool>, LoadError> {
        let fail = |kind| LoadError {
            plugin: source.clone(),
            kind,
        };
        let len = bytes.len();
        let compile_failed = |e: wasmtime::Error| {
            fail(LoadErrorKind::Compile(diagnose::compile_problem(
                &root_message(&e),
                len,
            )))
        };
        let runtime = self.clone();
        let pinned: Vec<_> = pins.iter().map(|pin| pin.sha256).collect();
        // The digest of exactly these bytes, the ones compiled below.
        let (bytes, sha256, cached) = tokio::task::spawn_blocking(move || {
            let sha256 = hex::encode(Sha256::digest(&bytes));
            let refused = pinned.iter().any(|pinned| !pinned.matches(&sha256));
            let cached = if refused {
                None
            } else {
                runtime.cached(&sha256)
            };
            (bytes, sha256, cached)
        })
        .await
        .map_err(|e| fail(LoadErrorKind::Compile(diagnose::one_line(&e.to_string()))))?;
        for pin in pins {
            pin.check(&source, &sha256)?;
        }
        if let Some(problem) = diagnose::header_problem(&bytes) {
            return Err(fail(LoadErrorKind::Compile(problem)));
        }
        let component = match cached {
            Some(component) => component,
            None => self
                .compile(bytes, sha256.clone())
                .await
                .map_err(compile_failed)?,
        };
        let info = ComponentInfo {
            sha256,
            size: len as u64,
            imports: Vec::new(),
        };
        self.tools_of(source, component, info).await
    }

    /// The tools of a compiled component: which world it exports, checked against
    /// the linker, and its tools' specs and hints read in an instance with no
    /// capabilities. `info`'s imports are filled in here.
    async fn tools_of(
        &self,
        source: ToolSource,
        component: Component,
        mut info: ComponentInfo,
    ) -> Result<Vec<WasmTool>, LoadError> {
        let fail = |kind| LoadError {
            plugin: source.clone(),
            kind,
        };
        let engine = &self.inner.engine;
        let types = component.component_type();
        info.imports = types
            .imports(engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        let exports: Vec<String> = types
            .exports(engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        if let Some(problem) = info
            .imports
            .iter()
            .find_map(|i| diagnose::registry_import_problem(i))
        {
            return Err(fail(LoadErrorKind::Contract(problem)));
        }
        let world = (diagnose::world_of(&exports))
            .map_err(|p| fail(LoadErrorKind::Contract(p.to_string())))?;

        let does_not_fit = |e: wasmtime::Error| {
            let name = match world {
                World::Plugin => "plugin",
                World::Toolbox => "toolbox-plugin",
            };
            fail(LoadErrorKind::Contract(format!(
                "does not fit the piton:tool@0.1 `{name}` world: {}",
                diagnose::one_line(&root_message(&e))
            )))
        };
        let instance_pre = self
            .inner
            .linker
            .instantiate_pre(&component)
            .map_err(does_not_fit)?;
        match world {
            World::Plugin => {
                let pre = PluginPre::new(instance_pre).map_err(does_not_fit)?;
                let instances = Instances::new(self.clone(), Pre::Plugin(Arc::new(pre)));
                Ok(vec![read_plugin(instances, source, info).await?])
            }
            World::Toolbox => {
                let pre = ToolboxPluginPre::new(instance_pre).map_err(does_not_fit)?;
                self.read_toolbox(Arc::new(pre), source, info).await
            }
        }
    }

    /// One tool per declaration of a toolbox's `tools`, each sharing `pre`.
    async fn read_toolbox(
        &self,
        pre: Arc<ToolboxPluginPre<super::sandbox::Sandbox>>,
        source: ToolSource,
        info: ComponentInfo,
    ) -> Result<Vec<WasmTool>, LoadError> {
        let asker = Instances::new(
            self.clone(),
            Pre::Toolbox {
                pre: pre.clone(),
                tool: Arc::from(""),
                has_hints_for: false,
            },
        );
        let decls = asker
            .read_toolbox()
            .await
            .map_err(|e| read_failed(&source, e, TOOLBOX_FUEL))?;
        let fail = |message: String| LoadError {
            plugin: source.clone(),
            kind: LoadErrorKind::Invalid(message),
        };
        if decls.is_empty() {
            return Err(fail("a toolbox that declares no tools".to_owned()));
        }
        if decls.len() > MAX_TOOLS {
            return Err(fail(format!(
                "a toolbox of {} tools, more than piton loads from one component \
                 ({MAX_TOOLS}); split it",
                decls.len()
            )));
        }
        let mut names = BTreeSet::new();
        let mut tools = Vec::with_capacity(decls.len());
        for bindings::ToolDecl {
            spec,
            hints,
            has_hints_for,
        } in decls
        {
            let name = spec.name.clone();
            if !names.insert(name.clone()) {
                return Err(fail(format!(
                    "a toolbox that declares two tools named `{}`; give each tool its own name",
                    diagnose::one_line(&name)
                )));
            }
            let named = |m: String| fail(format!("its tool `{}`: {m}", diagnose::one_line(&name)));
            let instances = asker.sibling(Pre::Toolbox {
                pre: pre.clone(),
                tool: Arc::from(name.as_str()),
                has_hints_for,
            });
            let spec = spec_of(spec).map_err(named)?;
            let hints = from_wit_hints(hints).map_err(|e| named(format!("its hints: {e}")))?;
            tools.push(
                WasmTool::new(
                    instances,
                    source.clone(),
                    info.clone(),
                    spec,
                    hints,
                    &ToolConfig::default(),
                )
                .map_err(|e| named(e.to_string()))?,
            );
        }
        Ok(tools)
    }
}

/// The tool of a `plugin`, its spec and hints asked of it.
async fn read_plugin(
    instances: Instances,
    source: ToolSource,
    info: ComponentInfo,
) -> Result<WasmTool, LoadError> {
    let (spec, hints) = instances
        .read_plugin()
        .await
        .map_err(|e| read_failed(&source, e, SPEC_FUEL))?;
    let fail = |message| LoadError {
        plugin: source.clone(),
        kind: LoadErrorKind::Invalid(message),
    };
    let spec = spec_of(spec).map_err(fail)?;
    let hints = from_wit_hints(hints).map_err(|e| fail(format!("its hints: {e}")))?;
    WasmTool::new(
        instances,
        source.clone(),
        info,
        spec,
        hints,
        &ToolConfig::default(),
    )
    .map_err(|e| fail(e.to_string()))
}

/// A component file as [`open`] found it.
enum Opened {
    /// In the compile cache; no byte of it kept.
    Cached(Component, ComponentInfo),
    /// Not in the cache (or no cache): its bytes, to check and compile.
    Bytes(Vec<u8>),
}

/// Why a component file could not be read.
enum Unreadable {
    /// It is a folder.
    Folder,
    /// Reading failed.
    Io(std::io::Error),
    /// The check given refused it: why, and the fix.
    Refused(FileRefused),
}

/// A check of a component file opened (the path, the open file), before any byte of
/// it is read: `Err` says why it may not be loaded, and the fix (the checker's own
/// error, as this module knows none of the checkers). Blocking.
pub(crate) type FileCheck = Arc<CheckFile>;

/// What a [`FileCheck`] holds.
pub(crate) type CheckFile = dyn Fn(&Path, &std::fs::File) -> Result<(), FileRefused> + Send + Sync;

/// Why a [`FileCheck`] refused a file, and the fix.
pub(crate) type FileRefused = Box<dyn std::error::Error + Send + Sync>;

/// Opens the component file `path` for `runtime`: hashes it as it reads, in small
/// pieces (no buffer of the whole file, no page faults for it), and takes the
/// compiled component from the cache when it has that hash. On a miss it reads the
/// file whole, to be checked, hashed again and compiled from those same bytes: a
/// file changed since the first read is compiled as it is now, never cached under
/// the hash of what it was. Blocking.
fn open(
    runtime: &WasmRuntime,
    path: &Path,
    check: Option<&CheckFile>,
) -> Result<Opened, Unreadable> {
    use std::io::{Read as _, Seek as _};
    let mut file = std::fs::File::open(path).map_err(Unreadable::Io)?;
    if file.metadata().map_err(Unreadable::Io)?.is_dir() {
        return Err(Unreadable::Folder);
    }
    if let Some(check) = check {
        check(path, &file).map_err(Unreadable::Refused)?;
    }
    if runtime.cache_dir().is_some() {
        let mut hasher = Sha256::new();
        let mut piece = vec![0; 64 << 10];
        let mut size = 0_u64;
        loop {
            match file.read(&mut piece) {
                Ok(0) => break,
                Ok(n) => {
                    hasher.update(piece.get(..n).unwrap_or_default());
                    size += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Unreadable::Io(e)),
            }
        }
        let sha256 = hex::encode(hasher.finalize());
        if let Some(component) = runtime.cached(&sha256) {
            let info = ComponentInfo {
                sha256,
                size,
                imports: Vec::new(),
            };
            return Ok(Opened::Cached(component, info));
        }
        file.rewind().map_err(Unreadable::Io)?;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(Unreadable::Io)?;
    Ok(Opened::Bytes(bytes))
}

/// The host's spec from the guest's, its sizes and schema checked.
fn spec_of(spec: bindings::plugin::piton::tool::types::ToolSpec) -> Result<ToolSpec, String> {
    crate::tool::check_spec_size(&spec.description, spec.input_schema.len())
        .map_err(|e| e.to_string())?;
    Ok(ToolSpec {
        input_schema: serde_json::from_str(&spec.input_schema)
            .map_err(|e| format!("its input schema is not JSON: {e}"))?,
        name: spec.name,
        description: spec.description,
        parallel: spec.parallel,
    })
}

/// A trap while reading specs, as a load error: over `fuel` says how much piton reads.
fn read_failed(source: &ToolSource, error: crate::error::CallError, fuel: usize) -> LoadError {
    let text = trap_text(error);
    LoadError {
        plugin: source.clone(),
        kind: if text.contains(FUEL_EXHAUSTED) {
            LoadErrorKind::Invalid(format!(
                "{} over {}, more than piton reads (a description may have \
                 at most {}, an input schema at most {} of JSON); shorten them",
                if fuel == TOOLBOX_FUEL {
                    "its tools' specs are together"
                } else {
                    "its spec is"
                },
                crate::limits::format_size(fuel as u64),
                crate::limits::format_size(crate::tool::MAX_DESCRIPTION as u64),
                crate::limits::format_size(crate::tool::MAX_INPUT_SCHEMA as u64),
            ))
        } else {
            LoadErrorKind::Trap(text)
        },
    }
}
