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
