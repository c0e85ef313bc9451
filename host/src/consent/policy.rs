//! Which calls are asked about: `[approve] ask`, `[tools.NAME] approve` and
//! `serve --approve`, read against the hints a call's sandbox holds it to.

use piton_wit::Hints;
use serde::{Deserialize, Serialize};

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

/// Why one call is asked about, in words for the person and the audit log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskReason {
    /// It is not read-only.
    NotReadOnly,
    /// It may delete or overwrite.
    Destructive,
    /// It may reach the open world.
    OpenWorld,
    /// The policy asks about every call.
    Always,
}

impl AskReason {
    /// A sentence for the person being asked.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotReadOnly => "it is not read-only",
            Self::Destructive => "it may delete or overwrite",
            Self::OpenWorld => "it may reach the open world",
            Self::Always => "every call is asked about",
        }
    }
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
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "not-read-only" => Ok(Self::NotReadOnly),
            "destructive" => Ok(Self::Destructive),
            "open-world" => Ok(Self::OpenWorld),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            other => Err(format!(
                "{other:?} is not an approval mode; use one of {}",
                Self::NAMES.join(", ")
            )),
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

    /// Why a call with `hints` is asked about under this mode, or `None` when it runs
    /// without asking. Hints that are not `trusted` (an upstream server's own claim
    /// without `trust_hints`, a sandbox whose grants let the tool past its hints)
    /// count as the worst case: not read-only, destructive, open world.
    pub fn asks(self, hints: Hints, trusted: bool) -> Option<AskReason> {
        let hints = if trusted { hints } else { Hints::worst() };
        match self {
            Self::Never => None,
            Self::Always => Some(AskReason::Always),
            Self::NotReadOnly => (!hints.is_read_only()).then_some(AskReason::NotReadOnly),
            Self::Destructive => {
                (!hints.is_read_only() && hints.is_destructive()).then_some(AskReason::Destructive)
            }
            Self::OpenWorld => hints.is_open_world().then_some(AskReason::OpenWorld),
        }
    }
}

impl std::fmt::Display for AskMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AskMode {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> Hints {
        Hints::worst().destructive(false).open_world(false)
    }

    #[test]
    fn each_mode_asks_about_what_it_names() {
        let reader = Hints::read_only().open_world(false);
        let fetcher = Hints::read_only();
        let deleter = Hints::worst().open_world(false);
        let cases = [
            (AskMode::NotReadOnly, [false, false, true, true]),
            (AskMode::Destructive, [false, false, false, true]),
            (AskMode::OpenWorld, [false, true, false, false]),
            (AskMode::Always, [true, true, true, true]),
            (AskMode::Never, [false, false, false, false]),
        ];
        for (mode, expected) in cases {
            let got = [reader, fetcher, writer(), deleter].map(|h| mode.asks(h, true).is_some());
            assert_eq!(got, expected, "{mode}");
        }
    }

    #[test]
    fn untrusted_hints_are_asked_about_as_the_worst_case() {
        let claims_read_only = Hints::read_only().open_world(false);
        for mode in [
            AskMode::NotReadOnly,
            AskMode::Destructive,
            AskMode::OpenWorld,
        ] {
            assert!(mode.asks(claims_read_only, true).is_none(), "{mode}");
            assert!(mode.asks(claims_read_only, false).is_some(), "{mode}");
        }
        assert!(AskMode::Never.asks(claims_read_only, false).is_none());
    }

    #[test]
    fn modes_read_and_write_the_same_words() {
        for name in AskMode::NAMES {
            assert_eq!(AskMode::parse(name).unwrap().as_str(), name);
            let toml: AskMode = toml::Value::String(name.into()).try_into().unwrap();
            assert_eq!(toml.as_str(), name);
        }
        let err = AskMode::parse("sometimes").unwrap_err();
        assert!(err.contains("not-read-only, destructive"), "{err}");
    }
}
