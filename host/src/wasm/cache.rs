//! Compiled components kept on disk, keyed by the component's content hash and the
//! engine's settings, so a plugin is compiled once, not on every start; and kept
//! bounded.
//!
//! An entry is a file named `<sha256>-<engine>.cwasm` (64 and 16 lowercase hex
//! digits), or `<sha256>-<format>.spec`: the specs the component declares (see
//! `specs`), kept so that a start lacking the code still lists the tools without
//! compiling first. A load that uses an entry marks it used (its modification time), and each
//! load of the plugins then trims the cache ([`CompileCache::trim`]): an entry no
//! load of any piton process used for [`MAX_UNUSED`] goes (a plugin removed or
//! replaced, an older piton's code), then, while the cache is over its `max_size`,
//! the entry used longest ago, never one this load used. Removing an entry is always
//! safe: a process that has it mapped keeps its copy, and one that needs it again
//! compiles it again. That is what makes the rule safe for several processes and
//! plugins folders sharing one cache: none can break another, and an entry any of
//! them used in the last week stays unless the cache is over its size.
//!
//! The folder is hostile input too: it and each entry are used only when private to
//! this user (see `cache_private`; a new folder is made 0700), and only regular files whose names are exactly an
//! entry's (or piton's own temporary files, `.piton-XXXXXX.cwasm.tmp`, once an hour
//! old) are counted or removed. A link is never followed or removed, nor is a
//! folder or any other file.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::cache_private;

/// Compile cache lookups, counted by the runtime and shown by the metrics
/// (`/metrics`).
#[derive(Debug, Default)]
pub struct CacheCounts {
    hits: AtomicU64,
    misses: AtomicU64,
}

impl CacheCounts {
    /// A component found in the cache.
    pub(crate) fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// A component compiled (not in the cache, or no cache).
    pub(crate) fn miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }

    /// Hits and misses so far.
    pub fn get(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

/// How long an entry may go unused by every load before a load removes it.
pub const MAX_UNUSED: Duration = Duration::from_secs(7 * 24 * 3600);

/// How old a temporary file must be to be taken for one left by a write that never
/// finished (a process killed mid-write), and removed.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Temporary files are named `.piton-` + 6 letters or digits + `.cwasm.tmp`.
const TEMP_PREFIX: &str = ".piton-";
const TEMP_SUFFIX: &str = ".cwasm.tmp";
const TEMP_RANDOM: usize = 6;

/// A folder of precompiled components (`.cwasm`).
///
/// Precompiled code is native code: whoever can write this folder can run code as
/// piton. It is created private to the user (0700), under the user's cache folder,
/// and not used unless it is private (see `cache_private`).
#[derive(Clone, Debug)]
pub(crate) struct CompileCache {
    dir: PathBuf,
    /// The hash of the engine's settings, in every entry's name: computed once, as
    /// every plugin of every start looks it up.
    engine_hash: u64,
}

impl CompileCache {
    /// The cache in `dir` for code compiled by `engine`, created (0700) if missing;
    /// an error saying why and what to do when it is not private to this user.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> std::io::Result<Self> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        cache_private::check_folder(dir)?;
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
        let var = crate::config::values::env_path;
        var("PITON_CACHE_DIR")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("piton")))
            .or_else(|| var("HOME").map(|d| d.join(".cache/piton")))
    }

    fn path(&self, sha256: &str) -> PathBuf {
        self.dir
            .join(format!("{sha256}-{:016x}.cwasm", self.engine_hash))
    }

    fn specs_path(&self, sha256: &str) -> PathBuf {
        self.dir
            .join(format!("{sha256}-{}.spec", super::specs::format_key()))
    }

    /// The file at `path` (an entry), when it is a regular file, private to this user,
    /// in the folder still private; why not is logged when it is there but unusable.
    fn usable(&self, path: &Path) -> Option<std::fs::Metadata> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.file_type().is_file() {
            return None;
        }
        if let Err(error) = cache_private::check_folder(&self.dir) {
            tracing::warn!("{error}");
            return None;
        }
        if let Err(why) = cache_private::check(&meta) {
            tracing::warn!("{}", why.of_entry(path));
            return None;
        }
        Some(meta)
    }

    /// The specs of the component `sha256` kept in the cache, when its entry is
    /// usable (as [`CompileCache::get`] says) and holds specs of that component;
    /// what they declare is the load's to check. It is marked used.
    pub(crate) fn get_specs(&self, sha256: &str) -> Option<super::specs::Specs> {
        use std::io::Read as _;
        let path = self.specs_path(sha256);
        let meta = self.usable(&path)?;
        if meta.len() > super::specs::MAX_SIZE {
            tracing::warn!(path = %path.display(), "not using an oversized specs entry");
            return None;
        }
        let mut text = Vec::new();
        let read = std::fs::File::open(&path)
            .and_then(|file| file.take(super::specs::MAX_SIZE).read_to_end(&mut text));
        if let Err(error) = read {
            tracing::debug!(path = %path.display(), %error, "cannot read a specs entry");
            return None;
        }
        match super::specs::Specs::parse(&text, sha256) {
            Ok(specs) => {
                mark_used(&path);
                Some(specs)
            }
            Err(why) => {
                tracing::warn!(path = %path.display(), why, "not using a specs entry");
                None
            }
        }
    }

    /// Keeps `specs` (read from their component's code): written when there is no
    /// usable entry or it differs, else marked used. A cache that cannot be written
    /// only costs a compile before the tools are listed, at a start that lacks the
    /// code.
    pub(crate) fn keep_specs(&self, specs: &super::specs::Specs) {
        let path = self.specs_path(&specs.sha256);
        if self.get_specs(&specs.sha256).as_ref() == Some(specs) {
            return;
        }
        if let Err(error) = self.store(&path, &specs.to_text()) {
            tracing::warn!(path = %path.display(), %error, "cannot write the compile cache");
        }
    }

    /// The component whose bytes hash to `sha256`, when the cache holds a usable one
    /// (a regular file, private to this user, in the folder still private: a link
    /// there is not followed); it is marked used.
    pub(crate) fn get(&self, engine: &Engine, sha256: &str) -> Option<Component> {
        let path = self.path(sha256);
        self.usable(&path)?;
        // SAFETY: the file was written by `compile` below from
        // `Engine::precompile_component` with an engine of the same settings (the
        // name carries their hash); wasmtime also checks its header on load. Only
        // this user (or root) can write it or the folder, so the path still names
        // the file just checked.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => {
                mark_used(&path);
                Some(component)
            }
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

    /// Writes to a temporary file and puts it in place whole (see `whole_file`), so
    /// neither a reader nor a start after a crash sees half a file.
    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        cache_private::check_folder(&self.dir)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(TEMP_SUFFIX)
            .rand_bytes(TEMP_RANDOM)
            .tempfile_in(&self.dir)?;
        tmp.write_all(compiled)?;
        crate::whole_file::replace(tmp, path)
    }

    /// Trims the cache: removes the entries no load used for [`MAX_UNUSED`], then,
    /// while the entries left are over `max_size` bytes, the one used longest ago that
    /// was not used since `used_since` (this load's start). Blocking.
    pub(crate) fn trim(&self, used_since: SystemTime, max_size: u64) -> Trimmed {
        trim(&self.dir, SystemTime::now(), used_since, max_size)
    }
}

/// Marks the entry at `path` used now. A cache that cannot be written (mounted
/// read-only, say) keeps its entries' times: they are then trimmed as if unused.
fn mark_used(path: &Path) {
    let marked = std::fs::File::open(path).and_then(|file| file.set_modified(SystemTime::now()));
    if let Err(error) = marked {
        tracing::debug!(path = %path.display(), %error, "cannot mark a cache entry used");
    }
}

/// What a trim did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trimmed {
    /// Entries removed.
    pub removed: usize,
    /// Their bytes.
    pub freed: u64,
    /// The bytes of the entries left.
    pub kept: u64,
}

/// What a cache folder holds: its entries (see the module's docs for what counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Compiled components.
    pub entries: usize,
    /// Components' kept specs.
    pub specs: usize,
    /// The bytes of both.
    pub bytes: u64,
}

/// The entries of the cache folder `dir`; none when it does not exist.
pub fn usage(dir: &Path) -> std::io::Result<Usage> {
    let found = list(dir)?;
    let specs = found.entries.iter().filter(|e| is_specs(&e.path)).count();
    Ok(Usage {
        entries: found.entries.len() - specs,
        specs,
        bytes: found.entries.iter().map(|e| e.size).sum(),
    })
}

/// Whether the cache folder `dir` is private to this user, as a load requires to use
/// it; otherwise why not and what to do.
pub fn check_private(dir: &Path) -> std::io::Result<()> {
    cache_private::check_folder(dir)
}

/// What [`clean`] removed, and what it could not.
#[derive(Debug, Default)]
pub struct Cleaned {
    /// Compiled components removed.
    pub removed: usize,
    /// Kept specs removed.
    pub removed_specs: usize,
    /// The bytes of both.
    pub freed: u64,
    /// Entries that could not be removed, and why.
    pub failed: Vec<(PathBuf, std::io::Error)>,
}

/// Removes every entry of the cache folder `dir` (and temporary files an hour old),
/// nothing else. A running piton keeps the code it mapped; its next load compiles
/// what it needs again.
pub fn clean(dir: &Path) -> std::io::Result<Cleaned> {
    let found = list(dir)?;
    let now = SystemTime::now();
    let stale = found
        .temps
        .into_iter()
        .filter(|temp| age(now, temp.modified) > STALE_TEMP);
    let mut cleaned = Cleaned::default();
    for entry in found.entries.into_iter().chain(stale) {
        match remove(&entry, None) {
            Ok(()) => {
                if is_specs(&entry.path) {
                    cleaned.removed_specs += 1;
                } else {
                    cleaned.removed += 1;
                }
                cleaned.freed += entry.size;
            }
            Err(error) => cleaned.failed.push((entry.path, error)),
        }
    }
    Ok(cleaned)
}

/// [`CompileCache::trim`] of the folder `dir` at `now`.
fn trim(dir: &Path, now: SystemTime, used_since: SystemTime, max_size: u64) -> Trimmed {
    let found = match list(dir) {
        Ok(found) => found,
        Err(error) => {
            tracing::debug!(dir = %dir.display(), %error, "cannot read the compile cache to trim it");
            return Trimmed::default();
        }
    };
    let mut trimmed = Trimmed::default();
    for temp in found.temps {
        if age(now, temp.modified) > STALE_TEMP {
            let _ = remove(&temp, Some(temp.modified));
        }
    }
    let mut left = Vec::new();
    for entry in found.entries {
        if age(now, entry.modified) > MAX_UNUSED && remove(&entry, Some(entry.modified)).is_ok() {
            trimmed.removed += 1;
            trimmed.freed += entry.size;
        } else {
            left.push(entry);
        }
    }
    let mut total: u64 = left.iter().map(|e| e.size).sum();
    left.sort_by_key(|e| e.modified);
    for entry in left {
        if total <= max_size || entry.modified >= used_since {
            break;
        }
        if remove(&entry, Some(entry.modified)).is_ok() {
            total = total.saturating_sub(entry.size);
            trimmed.removed += 1;
            trimmed.freed += entry.size;
        }
    }
    trimmed.kept = total;
    trimmed
}

/// One file of the cache folder, as listed.
#[derive(Debug)]
struct Found {
    path: PathBuf,
    size: u64,
    modified: SystemTime,
}

/// The cache folder's entries and piton's temporary files.
#[derive(Debug, Default)]
struct Listing {
    entries: Vec<Found>,
    temps: Vec<Found>,
}

/// Lists `dir` (not below it): the regular files named as entries or as piton's
/// temporary files. Links, folders and every other name are left out.
fn list(dir: &Path) -> std::io::Result<Listing> {
    let mut listing = Listing::default();
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(listing),
        Err(error) => return Err(error),
    };
    for item in read {
        let item = item?;
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        let list = if is_entry_name(name) {
            &mut listing.entries
        } else if is_temp_name(name) {
            &mut listing.temps
        } else {
            continue;
        };
        let path = item.path();
        // Not followed: a link named as an entry is not one.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_file() {
            continue;
        }
        list.push(Found {
            path,
            size: meta.len(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        });
    }
    Ok(listing)
}

/// Removes `found`, if it is still a regular file (and, given `modified`, was not
/// used since it was listed: another process may have just used it).
fn remove(found: &Found, modified: Option<SystemTime>) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(&found.path)?;
    let unchanged = modified.is_none_or(|m| meta.modified().is_ok_and(|now| now == m));
    if !meta.file_type().is_file() || !unchanged {
        return Err(std::io::Error::other("changed since it was listed"));
    }
    // Removes the name in the cache folder: never what a link would lead to.
    std::fs::remove_file(&found.path).inspect_err(|error| {
        tracing::debug!(path = %found.path.display(), %error, "cannot remove a cache entry");
    })
}

/// How long ago `time` was; zero for a time in the future.
fn age(now: SystemTime, time: SystemTime) -> Duration {
    now.duration_since(time).unwrap_or_default()
}

/// Whether `name` is an entry's: 64 lowercase hex digits, `-`, 16, `.cwasm` or
/// `.spec`.
fn is_entry_name(name: &str) -> bool {
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    (name
        .strip_suffix(".cwasm")
        .or_else(|| name.strip_suffix(".spec")))
    .and_then(|stem| stem.split_once('-'))
    .is_some_and(|(sha, engine)| hex(sha, 64) && hex(engine, 16))
}

/// Whether the entry at `path` holds kept specs (else compiled code).
fn is_specs(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "spec")
}

/// Whether `name` is one of piton's temporary files: `.piton-XXXXXX.cwasm.tmp`.
fn is_temp_name(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.strip_suffix(TEMP_SUFFIX))
        .is_some_and(|random| {
            random.len() == TEMP_RANDOM && random.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn only_piton_names_are_entries_or_temporary_files() {
        assert!(is_entry_name(&format!("{SHA}-0123456789abcdef.cwasm")));
        assert!(is_entry_name(&format!("{SHA}-0123456789abcdef.spec")));
        for name in [
            format!("{SHA}-0123456789abcdef.spec.tmp"),
            format!("{SHA}-0123456789abcdef.json"),
            format!("{SHA}-0123456789abcdef.cwasm.bak"),
            format!("{SHA}-0123456789ABCDEF.cwasm"),
            format!("{}-0123456789abcdef.cwasm", &SHA[1..]),
            format!("{SHA}-0123456789abcde.cwasm"),
            format!("{SHA}0123456789abcdef.cwasm"),
            format!("x{SHA}-0123456789abcdef.cwasm"),
            "notes.cwasm".to_owned(),
            ".cwasm".to_owned(),
        ] {
            assert!(!is_entry_name(&name), "{name}");
        }
        assert!(is_temp_name(".piton-aZ09xy.cwasm.tmp"));
        for name in [
            ".piton-aZ09x.cwasm.tmp",
            ".tmpaZ09xy",
            ".piton-a/09xy.cwasm.tmp",
        ] {
            assert!(!is_temp_name(name), "{name}");
        }
    }

    /// An entry named for `n`, `size` bytes, last used `days` ago.
    fn entry(dir: &Path, n: u8, size: usize, days: u64) -> PathBuf {
        let path = dir.join(format!("{}-0123456789abcdef.cwasm", hex::encode([n; 32])));
        std::fs::write(&path, vec![0; size]).expect("write");
        let then = SystemTime::now() - Duration::from_secs(days * 24 * 3600);
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_modified(then).expect("set the time");
        path
    }

    #[test]
    fn a_trim_removes_the_unused_then_the_oldest_while_over_the_size() {
        let dir = tempfile::tempdir().expect("temp dir");
        let stale = entry(dir.path(), 1, 10, 8);
        let old = entry(dir.path(), 2, 100, 3);
        let recent = entry(dir.path(), 3, 100, 1);
        let in_use = entry(dir.path(), 4, 100, 0);
        let started = SystemTime::now() - Duration::from_secs(60);
        // Under the size: only the entry unused for a week goes.
        let trimmed = trim(dir.path(), SystemTime::now(), started, 1000);
        assert_eq!((trimmed.removed, trimmed.freed, trimmed.kept), (1, 10, 300));
        assert!(!stale.exists() && old.exists() && recent.exists() && in_use.exists());
        // Over it: the oldest first, down to the size.
        let trimmed = trim(dir.path(), SystemTime::now(), started, 150);
        assert_eq!((trimmed.removed, trimmed.kept), (2, 100));
        assert!(!old.exists() && !recent.exists() && in_use.exists());
        // What this load used stays, even over the size.
        let trimmed = trim(dir.path(), SystemTime::now(), started, 50);
        assert_eq!((trimmed.removed, trimmed.kept), (0, 100));
        assert!(in_use.exists());
    }
}
