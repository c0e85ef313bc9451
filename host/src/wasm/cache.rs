//! Compiled components kept on disk, keyed by the component's content hash and the
//! engine's settings, so a plugin is compiled once, not on every start.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

/// A folder of precompiled components (`.cwasm`).
///
/// Precompiled code is native code: whoever can write this folder can run code as
/// piton. It is created private to the user (0700), under the user's cache folder.
#[derive(Clone, Debug)]
pub(crate) struct CompileCache {
    dir: PathBuf,
    /// The hash of the engine's settings, in every entry's name: computed once, as
    /// every plugin of every start looks it up.
    engine_hash: u64,
}

impl CompileCache {
    /// The cache in `dir` for code compiled by `engine`, created if missing.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> std::io::Result<Self> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(Self {
            dir: dir.to_path_buf(),
            engine_hash: hasher.finish(),
        })
    }

    /// The folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The default place: `$PITON_CACHE_DIR`, else `$XDG_CACHE_HOME/piton`, else
    /// `$HOME/.cache/piton`; `None` when none is set.
    pub(crate) fn default_dir() -> Option<PathBuf> {
        let var = crate::parse::env_path;
        var("PITON_CACHE_DIR")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("piton")))
            .or_else(|| var("HOME").map(|d| d.join(".cache/piton")))
    }

    fn path(&self, sha256: &str) -> PathBuf {
        self.dir
            .join(format!("{sha256}-{:016x}.cwasm", self.engine_hash))
    }

    /// The component whose bytes hash to `sha256`, when the cache holds a usable one.
    pub(crate) fn get(&self, engine: &Engine, sha256: &str) -> Option<Component> {
        let path = self.path(sha256);
        if !path.is_file() {
            return None;
        }
        // SAFETY: the file was written by `compile` below from
        // `Engine::precompile_component` with an engine of the same settings (the
        // name carries their hash); wasmtime also checks its header on load.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => Some(component),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "dropping an unusable cache entry");
                None
            }
        }
    }

    /// Compiles `bytes` (whose hash is `sha256`) and stores the result. A cache that
    /// cannot be written only costs a compile at the next start.
    pub(crate) fn compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sha256: &str,
    ) -> wasmtime::Result<Component> {
        let path = self.path(sha256);
        let compiled = engine.precompile_component(bytes)?;
        if let Err(error) = self.store(&path, &compiled) {
            tracing::warn!(path = %path.display(), %error, "cannot write the compile cache");
        }
        // SAFETY: `compiled` was just produced by this engine.
        unsafe { Component::deserialize(engine, &compiled) }
    }

    /// Writes to a temporary file and renames it, so a reader never sees half a file.
    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(compiled)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}
