//! What a server's consent keeps across reloads (the key's sealer with the states
//! used, and the allowances), and the [`Consent`] of each load made from piton.toml.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use super::allow::Allowances;
use super::ask::Consent;
use super::policy::AskMode;
use super::state::{ApprovalKey, Sealer};
use crate::config::approve::{ApproveError, ApproveSettings, KeySource};

/// Made once per server; gives each load its [`Consent`].
#[derive(Debug, Default)]
pub struct Keeper {
    /// `serve --approve`: one mode for every tool, over piton.toml.
    forced: Option<AskMode>,
    /// Made at the first load from its `[approve]` key, kept after (a key changed
    /// later takes effect at restart), with the settings it came from.
    sealer: Mutex<Option<(KeySource, Arc<Sealer>)>>,
    allowances: Arc<Allowances>,
}

impl Keeper {
    /// A keeper; `forced` overrides every mode piton.toml sets.
    pub fn new(forced: Option<AskMode>) -> Self {
        Self {
            forced,
            ..Self::default()
        }
    }

    /// The consent of one load: `settings` from its piton.toml, `per_tool` the modes
    /// of its tools by served name. An error says why the key cannot be had; a
    /// warning, that a key changed since the first load is not in effect.
    pub fn consent(
        &self,
        settings: &ApproveSettings,
        per_tool: BTreeMap<String, AskMode>,
        warnings: &mut Vec<String>,
    ) -> Result<Consent, KeyError> {
        let sealer = {
            let mut made = self.sealer.lock().unwrap_or_else(PoisonError::into_inner);
            match &*made {
                Some((source, sealer)) => {
                    if *source != settings.key {
                        warnings.push(
                            "piton.toml [approve] key takes effect when piton starts, not at a \
                             reload; restart piton to apply it"
                                .to_owned(),
                        );
                    }
                    sealer.clone()
                }
                None => {
                    let sealer = Arc::new(Sealer::new(key(&settings.key)?, settings.answer_within));
                    *made = Some((settings.key.clone(), sealer.clone()));
                    sealer
                }
            }
        };
        let consent = Consent::new(
            settings.ask,
            per_tool,
            settings.allow_for,
            settings.answer_within,
            sealer,
            self.allowances.clone(),
        );
        Ok(match self.forced {
            Some(mode) => consent.forced(mode),
            None => consent,
        })
    }
}

/// Why the `[approve]` key cannot be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// No key could be made: the system's random source failed.
    #[error(
        "piton could not make an approval key: the system's random source failed; give one \
         in [approve] key_file or $PITON_APPROVAL_KEY"
    )]
    NoRandom,
    /// `key` given in piton.toml (or its `${VAR}`) is not a key.
    #[error(transparent)]
    Given(ApproveError),
    /// `key_file` cannot be read.
    #[error(
        "approve.key_file: cannot read {}: {source}; make one with `head -c 32 \
         /dev/urandom | base64 > {}`",
        .path.display(),
        .path.display()
    )]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `key_file` holds no key.
    #[error("approve.key_file {}: {problem}", .path.display())]
    FileKey {
        /// The file.
        path: PathBuf,
        /// What is wrong with what it holds.
        problem: ApproveError,
    },
}

/// The key `source` names: read from its file now, or made for this process.
fn key(source: &KeySource) -> Result<ApprovalKey, KeyError> {
    match source {
        KeySource::Random => ApprovalKey::random().ok_or(KeyError::NoRandom),
        KeySource::Given(text) => {
            ApprovalKey::from_secret(text.trim().as_bytes()).map_err(KeyError::Given)
        }
        KeySource::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| KeyError::Unreadable {
                path: path.clone(),
                source,
            })?;
            ApprovalKey::from_secret(text.trim().as_bytes()).map_err(|problem| KeyError::FileKey {
                path: path.clone(),
                problem,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use piton_wit::Hints;

    use super::*;
    use crate::config::approve::ApproveError;
    use crate::consent::state::{StateError, Subject};

    const SECRET: &str = "a-key-file-secret-0123456789abcdefghij";

    fn subject() -> Subject {
        Subject {
            tool: "files".into(),
            args_sha256: [1; 32],
            hints: Hints::worst(),
            grants_sha256: [2; 32],
        }
    }

    /// Whether a state sealed under `a` is taken under `b`.
    fn accepted(a: &ApprovalKey, b: &ApprovalKey) -> Result<(), StateError> {
        let ttl = Duration::from_secs(60);
        let now = SystemTime::now();
        let state = Sealer::new(a.clone(), ttl).seal(&subject(), now)?;
        Sealer::new(b.clone(), ttl).redeem(&state, &subject(), now)
    }

    #[test]
    fn a_key_file_holds_the_same_key_as_the_same_text_given() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("approval.key");
        // As `head -c 32 /dev/urandom | base64 > FILE` writes it: a line.
        std::fs::write(&path, format!("{SECRET}\n")).expect("write the key");
        let from_file = key(&KeySource::File(path)).expect("the file's key");
        let given = key(&KeySource::Given(SECRET.into())).expect("the given key");
        assert_eq!(accepted(&from_file, &given), Ok(()));
        let other = key(&KeySource::Given(format!("{SECRET}x"))).expect("a key");
        assert_eq!(accepted(&from_file, &other), Err(StateError::Forged));
    }

    #[test]
    fn a_key_made_at_start_is_this_process_own() {
        let a = key(&KeySource::Random).expect("a random key");
        let b = key(&KeySource::Random).expect("another");
        assert_eq!(accepted(&a, &a), Ok(()));
        assert_eq!(accepted(&a, &b), Err(StateError::Forged));
    }

    #[test]
    fn each_key_that_cannot_be_had_says_why_and_the_fix() {
        let dir = tempfile::tempdir().expect("temp dir");
        // Given (by a program: piton.toml's own `key` is checked when it is read).
        let error = key(&KeySource::Given("short".into())).unwrap_err();
        assert!(
            matches!(error, KeyError::Given(ApproveError::ShortKey(5))),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("head -c 32 /dev/urandom"),
            "{error}"
        );
        // A file that is not there.
        let missing = dir.path().join("missing.key");
        let error = key(&KeySource::File(missing.clone())).unwrap_err();
        assert!(matches!(error, KeyError::Unreadable { .. }), "{error:?}");
        let text = error.to_string();
        for said in [
            "approve.key_file: cannot read",
            &missing.display().to_string(),
            &format!("head -c 32 /dev/urandom | base64 > {}", missing.display()),
        ] {
            assert!(text.contains(said), "{said:?} not in {text}");
        }
        // A file too short to be a key (its line end is not counted).
        let short = dir.path().join("short.key");
        std::fs::write(&short, "0123456789\n").expect("write");
        let error = key(&KeySource::File(short.clone())).unwrap_err();
        assert!(
            matches!(
                &error,
                KeyError::FileKey { problem: ApproveError::ShortKey(10), path } if *path == short
            ),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("the approval key is 10 bytes"),
            "{error}"
        );
        // KeyError::NoRandom needs the system's random source to fail: not made here.
    }

    #[test]
    fn the_key_of_the_first_load_stays_and_a_change_is_a_warning() {
        let dir = tempfile::tempdir().expect("temp dir");
        let keeper = Keeper::new(None);
        let mut settings = ApproveSettings {
            key: KeySource::File(dir.path().join("missing.key")),
            ..ApproveSettings::default()
        };
        // A first load whose key cannot be had fails, and keeps no key.
        let mut warnings = Vec::new();
        let error = keeper
            .consent(&settings, BTreeMap::new(), &mut warnings)
            .unwrap_err();
        assert!(matches!(error, KeyError::Unreadable { .. }), "{error:?}");
        settings.key = KeySource::Given(SECRET.into());
        keeper
            .consent(&settings, BTreeMap::new(), &mut warnings)
            .expect("a consent");
        assert!(warnings.is_empty(), "{warnings:?}");
        settings.key = KeySource::Given(format!("{SECRET}x"));
        keeper
            .consent(&settings, BTreeMap::new(), &mut warnings)
            .expect("the first key still");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("restart piton"), "{warnings:?}");
    }
}
