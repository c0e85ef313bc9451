//! Loading a component file as tools: take its code from the compile cache, or
//! compile it (baseline code first, the optimised compile queued, see `optimise`),
//! find which piton world it exports, and read its tools (see `read`); or, when the
//! cache has lost its code but kept its specs, make its tools from those and compile
//! in the background (see `specs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::{Component, Linker};

use sha2::{Digest, Sha256};

use super::code::{Code, Linking, Now};
use super::diagnose::{self, World};
use super::engine::Tier;
use super::runtime::WasmRuntime;
use super::sandbox::Sandbox;
use super::section;
pub(crate) use super::section::Sections;
use super::specs::{Declared, Specs};
use super::tool::WasmTool;
use super::trap::root_message;
use crate::config::pins::Pin;
use crate::error::{LoadError, LoadErrorKind};
use crate::source::ToolSource;
use crate::tool::ComponentInfo;

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
            LoadFrom::File(path) => {
                (self.load_file_checked(&path, pin.as_slice(), None, Sections::Ignored)).await
            }
            LoadFrom::Bytes(source, bytes) => {
                (self.load_bytes(source, bytes, pin.as_slice(), Sections::Ignored)).await
            }
        }
    }

    /// [`WasmRuntime::load`] of the file `path`, with `check` run on the file opened
    /// before any byte of it is read: an error it gives refuses the file (as
    /// [`LoadErrorKind::Invalid`]). The plugins folder checks there what the file is
    /// (its links, see `plugins::entry`). Every pin of `pins` (piton.toml's, piton.lock's)
    /// must hold. With [`Sections::Believed`], a component the cache lacks that carries
    /// the specs `piton build` writes (see `section`) has its tools made from them.
    pub(crate) async fn load_file_checked(
        &self,
        path: &Path,
        pins: &[&Pin],
        check: Option<FileCheck>,
        sections: Sections,
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
                let linker = &self.inner.linker;
                let (code, info) = self.link(&source, &component, linker, Tier::Optimised, info)?;
                self.read_tools(source, code, info).await
            }
            Ok(Opened::Bytes(bytes)) => self.load_bytes(source, bytes, pins, sections).await,
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
        sections: Sections,
    ) -> Result<Vec<WasmTool>, LoadError> {
        let fail = |kind| LoadError {
            plugin: source.clone(),
            kind,
        };
        let len = bytes.len();
        let runtime = self.clone();
        let pinned: Vec<_> = pins.iter().map(|pin| pin.sha256).collect();
        // The digest of exactly these bytes, the ones compiled below.
        let shown = source.clone();
        let (bytes, sha256, cached, kept) = tokio::task::spawn_blocking(move || {
            let sha256 = hex::encode(Sha256::digest(&bytes));
            let refused = pinned.iter().any(|pinned| !pinned.matches(&sha256));
            let cached = if refused {
                None
            } else {
                runtime.cached(&sha256)
            };
            let kept = (!refused && cached.is_none())
                .then(|| {
                    runtime.kept_specs(&sha256).or_else(|| {
                        (sections == Sections::Believed)
                            .then(|| runtime.section_specs(&shown, &bytes, &sha256))
                            .flatten()
                    })
                })
                .flatten();
            (bytes, sha256, cached, kept)
        })
        .await
        .map_err(|e| fail(LoadErrorKind::Compile(diagnose::one_line(&e.to_string()))))?;
        for pin in pins {
            pin.check(&source, &sha256)?;
        }
        if let Some(problem) = diagnose::header_problem(&bytes) {
            return Err(fail(LoadErrorKind::Compile(problem)));
        }
        let info = ComponentInfo {
            sha256,
            size: len as u64,
            imports: Vec::new(),
        };
        if let Some(component) = cached {
            let linker = &self.inner.linker;
            let (code, info) = self.link(&source, &component, linker, Tier::Optimised, info)?;
            return self.read_tools(source, code, info).await;
        }
        // Loaded again while its optimised compile is queued: the same code (unless
        // its kept specs were refused: then as if it were not queued).
        let pending = self
            .pending_code(&info.sha256)
            .filter(|code| !matches!(code.now(), Now::Refused(_)));
        if let Some(code) = pending {
            let info = self.imports_of(&code, info);
            if let Some(specs) = code.unchecked() {
                let decls = specs.decls();
                return self.tools_from(&code, &source, &info, decls);
            }
            return self.read_tools(source, code, info).await;
        }
        let bytes: Arc<[u8]> = Arc::from(bytes);
        // Its specs kept (or written into it by `piton build`), not its code: its tools
        // made from them at once, its code compiled in the background (or for its
        // first call) and checked against them before any call runs. Specs that do
        // not check are not used.
        if let Some(specs) = kept {
            let code = Arc::new(Code::awaiting(specs, bytes.clone()));
            let info = self.imports_of(&code, info.clone());
            let decls = code.unchecked().map(Specs::decls).unwrap_or_default();
            match self.tools_from(&code, &source, &info, decls) {
                Ok(tools) => {
                    self.optimise_later(info.sha256.clone(), bytes, &code);
                    return Ok(tools);
                }
                Err(error) => {
                    tracing::warn!(%error, "not using the specs kept in the compile cache or the component")
                }
            }
        }
        // Its specs read (and its first calls run) on baseline code, compiled in a
        // fraction of the time; the optimised compile of these same bytes follows in
        // the background. A component the baseline compiler cannot compile (a
        // proposal Winch lacks) is compiled optimised now, as its load's error says.
        let (code, info, tier) = self.compile_now(&source, bytes.clone(), info).await?;
        let sha256 = info.sha256.clone();
        let tools = self.read_tools(source, code.clone(), info).await?;
        if tier == Tier::Baseline {
            self.optimise_later(sha256, bytes, &code);
        }
        Ok(tools)
    }

    /// The code of the component `bytes` (described by `info`), compiled now and
    /// linked: baseline code, or optimised code (cached) when the baseline compiler
    /// cannot compile it (a proposal Winch lacks).
    async fn compile_now(
        &self,
        source: &ToolSource,
        bytes: Arc<[u8]>,
        info: ComponentInfo,
    ) -> Result<(Arc<Code>, ComponentInfo, Tier), LoadError> {
        let baseline;
        let (component, linker, tier) = match self.compile_baseline(bytes.clone()).await {
            Ok((component, made)) => {
                baseline = made;
                (component, &baseline.linker, Tier::Baseline)
            }
            Err(error) => {
                tracing::info!(%source, error = %root_message(&error), "no baseline code: compiled optimised now");
                let component =
                    (self.compile(bytes.to_vec(), info.sha256.clone()).await).map_err(|e| {
                        LoadError {
                            plugin: source.clone(),
                            kind: LoadErrorKind::Compile(diagnose::compile_problem(
                                &root_message(&e),
                                bytes.len(),
                            )),
                        }
                    })?;
                (component, &self.inner.linker, Tier::Optimised)
            }
        };
        let (code, info) = self.link(source, &component, linker, tier, info)?;
        Ok((code, info, tier))
    }

    /// The specs the component `bytes` (whose digest is `sha256`) carries in its
    /// `piton:specs` section, unless it has none, they do not read, or this runtime
    /// refused them before. Blocking.
    fn section_specs(&self, source: &ToolSource, bytes: &[u8], sha256: &str) -> Option<Specs> {
        if self.inner.refused_digests.contains(sha256) {
            return None;
        }
        section::read(bytes, sha256)
            .inspect_err(|why| {
                tracing::warn!(%source, why, "not using the specs written into the component");
            })
            .ok()
            .flatten()
    }

    /// `bytes`, a component, with the specs its code gives written into it as
    /// `piton build` writes them (see `section`), after every check a load makes of
    /// them; a load of the plugins folder lists its tools from those without compiling
    /// it. `source` names it in errors.
    pub async fn with_specs_section(
        &self,
        source: ToolSource,
        bytes: Vec<u8>,
    ) -> Result<Vec<u8>, LoadError> {
        let fail = |kind| LoadError {
            plugin: source.clone(),
            kind,
        };
        if let Some(problem) = diagnose::header_problem(&bytes) {
            return Err(fail(LoadErrorKind::Compile(problem)));
        }
        let info = ComponentInfo {
            sha256: hex::encode(Sha256::digest(&bytes)),
            size: bytes.len() as u64,
            imports: Vec::new(),
        };
        let (code, info, _) =
            (self.compile_now(&source, Arc::from(bytes.as_slice()), info)).await?;
        let decls = self.declared(&code).await.map_err(|e| e.of(&source))?;
        let tools: Vec<Declared> = decls.iter().map(Declared::of).collect();
        self.tools_from(&code, &source, &info, decls)?;
        section::write(&bytes, &tools).map_err(|why| fail(LoadErrorKind::Invalid(why)))
    }

    /// A compiled component's code: which world it exports, checked against
    /// `linker` (of the engine that compiled it, of `tier`), and `info` with its
    /// imports filled in.
    fn link(
        &self,
        source: &ToolSource,
        component: &Component,
        linker: &Linker<Sandbox>,
        tier: Tier,
        mut info: ComponentInfo,
    ) -> Result<(Arc<Code>, ComponentInfo), LoadError> {
        let fail = |kind| LoadError {
            plugin: source.clone(),
            kind,
        };
        let engine = linker.engine();
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
        let linking = Linking::new(linker, component, world, tier).map_err(|e| {
            let name = match world {
                World::Plugin => "plugin",
                World::Toolbox => "toolbox-plugin",
            };
            fail(LoadErrorKind::Contract(format!(
                "does not fit the piton:tool@0.1 `{name}` world: {}",
                diagnose::one_line(&root_message(&e))
            )))
        })?;
        Ok((
            Arc::new(Code::new(world, linking, info.imports.clone())),
            info,
        ))
    }

    /// `info` with the imports of `code`'s component.
    fn imports_of(&self, code: &Code, mut info: ComponentInfo) -> ComponentInfo {
        info.imports = code.imports().to_vec();
        info
    }

    /// The tools of a component's `code`: its tools' specs and hints read in an
    /// instance with no capabilities, and kept in the compile cache.
    async fn read_tools(
        &self,
        source: ToolSource,
        code: Arc<Code>,
        info: ComponentInfo,
    ) -> Result<Vec<WasmTool>, LoadError> {
        let decls = self.declared(&code).await.map_err(|e| e.of(&source))?;
        let specs = Specs {
            sha256: info.sha256.clone(),
            world: code.world().into(),
            imports: info.imports.clone(),
            tools: decls.iter().map(Declared::of).collect(),
        };
        let tools = self.tools_from(&code, &source, &info, decls)?;
        self.keep_specs(specs);
        Ok(tools)
    }
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
