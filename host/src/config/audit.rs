//! The `[audit]` table of piton.toml: where the audit log goes (one JSON line per
//! call; see docs/operations.md), and whether records carry
//! the arguments. Off unless `to` is given. Like `[runtime]`, it takes effect when
//! piton starts, not at a reload.
//!
//! ```toml
//! [audit]
//! to = "audit.log"     # a file (relative to piton.toml's folder), or "stderr"
//! arguments = false    # true: records carry the arguments; else only their SHA-256
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// What piton.toml's `[audit]` table sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditSettings {
    /// Where records go; `None`: no audit log.
    pub to: Option<AuditTo>,
    /// Whether records carry each call's arguments (else only their SHA-256).
    pub arguments: bool,
}

/// Where the audit log is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditTo {
    /// piton's standard error.
    Stderr,
    /// A file, appended to (created 0600).
    File(PathBuf),
}

impl fmt::Display for AuditTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stderr => f.write_str("stderr"),
            Self::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAudit {
    to: Option<String>,
    arguments: Option<bool>,
}

/// An `[audit]` table that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// `to = ""`.
    #[error(
        "is empty: give a file such as \"audit.log\", or \"stderr\"; leave `to` out for no \
         audit log"
    )]
    EmptyTo,
    /// `arguments` without `to`.
    #[error(
        "has no effect without `to`: add to = \"audit.log\" (or \"stderr\") to the [audit] \
         table, or remove `arguments`"
    )]
    ArgumentsWithoutTo,
}

/// On error: the key (`audit.to`) and what is wrong with it.
type KeyError = (String, AuditError);

impl AuditSettings {
    /// The settings of an `[audit]` table; a relative file is in `base`.
    pub(crate) fn parse(raw: RawAudit, base: &Path) -> Result<Self, KeyError> {
        let to = match raw.to.as_deref() {
            None => None,
            Some("stderr") => Some(AuditTo::Stderr),
            Some("") => return Err(("audit.to".into(), AuditError::EmptyTo)),
            Some(file) => Some(AuditTo::File(base.join(file))),
        };
        if to.is_none() && raw.arguments.is_some() {
            return Err(("audit.arguments".into(), AuditError::ArgumentsWithoutTo));
        }
        Ok(Self {
            to,
            arguments: raw.arguments.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AuditSettings, KeyError> {
        let raw: RawAudit = toml::from_str(text).expect("an [audit] table");
        AuditSettings::parse(raw, Path::new("/etc/piton"))
    }

    #[test]
    fn off_unless_to_is_given() {
        assert_eq!(parse(""), Ok(AuditSettings::default()));
    }

    #[test]
    fn a_file_is_relative_to_the_config_and_stderr_is_a_word() {
        assert_eq!(
            parse("to = \"audit.log\"\narguments = true"),
            Ok(AuditSettings {
                to: Some(AuditTo::File("/etc/piton/audit.log".into())),
                arguments: true,
            })
        );
        assert_eq!(
            parse("to = \"/var/log/piton.jsonl\""),
            Ok(AuditSettings {
                to: Some(AuditTo::File("/var/log/piton.jsonl".into())),
                arguments: false,
            })
        );
        assert_eq!(
            parse("to = \"stderr\"").map(|s| s.to),
            Ok(Some(AuditTo::Stderr))
        );
    }

    #[test]
    fn errors_name_the_key_and_the_fix() {
        assert_eq!(
            parse("to = \"\""),
            Err(("audit.to".to_owned(), AuditError::EmptyTo))
        );
        assert_eq!(
            parse("arguments = true"),
            Err(("audit.arguments".to_owned(), AuditError::ArgumentsWithoutTo))
        );
        assert!(AuditError::EmptyTo.to_string().contains("\"stderr\""));
        assert!(
            AuditError::ArgumentsWithoutTo
                .to_string()
                .contains("add to =")
        );
        let unknown = toml::from_str::<RawAudit>("file = \"x\"").expect_err("unknown key");
        assert!(
            unknown.to_string().contains("unknown field `file`"),
            "{unknown}"
        );
    }
}
