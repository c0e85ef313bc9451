//! Which calls are asked about: `[approve] ask`, `[tools.NAME] approve` and
//! `serve --approve`, read against the hints a call's sandbox holds it to.

use piton_wit::Hints;

pub use crate::config::approve::AskMode;

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

/// Why a call with `hints` is asked about under this mode, or `None` when it runs
/// without asking. Hints that are not `trusted` (an upstream server's own claim
/// without `trust_hints`, a sandbox whose grants let the tool past its hints)
/// count as the worst case: not read-only, destructive, open world.
pub fn asks(mode: AskMode, hints: Hints, trusted: bool) -> Option<AskReason> {
    let hints = if trusted { hints } else { Hints::worst() };
    match mode {
        AskMode::Never => None,
        AskMode::Always => Some(AskReason::Always),
        AskMode::NotReadOnly => (!hints.is_read_only()).then_some(AskReason::NotReadOnly),
        AskMode::Destructive => {
            (!hints.is_read_only() && hints.is_destructive()).then_some(AskReason::Destructive)
        }
        AskMode::OpenWorld => hints.is_open_world().then_some(AskReason::OpenWorld),
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
            let got = [reader, fetcher, writer(), deleter].map(|h| asks(mode, h, true).is_some());
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
            assert!(asks(mode, claims_read_only, true).is_none(), "{mode}");
            assert!(asks(mode, claims_read_only, false).is_some(), "{mode}");
        }
        assert!(asks(AskMode::Never, claims_read_only, false).is_none());
    }

    #[test]
    fn modes_read_and_write_the_same_words() {
        for name in AskMode::NAMES {
            assert_eq!(AskMode::parse(name).unwrap().as_str(), name);
            let toml: AskMode = toml::Value::String(name.into()).try_into().unwrap();
            assert_eq!(toml.as_str(), name);
        }
        let err = AskMode::parse("sometimes").unwrap_err();
        assert_eq!(
            err,
            crate::config::approve::ApproveError::Mode("sometimes".into())
        );
        assert!(
            err.to_string().contains("not-read-only, destructive"),
            "{err}"
        );
    }
}
