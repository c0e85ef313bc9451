//! `piton add` and `piton remove` as a library: fetch into a temporary file of the
//! plugins folder, check its signatures against the trust policy, check the
//! component as `piton check` does (which runs its code, to read its spec: never
//! before the trust check), record it in piton.lock, rename it into place as
//! `NAME.wasm`. Each step is public, so that a caller can put its own between them
//! (a permission diff before an update's install).

use std::path::{Path, PathBuf};

use crate::config::pins::{Pin, PinnedBy, Sha256};
use crate::error::LoadErrorKind;
use crate::supply::fetch::fetch;
use crate::supply::fetched::{FetchError, FetchLimits, Fetched};
use crate::supply::lock::{Lock, LockEntry, LockError, check_name};
use crate::supply::reference::{RefError, Reference};
use crate::supply::signatures::{self, TrustError};
use crate::supply::trust::TrustPolicy;
use crate::wasm::check::Checked;
use crate::wasm::{LoadFrom, WasmRuntime};

/// How to add components to one plugins folder.
#[derive(Clone, Debug)]
pub struct Add {
    runtime: WasmRuntime,
    folder: PathBuf,
    lock: PathBuf,
    limits: FetchLimits,
    force: bool,
    trust: TrustPolicy,
    signature: Option<String>,
}

/// A component added.
#[derive(Debug)]
pub struct Added {
    /// Its name in the lock.
    pub name: String,
    /// What the lock records.
    pub entry: LockEntry,
    /// What checking it found: its tools and imports (their sources name the
    /// temporary file it was checked in).
    pub checked: Checked,
    /// Whether it replaced a file of that name.
    pub replaced: bool,
}

/// Why a component was not added or removed; nothing in the plugins folder changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddError {
    /// The reference does not parse.
    #[error(transparent)]
    Ref(#[from] RefError),
    /// The fetch failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// piton.lock cannot be read or written.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// No name can be made from the reference, or `--name` is not one.
    #[error("{reference}: {why}; give another with --name NAME")]
    Name {
        /// The reference.
        reference: String,
        /// Why.
        why: String,
    },
    /// The file is there and the lock does not record it.
    #[error(
        "{reference}: {} is there already and piton.lock does not record it (it was \
         copied by hand); nothing was changed: pass --force to replace it, or --name to \
         add this one under another name", .file.display()
    )]
    NotRecorded {
        /// The reference.
        reference: String,
        /// The file there.
        file: PathBuf,
    },
    /// The lock records the name as added from elsewhere.
    #[error(
        "{reference}: piton.lock records {name} as added from {was}; nothing was changed: \
         pass --force to replace it, or --name to add this one under another name"
    )]
    OtherSource {
        /// The reference.
        reference: String,
        /// The name.
        name: String,
        /// Where the lock says it came from.
        was: String,
    },
    /// The component does not load as a piton tool.
    #[error("{reference}: it does not load as a piton tool, so it was not added: {why}")]
    Check {
        /// The reference.
        reference: String,
        /// Why, as `piton check` says it.
        why: String,
    },
    /// The fetched file changed between the fetch and the check.
    #[error("{reference}: {why}; nothing was added")]
    Changed {
        /// The reference.
        reference: String,
        /// What changed, naming both digests.
        why: String,
    },
    /// Its signatures could not be had, or the trust policy refused them.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The file cannot be put in place or removed.
    #[error("{}: {error}", .file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// `piton remove` of a name the lock does not record.
    #[error(
        "{} records no component named {name}; `piton list --sources` shows what was \
         added, and a file copied by hand is removed by hand", .lock.display()
    )]
    NotAdded {
        /// The name.
        name: String,
        /// The lock file.
        lock: PathBuf,
    },
}

impl Add {
    /// Adds into the plugins `folder`, recording in the `lock` file, checking with
    /// `runtime` and the `trust` policy (piton.toml's `[trust]`); the default
    /// limits, no `--force`, signatures where the source keeps them.
    pub fn new(runtime: WasmRuntime, folder: PathBuf, lock: PathBuf, trust: TrustPolicy) -> Self {
        Self {
            runtime,
            folder,
            lock,
            limits: FetchLimits::default(),
            trust,
            signature: None,
            force: false,
        }
    }

    /// Bounds each fetch by `limits` (piton.toml's `[supply]`).
    #[must_use]
    pub fn with_limits(mut self, limits: FetchLimits) -> Self {
        self.limits = limits;
        self
    }

    /// With `force`, a file there that the lock does not record (or records from
    /// another source) is replaced.
    #[must_use]
    pub fn with_force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Checks the bundle `signature` names if given (`--signature`), else the
    /// signatures where the source keeps them (see [`crate::supply::signatures`]).
    pub fn with_signature(mut self, signature: Option<String>) -> Self {
        self.signature = signature;
        self
    }

    /// Checks the signatures of `fetched` from `reference` against the trust policy;
    /// gives the signer to record.
    pub async fn trust(
        &self,
        reference: &Reference,
        given: &str,
        fetched: &Fetched,
    ) -> Result<Option<String>, AddError> {
        Ok(signatures::check(
            &self.trust,
            reference,
            given,
            fetched,
            self.signature.as_deref(),
        )
        .await?)
    }

    /// The trust policy it checks components against.
    pub fn policy(&self) -> &TrustPolicy {
        &self.trust
    }

    /// The runtime it checks components with.
    pub fn runtime(&self) -> &WasmRuntime {
        &self.runtime
    }

    /// The plugins folder it adds into.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// All of `piton add`: [`Add::fetch`], [`Add::trust`], [`Add::check`],
    /// [`Add::install`]. `given` is the reference as written (what the lock records),
    /// `expected` the `--sha256`, `name` the `--name`. Trust comes before the check:
    /// checking reads the component's spec in an instance, which runs its code.
    pub async fn run(
        &self,
        reference: &Reference,
        given: &str,
        expected: Option<Sha256>,
        name: Option<&str>,
    ) -> Result<Added, AddError> {
        let name = self.name_for(reference, given, name)?;
        self.may_write(given, &name)?;
        let fetched = self.fetch(reference, given, expected).await?;
        let signer = self.trust(reference, given, &fetched).await?;
        let checked = self.check(&fetched, given).await?;
        let (entry, replaced) = self.install(&name, fetched, given, signer)?;
        Ok(Added {
            name,
            entry,
            checked,
            replaced,
        })
    }

    /// The name to add `reference` under: `name` if given, else its default one.
    pub fn name_for(
        &self,
        reference: &Reference,
        given: &str,
        name: Option<&str>,
    ) -> Result<String, AddError> {
        let fail = |why: String| AddError::Name {
            reference: given.to_owned(),
            why,
        };
        let name = match name {
            Some(name) => name.to_owned(),
            None => reference
                .default_name()
                .ok_or_else(|| fail("no component name can be made from it".to_owned()))?,
        };
        check_name(&name).map_err(fail)?;
        Ok(name)
    }

    /// `Ok` when `name` may be written from `given`: no file of that name, or one the
    /// lock records from the same source, or `--force`.
    pub fn may_write(&self, given: &str, name: &str) -> Result<(), AddError> {
        if self.force {
            return Ok(());
        }
        let lock = Lock::load(&self.lock)?;
        let file = self.folder.join(format!("{name}.wasm"));
        match lock.components.get(name) {
            Some(entry) if entry.source != given => Err(AddError::OtherSource {
                reference: given.to_owned(),
                name: name.to_owned(),
                was: entry.source.clone(),
            }),
            Some(_) => Ok(()),
            None if file.symlink_metadata().is_ok() => Err(AddError::NotRecorded {
                reference: given.to_owned(),
                file,
            }),
            None => Ok(()),
        }
    }

    /// Fetches `reference` into a temporary file of the plugins folder.
    pub async fn fetch(
        &self,
        reference: &Reference,
        given: &str,
        expected: Option<Sha256>,
    ) -> Result<Fetched, AddError> {
        Ok(fetch(reference, given, expected, &self.folder, self.limits).await?)
    }

    /// Checks the fetched component as `piton check` does: in instances with no
    /// capabilities, but its code runs; call [`Add::trust`] first. The bytes checked
    /// must be the ones fetched (and trusted): a temporary file changed since is
    /// refused before any of it runs.
    pub async fn check(&self, fetched: &Fetched, given: &str) -> Result<Checked, AddError> {
        let fail = |why: String| AddError::Check {
            reference: given.to_owned(),
            why,
        };
        let sha256 = Sha256::parse(&fetched.sha256).map_err(|e| fail(e.to_string()))?;
        let pin = Pin {
            sha256,
            section: given.to_owned(),
            by: PinnedBy::Checked {
                by: "the fetch".to_owned(),
            },
        };
        let what = LoadFrom::File(fetched.temp.path().to_path_buf());
        self.runtime
            .check_pinned(what, Some(&pin))
            .await
            .map_err(|e| match e.kind {
                kind @ LoadErrorKind::Changed { .. } => AddError::Changed {
                    reference: given.to_owned(),
                    why: kind.to_string(),
                },
                kind => fail(kind.to_string()),
            })
    }

    /// Records `fetched` in the lock as `name` from `given`, signed by `signer` if
    /// known, then renames it into place as `NAME.wasm`. The lock is written first: if
    /// the rename fails, the lock is put back; if piton stops between the two, the
    /// lock names bytes the old file does not have, and the loader refuses it.
    /// Gives the entry and whether a file was replaced.
    pub fn install(
        &self,
        name: &str,
        fetched: Fetched,
        given: &str,
        signer: Option<String>,
    ) -> Result<(LockEntry, bool), AddError> {
        let file_name = format!("{name}.wasm");
        let target = self.folder.join(&file_name);
        let before = Lock::load(&self.lock)?;
        let mut lock = before.clone();
        // A name that took this file before gives it up (a lock maps a file once).
        lock.components.retain(|_, entry| entry.file != file_name);
        let entry = LockEntry {
            file: file_name,
            source: given.to_owned(),
            digest: fetched.digest(),
            resolved: fetched.resolved.clone(),
            signer,
            added_at: crate::observe::rfc3339(std::time::SystemTime::now()),
        };
        lock.components.insert(name.to_owned(), entry.clone());
        lock.save(&self.lock)?;
        let replaced = target.symlink_metadata().is_ok();
        if let Err(error) = crate::whole_file::replace(fetched.temp, &target) {
            let _ = before.save(&self.lock);
            return Err(AddError::Io {
                file: target,
                error,
            });
        }
        Ok((entry, replaced))
    }
}

/// `piton remove NAME`: deletes the file the lock records for `name` in `folder`,
/// then its entry; gives the entry.
pub fn remove(folder: &Path, lock_file: &Path, name: &str) -> Result<LockEntry, AddError> {
    let mut lock = Lock::load(lock_file)?;
    let Some(entry) = lock.components.remove(name) else {
        return Err(AddError::NotAdded {
            name: name.to_owned(),
            lock: lock_file.to_path_buf(),
        });
    };
    let file = folder.join(&entry.file);
    match std::fs::remove_file(&file) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(AddError::Io { file, error }),
    }
    lock.save(lock_file)?;
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::wasm::RuntimeConfig;

    #[tokio::test]
    async fn the_check_compiles_only_the_bytes_fetched() {
        let fetched_bytes = crate::plugins::bundled_bytes("word-count").expect("bundled");
        let swapped = crate::plugins::bundled_bytes("read-file").expect("bundled");
        // The temporary file holds other bytes than the fetch hashed (swapped in
        // since): they must not be checked, that is, run.
        let mut temp = tempfile::NamedTempFile::new().expect("temp file");
        temp.write_all(swapped).expect("write");
        let fetched = Fetched {
            temp,
            sha256: crate::supply::trust::Digest::of(fetched_bytes).hex(),
            size: fetched_bytes.len() as u64,
            resolved: None,
        };
        let runtime = WasmRuntime::new(RuntimeConfig {
            cache_dir: None,
            ..RuntimeConfig::default()
        })
        .expect("a runtime");
        let folder = tempfile::tempdir().expect("temp dir");
        let add = Add::new(
            runtime,
            folder.path().to_path_buf(),
            folder.path().join("piton.lock"),
            TrustPolicy::default(),
        );
        let Err(error) = add.check(&fetched, "./x.wasm").await else {
            panic!("checked bytes that are not the ones fetched");
        };
        let text = error.to_string();
        assert!(text.contains(&fetched.digest()), "{text}");
    }
}
