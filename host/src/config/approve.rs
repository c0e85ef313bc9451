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

use serde::{Deserialize, Serialize};

use super::values::parse_duration;

/// When a call is asked about before it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AskMode {
    /// Every call that is not (reliably) read-only: the seed's `AllowByReadOnly`.
    #[default]
    NotReadOnly,
    /// Calls that may delete or overwrite (destructive and not read-only).
    Destructive,
    /// Calls that may reach the open world (hosts not named in advance).
    OpenWorld,
    /// Every call.
    Always,
    /// No call: the person chose to trust every tool with what it is granted.
    Never,
}

impl AskMode {
    /// The words piton.toml and `--approve` take.
    pub const NAMES: [&'static str; 5] = [
        "not-read-only",
        "destructive",
        "open-world",
        "always",
        "never",
    ];

    /// The mode a word names, or an error listing the words.
    pub fn parse(text: &str) -> Result<Self, ApproveError> {
        match text {
            "not-read-only" => Ok(Self::NotReadOnly),
            "destructive" => Ok(Self::Destructive),
            "open-world" => Ok(Self::OpenWorld),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            other => Err(ApproveError::Mode(other.to_owned())),
        }
    }

    /// The word for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotReadOnly => "not-read-only",
            Self::Destructive => "destructive",
            Self::OpenWorld => "open-world",
            Self::Always => "always",
            Self::Never => "never",
        }
    }
}

impl std::fmt::Display for AskMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AskMode {
    type Err = ApproveError;
    fn from_str(text: &str) -> Result<Self, ApproveError> {
        Self::parse(text)
    }
}

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

/// What is wrong in the `[approve]` table, or a tool's `approve`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApproveError {
    /// Not one of the modes: what was written.
    #[error(
        "{0:?} is not an approval mode; use one of not-read-only, destructive, open-world, \
         always, never"
    )]
    Mode(String),
    /// A duration that is not one.
    #[error(transparent)]
    Duration(#[from] super::values::ValueError),
    /// `answer_within` under a second: what was written.
    #[error("{0:?} leaves a person no time to answer: give at least \"1s\"")]
    TooShort(String),
    /// Both `key` and `key_file`.
    #[error("is given twice, as `key` and as `key_file`: keep one")]
    TwoKeys,
    /// A key under [`MIN_KEY_BYTES`]: its length.
    #[error(
        "the approval key is {0} bytes; it needs at least {MIN_KEY_BYTES} (make one with \
         `head -c 32 /dev/urandom | base64`)"
    )]
    ShortKey(usize),
}

/// On error: the key (`approve.ask`) and what is wrong with it.
type KeyError = (String, ApproveError);

impl ApproveSettings {
    /// The settings of an `[approve]` table; a relative key file is in `base`, and
    /// `env` gives `PITON_APPROVAL_KEY` when the table names no key.
    pub(crate) fn parse(
        raw: RawApprove,
        base: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, KeyError> {
        let at = |key: &str| format!("approve.{key}");
        let mut settings = Self::default();
        if let Some(ask) = raw.ask {
            settings.ask = AskMode::parse(&ask).map_err(|e| (at("ask"), e))?;
        }
        if let Some(text) = raw.allow_for {
            settings.allow_for = parse_duration(&text).map_err(|e| (at("allow_for"), e.into()))?;
        }
        if let Some(text) = raw.answer_within {
            let within = parse_duration(&text).map_err(|e| (at("answer_within"), e.into()))?;
            if within < Duration::from_secs(1) {
                return Err((at("answer_within"), ApproveError::TooShort(text)));
            }
            settings.answer_within = within;
        }
        settings.key = match (raw.key, raw.key_file) {
            (Some(_), Some(_)) => return Err((at("key"), ApproveError::TwoKeys)),
            (Some(key), None) => {
                check_key(key.trim().as_bytes()).map_err(|e| (at("key"), e))?;
                KeySource::Given(key)
            }
            (None, Some(file)) => KeySource::File(base.join(file)),
            (None, None) => match env(KEY_VAR) {
                Some(key) => {
                    check_key(key.trim().as_bytes()).map_err(|e| (KEY_VAR.to_owned(), e))?;
                    KeySource::Given(key)
                }
                None => KeySource::Random,
            },
        };
        Ok(settings)
    }
}

/// The least key length taken: HMAC-SHA-256's block of security.
pub const MIN_KEY_BYTES: usize = 32;

/// Whether `secret` can be an approval key: at least [`MIN_KEY_BYTES`] bytes.
pub fn check_key(secret: &[u8]) -> Result<(), ApproveError> {
    if secret.len() < MIN_KEY_BYTES {
        return Err(ApproveError::ShortKey(secret.len()));
    }
    Ok(())
}
