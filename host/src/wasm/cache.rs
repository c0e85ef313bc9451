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
}

impl CompileCache {
    /// The cache in `dir`, created if missing.
    pub(crate) fn open(dir: &Path) -> std::io::Result<Self> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
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

    /// The component for `bytes`: from the cache when it holds it, else compiled and
    /// stored. A cache that cannot be read or written only costs a compile.
    pub(crate) fn component(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sha256: &str,
    ) -> wasmtime::Result<Component> {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let path = self
            .dir
            .join(format!("{sha256}-{:016x}.cwasm", hasher.finish()));
        if path.is_file() {
            // SAFETY: the file was written by `store` below from
            // `Engine::precompile_component` with an engine of the same settings (the
            // name carries their hash); wasmtime also checks its header on load.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok(component),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "dropping an unusable cache entry")
                }
            }
        }
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
