//! The `[approve]` table of piton.toml: which calls `piton serve` asks the person
//! about through their MCP client, and the key that seals an approval between the
//! two rounds of a 2026-07-28 request (docs/granting.md, "Being asked").
//!
//! ```toml
//! [approve]
//! ask = "not-read-only"   # or "destructive", "open-world", "always", "never"
//! allow_for = "10m"       # the choice "allow this tool for the next 10 minutes"; "0s": not offered
//! answer_within = "10m"   # how long a question stays open
//! key_file = "approval.key"  # or key = "…", or the environment's PITON_APPROVAL_KEY
//! ```
//!
//! `[tools.NAME] approve = "…"` sets the mode for one tool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::values::parse_duration;
use crate::consent::AskMode;

/// The environment variable an approval key may come from.
pub const KEY_VAR: &str = "PITON_APPROVAL_KEY";

/// What piton.toml's `[approve]` table sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApproveSettings {
    /// Which calls are asked about, unless a tool's own `approve` says otherwise.
    pub ask: AskMode,
    /// How long "allow this tool for a while" lasts; zero: the choice is not offered.
    pub allow_for: Duration,
    /// How long a question stays open (the life of a 2026-07-28 `requestState`).
    pub answer_within: Duration,
    /// Where the approval key comes from.
    pub key: KeySource,
}

/// Where the key sealing approvals comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum KeySource {
    /// Made at start: this process's approvals only.
    Random,
    /// `key = "…"` or `PITON_APPROVAL_KEY`.
    Given(String),
    /// `key_file = "…"`, read when serving starts.
    File(PathBuf),
}

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Random => f.write_str("Random"),
            Self::Given(_) => f.write_str("Given(***)"),
            Self::File(path) => write!(f, "File({})", path.display()),
        }
    }
}

impl Default for ApproveSettings {
    fn default() -> Self {
        Self {
            ask: AskMode::default(),
            allow_for: Duration::from_secs(600),
            answer_within: Duration::from_secs(600),
            key: KeySource::Random,
        }
    }
}

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawApprove {
    ask: Option<String>,
    allow_for: Option<String>,
    answer_within: Option<String>,
    key: Option<String>,
    key_file: Option<String>,
}

/// On error: the key (`approve.ask`) and what is wrong with it.
type KeyError = (String, String);

impl ApproveSettings {
    /// The settings of an `[approve]` table; a relative key file is in `base`, and
    /// `env` gives `PITON_APPROVAL_KEY` when the table names no key.
    pub(crate) fn parse(
        raw: RawApprove,
        base: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, KeyError> {
        let mut settings = Self::default();
        if let Some(ask) = raw.ask {
            settings.ask = AskMode::parse(&ask).map_err(|m| ("approve.ask".to_owned(), m))?;
        }
        if let Some(text) = raw.allow_for {
            settings.allow_for =
                parse_duration(&text).map_err(|m| ("approve.allow_for".to_owned(), m))?;
        }
        if let Some(text) = raw.answer_within {
            let within =
                parse_duration(&text).map_err(|m| ("approve.answer_within".to_owned(), m))?;
            if within < Duration::from_secs(10) {
                return Err((
                    "approve.answer_within".into(),
                    format!("{text:?} leaves a person no time to answer: give at least \"10s\""),
                ));
            }
            settings.answer_within = within;
        }
        settings.key = match (raw.key, raw.key_file) {
            (Some(_), Some(_)) => {
                return Err((
                    "approve.key".into(),
                    "is given twice, as `key` and as `key_file`: keep one".into(),
                ));
            }
            (Some(key), None) => {
                crate::consent::ApprovalKey::from_secret(key.trim().as_bytes())
                    .map_err(|m| ("approve.key".to_owned(), m))?;
                KeySource::Given(key)
            }
            (None, Some(file)) => KeySource::File(base.join(file)),
            (None, None) => match env(KEY_VAR) {
                Some(key) => {
                    crate::consent::ApprovalKey::from_secret(key.trim().as_bytes())
                        .map_err(|m| (KEY_VAR.to_owned(), m))?;
                    KeySource::Given(key)
                }
                None => KeySource::Random,
            },
        };
        Ok(settings)
    }
}

impl KeySource {
    /// The key: read from its file now, or made for this process.
    pub fn key(&self) -> Result<crate::consent::ApprovalKey, String> {
        match self {
            Self::Random => Ok(crate::consent::ApprovalKey::random()),
            Self::Given(text) => crate::consent::ApprovalKey::from_secret(text.trim().as_bytes()),
            Self::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    format!(
                        "approve.key_file: cannot read {}: {e}; make one with `head -c 32 \
                         /dev/urandom | base64 > {}`",
                        path.display(),
                        path.display()
                    )
                })?;
                crate::consent::ApprovalKey::from_secret(text.trim().as_bytes())
                    .map_err(|m| format!("approve.key_file {}: {m}", path.display()))
            }
        }
    }
}
