//! `piton.lock`: what `piton add` put in the plugins folder, from where, and the
//! digest of its bytes. piton writes it (a user's piton.toml is never rewritten);
//! the loader refuses a plugins folder file that the lock records with another
//! digest, at every load and reload, so replicas given one lock load the same bytes.
//!
//! It sits beside piton.toml, or in the plugins folder when there is no piton.toml
//! (where piton.toml is looked up first); see [`lock_file`].
//!
//! ```toml
//! # piton.lock: written by piton (`piton add`, `update`, `remove`); do not edit.
//! version = 1
//!
//! [components.word-count]
//! file = "word-count.wasm"                      # in the plugins folder
//! source = "oci://ghcr.io/me/word-count:1.0"    # the REF as given to `piton add`
//! digest = "sha256:…"                           # of the .wasm bytes
//! resolved = "sha256:…"                         # the OCI manifest's digest
//! added_at = "2026-12-02T15:52:14Z"
//! ```

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::pins::{Pin, PinnedBy, Sha256};

/// The lock's file name.
pub const LOCK_FILE: &str = "piton.lock";

/// The format version this piton reads and writes.
const VERSION: u32 = 1;

/// The header every lock piton writes starts with.
const HEADER: &str = "# piton.lock: written by piton (`piton add`, `update`, `remove`); do not edit.\n\
                      # It records where each added component came from and the digest of its\n\
                      # bytes; piton refuses a plugins folder file whose bytes are not these.\n";

/// Where the lock of a load is: beside `config` (piton.toml) when there is one, else
/// in the plugins `folder`; `None` with neither (the bundled examples).
pub fn lock_file(config: Option<&Path>, folder: Option<&Path>) -> Option<PathBuf> {
    match config {
        Some(config) => Some(
            config
                .parent()
                .unwrap_or_else(|| Path::new("."))
                .join(LOCK_FILE),
        ),
        None => folder.map(|folder| folder.join(LOCK_FILE)),
    }
}

/// A parsed lock: its components by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lock {
    /// Each added component, by the name `piton add` gave it.
    pub components: BTreeMap<String, LockEntry>,
}

/// One added component.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    /// Its file in the plugins folder: `NAME.wasm`.
    pub file: String,
    /// The reference as given to `piton add`.
    pub source: String,
    /// `sha256:HEX` of the file's bytes.
    pub digest: String,
    /// For an OCI source, the manifest digest it resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// Who signed it, when a signature was verified at add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// When it was added (RFC 3339, UTC).
    pub added_at: String,
}

/// A lock that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: {problem}; piton writes this file: put back the one it wrote (from a backup or \
     version control), or delete it and `piton add` each component again",
    .file.display()
)]
pub struct LockError {
    /// The lock file.
    pub file: PathBuf,
    /// What is wrong.
    pub problem: LockProblem,
}

/// What is wrong with a lock.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockProblem {
    /// It cannot be read or written.
    #[error("cannot {0} it: {1}")]
    Io(&'static str, #[source] std::io::Error),
    /// It is not TOML of the lock's shape: the parser's message.
    #[error("it does not parse: {0}")]
    Toml(String),
    /// A version this piton does not know.
    #[error("version = {0} is not one this piton reads (it reads version = 1)")]
    Version(u32),
    /// A component whose entry breaks a rule.
    #[error("[components.{name}]: {why}")]
    Entry {
        /// The component's name.
        name: String,
        /// The rule broken.
        why: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    version: u32,
    #[serde(default)]
    components: BTreeMap<String, LockEntry>,
}

impl Lock {
    /// Reads `file`; an empty lock when there is no such file.
    pub fn load(file: &Path) -> Result<Self, LockError> {
        let fail = |problem| LockError {
            file: file.to_path_buf(),
            problem,
        };
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(fail(LockProblem::Io("read", e))),
        };
        Self::parse(&text).map_err(fail)
    }

    /// Parses a lock's text.
    pub fn parse(text: &str) -> Result<Self, LockProblem> {
        let raw: RawLock = toml::from_str(text)
            .map_err(|e| LockProblem::Toml(e.to_string().trim_end().replace('\n', "\n    ")))?;
        if raw.version != VERSION {
            return Err(LockProblem::Version(raw.version));
        }
        let mut files = BTreeMap::new();
        for (name, entry) in &raw.components {
            let why = |why: String| LockProblem::Entry {
                name: name.clone(),
                why,
            };
            check_name(name).map_err(why)?;
            check_file_name(&entry.file).map_err(why)?;
            parse_digest(&entry.digest).map_err(|e| why(format!("digest: {e}")))?;
            if let Some(other) = files.insert(entry.file.clone(), name.clone()) {
                return Err(why(format!(
                    "file {:?} is also the file of [components.{other}]",
                    entry.file
                )));
            }
        }
        Ok(Self {
            components: raw.components,
        })
    }

    /// The lock as piton writes it: the header, then TOML.
    pub fn to_text(&self) -> String {
        let raw = RawLock {
            version: VERSION,
            components: self.components.clone(),
        };
        let body = toml::to_string(&raw).unwrap_or_default();
        format!("{HEADER}{body}")
    }

    /// Writes the lock to `file` at once: a temporary file beside it, renamed over it,
    /// so a reader sees the old lock or the new one, never a part.
    pub fn save(&self, file: &Path) -> Result<(), LockError> {
        let fail = |what, e| LockError {
            file: file.to_path_buf(),
            problem: LockProblem::Io(what, e),
        };
        let folder = crate::whole_file::folder_of(file);
        let mut builder = tempfile::Builder::new();
        builder.prefix(".piton-lock-");
        crate::supply::fetched::readable(&mut builder);
        let mut temp = builder.tempfile_in(folder).map_err(|e| fail("write", e))?;
        temp.write_all(self.to_text().as_bytes())
            .map_err(|e| fail("write", e))?;
        crate::whole_file::replace(temp, file).map_err(|e| fail("write", e))
    }

    /// The component whose file is `file` (a file name in the plugins folder).
    pub fn by_file(&self, file: &str) -> Option<(&String, &LockEntry)> {
        self.components.iter().find(|(_, entry)| entry.file == file)
    }

    /// A pin for each component's file, by file name: what the loader holds the
    /// plugins folder to. `lock` is this lock's file, named in refusals.
    pub fn pins(&self, lock: &Path) -> BTreeMap<String, Pin> {
        self.components
            .iter()
            .filter_map(|(name, entry)| {
                let sha256 = parse_digest(&entry.digest).ok()?;
                let pin = Pin {
                    sha256,
                    section: name.clone(),
                    by: PinnedBy::Lock {
                        file: lock.to_path_buf(),
                        source: entry.source.clone(),
                    },
                };
                Some((entry.file.clone(), pin))
            })
            .collect()
    }
}

/// `sha256:HEX` as a digest.
pub fn parse_digest(text: &str) -> Result<Sha256, String> {
    let hex = text
        .strip_prefix("sha256:")
        .ok_or_else(|| format!("{text:?} does not start with sha256:"))?;
    Sha256::parse(hex).map_err(|e| e.to_string())
}

/// A component's name: `[A-Za-z0-9_-]{1,64}`, so that `NAME.wasm` is a plain file name.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{:?} is not a component name: 1 to 64 letters, digits, `_` or `-`",
            name.chars().take(80).collect::<String>()
        ))
    }
}

/// A file of the plugins folder: `NAME.wasm`, nothing else.
fn check_file_name(file: &str) -> Result<(), String> {
    match file.strip_suffix(".wasm") {
        Some(stem) if check_name(stem).is_ok() => Ok(()),
        _ => Err(format!(
            "file {:?} is not NAME.wasm with a component name",
            file.chars().take(80).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn entry(file: &str) -> LockEntry {
        LockEntry {
            file: file.into(),
            source: "oci://127.0.0.1:5000/a:1".into(),
            digest: format!("sha256:{HEX}"),
            resolved: Some(format!("sha256:{HEX}")),
            signer: None,
            added_at: "2026-12-02T15:52:14Z".into(),
        }
    }

    #[test]
    fn a_saved_lock_reads_back_and_starts_with_its_header() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join(LOCK_FILE);
        assert_eq!(Lock::load(&file).expect("none yet"), Lock::default());
        let mut lock = Lock::default();
        lock.components.insert("a".into(), entry("a.wasm"));
        lock.save(&file).expect("saves");
        let text = std::fs::read_to_string(&file).expect("reads");
        assert!(text.starts_with("# piton.lock: written by piton"), "{text}");
        assert_eq!(Lock::load(&file).expect("loads"), lock);
        // Nothing but the lock is left in the folder.
        assert_eq!(std::fs::read_dir(dir.path()).expect("lists").count(), 1);
        let pins = lock.pins(&file);
        assert_eq!(pins["a.wasm"].sha256.to_string(), HEX);
    }

    #[test]
    fn a_lock_that_does_not_parse_names_the_file_and_the_fix() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join(LOCK_FILE);
        std::fs::write(&file, "version = 1\n[components.a]\nfile = 3\n").expect("writes");
        let error = Lock::load(&file).expect_err("not a lock");
        let text = error.to_string();
        assert!(text.starts_with(&file.display().to_string()), "{text}");
        assert!(text.contains("does not parse"), "{text}");
        assert!(
            text.contains("delete it and `piton add` each component again"),
            "{text}"
        );
    }

    #[test]
    fn entries_that_break_a_rule_are_refused() {
        let with = |entry: &str| Lock::parse(&format!("version = 1\n{entry}"));
        let good = format!(
            "file = \"a.wasm\"\nsource = \"x\"\ndigest = \"sha256:{HEX}\"\nadded_at = \"t\"\n"
        );
        assert!(with(&format!("[components.a]\n{good}")).is_ok());
        for bad in [
            format!("[components.a]\n{}", good.replace("a.wasm", "../a.wasm")),
            format!("[components.a]\n{}", good.replace("a.wasm", "a.txt")),
            format!("[components.a]\n{}", good.replace("sha256:", "md5:")),
            format!("[components.\"a b\"]\n{good}"),
            format!("[components.a]\n{good}[components.b]\n{good}"),
            format!("[components.a]\n{good}extra = 1\n"),
        ] {
            assert!(with(&bad).is_err(), "{bad}");
        }
        assert!(matches!(
            Lock::parse("version = 2\n"),
            Err(LockProblem::Version(2))
        ));
    }

    #[test]
    fn the_lock_sits_beside_piton_toml_else_in_the_plugins_folder() {
        assert_eq!(
            lock_file(
                Some(Path::new("/etc/piton/piton.toml")),
                Some(Path::new("/p"))
            ),
            Some(PathBuf::from("/etc/piton/piton.lock"))
        );
        assert_eq!(
            lock_file(None, Some(Path::new("/p"))),
            Some(PathBuf::from("/p/piton.lock"))
        );
        assert_eq!(
            lock_file(Some(Path::new("piton.toml")), None),
            Some(PathBuf::from("piton.lock"))
        );
        assert_eq!(lock_file(None, None), None);
    }
}
