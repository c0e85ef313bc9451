//! One call's consent: whether it is asked about, the question, and what the
//! person's answer (or the lack of one) does to the call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use piton_wit::Hints;
use serde_json::Value;

use super::allow::Allowances;
use super::form::{args_digest, grants_digest, grants_shown};
use super::policy::{AskMode, AskReason, asks};
use super::question::{CHOICE, Shown};
use super::state::{Sealer, StateError, Subject};
use crate::call::{Elicit, Question};
use crate::grants::{Capabilities, Grants};
use crate::tool::{Args, Tool};

/// The key of piton's question among a 2026-07-28 result's `inputRequests`, and of
/// the answer among the retry's `inputResponses`.
pub const QUESTION_KEY: &str = "piton_approval";

/// How the client of one call can be asked.
pub enum Channel<'a> {
    /// It cannot: it did not declare the elicitation capability (form mode).
    Cannot,
    /// MCP 2026-07-28: the call answers `input_required`, and the retry carries the
    /// answer and the sealed state.
    Rounds {
        /// The retry's `inputResponses`, if this is a retry.
        responses: Option<&'a BTreeMap<String, Value>>,
        /// The retry's `requestState`, if this is a retry.
        state: Option<&'a str>,
        /// Who "allow for a while" is remembered for.
        scope: &'a str,
    },
    /// MCP 2025-11-25 sessions: `elicitation/create` now, over the session.
    Session {
        /// Sends the question and waits for the answer.
        asker: &'a dyn Elicit,
        /// The session: who "allow for a while" is remembered for.
        scope: &'a str,
    },
}

/// How a call's consent ended, for the audit log and the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The policy does not ask about this call.
    NotAsked,
    /// Asked; the answer comes with the retry (2026-07-28).
    Asked,
    /// Allowed this once.
    AllowedOnce,
    /// Allowed, and the tool for a while.
    AllowedForAWhile,
    /// Allowed by an earlier "for a while".
    AllowedEarlier,
    /// The person declined (or chose deny).
    Denied,
    /// The person cancelled the question.
    Cancelled,
    /// The client cannot be asked: refused.
    CouldNotAsk,
    /// The retry's state or answer did not check.
    Tampered,
}

impl Outcome {
    /// Every outcome, in the order of their words.
    pub const ALL: [Outcome; 9] = [
        Self::NotAsked,
        Self::Asked,
        Self::AllowedOnce,
        Self::AllowedForAWhile,
        Self::AllowedEarlier,
        Self::Denied,
        Self::Cancelled,
        Self::CouldNotAsk,
        Self::Tampered,
    ];

    /// Whether the call runs.
    pub fn runs(self) -> bool {
        matches!(
            self,
            Self::NotAsked | Self::AllowedOnce | Self::AllowedForAWhile | Self::AllowedEarlier
        )
    }

    /// The word in the audit log and in `piton_approvals_total{decision}`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotAsked => "not_asked",
            Self::Asked => "asked",
            Self::AllowedOnce => "allowed_once",
            Self::AllowedForAWhile => "allowed_for_a_while",
            Self::AllowedEarlier => "allowed_earlier",
            Self::Denied => "denied",
            Self::Cancelled => "cancelled",
            Self::CouldNotAsk => "could_not_ask",
            Self::Tampered => "tampered",
        }
    }
}

/// What becomes of a call.
#[derive(Debug)]
pub enum Verdict {
    /// Run it.
    Run(Outcome),
    /// Do not run it; the model reads this message as the call's error result.
    Refuse(Outcome, String),
    /// Answer `input_required` with this question and state (2026-07-28).
    Ask {
        /// The question.
        question: Question,
        /// The sealed `requestState`.
        state: String,
    },
}

/// The consent policy of a server, and what it remembers: the key's sealer (used
/// states) and the allowances. Kept across reloads; the modes follow piton.toml.
#[derive(Debug)]
pub struct Consent {
    ask: AskMode,
    per_tool: BTreeMap<String, AskMode>,
    allow_for: Duration,
    answer_within: Duration,
    sealer: Arc<Sealer>,
    allowances: Arc<Allowances>,
    /// Wording of the refusal: where the mode came from.
    forced: bool,
}

impl Consent {
    /// `ask` for every tool but those in `per_tool` (by served name); "allow for a
    /// while" lasts `allow_for` (zero: not offered).
    pub fn new(
        ask: AskMode,
        per_tool: BTreeMap<String, AskMode>,
        allow_for: Duration,
        answer_within: Duration,
        sealer: Arc<Sealer>,
        allowances: Arc<Allowances>,
    ) -> Self {
        Self {
            ask,
            per_tool,
            allow_for,
            answer_within,
            sealer,
            allowances,
            forced: false,
        }
    }

    /// The same, with one mode for every tool (`serve --approve`), over piton.toml.
    #[must_use]
    pub fn forced(mut self, mode: AskMode) -> Self {
        self.ask = mode;
        self.per_tool.clear();
        self.forced = true;
        self
    }

    /// How long a question stays open: a session's `elicitation/create` waits this
    /// long for the answer.
    pub fn answer_within(&self) -> Duration {
        self.answer_within
    }

    /// Forgets what was allowed for a while in `scope` (its session ended).
    pub fn forget(&self, scope: &str) {
        self.allowances.forget(scope);
    }

    /// The mode for `tool` (a served name).
    pub fn mode_for(&self, tool: &str) -> AskMode {
        self.per_tool.get(tool).copied().unwrap_or(self.ask)
    }

    /// Whether any call of `tool` can be asked about: its own hints bound every call's.
    pub fn may_ask(&self, tool: &dyn Tool) -> bool {
        asks(
            self.mode_for(&tool.spec().name),
            tool.hints(),
            tool.hints_trust().is_reliable(),
        )
        .is_some()
    }

    /// What becomes of one call of `tool` with `args` and the call's `hints`, asked
    /// over `channel`.
    pub async fn decide(
        &self,
        tool: &dyn Tool,
        args: &Args,
        hints: Hints,
        channel: &Channel<'_>,
    ) -> Verdict {
        let name = &tool.spec().name;
        let mode = self.mode_for(name);
        let Some(reason) = asks(mode, hints, tool.hints_trust().is_reliable()) else {
            return Verdict::Run(Outcome::NotAsked);
        };
        let caps = call_capabilities(tool, hints);
        let grants = grants_shown(&caps);
        let tool_grants = grants_digest(&grants_shown(&call_capabilities(tool, tool.hints())));
        let args_value = Value::Object(args.clone());
        let subject = Subject {
            tool: name.clone(),
            args_sha256: args_digest(&args_value),
            hints,
            grants_sha256: grants_digest(&grants),
        };
        let (scope, retry) = match channel {
            Channel::Cannot => {
                return Verdict::Refuse(Outcome::CouldNotAsk, self.cannot_ask(name, mode, reason));
            }
            Channel::Rounds { scope, state, .. } => (*scope, state.is_some()),
            Channel::Session { scope, .. } => (*scope, false),
        };
        if !retry
            && self
                .allowances
                .allows(scope, name, tool_grants, Instant::now())
        {
            return Verdict::Run(Outcome::AllowedEarlier);
        }
        let question = || {
            let shown = Shown {
                tool,
                hints,
                reason,
                grants: &grants,
                args: &args_value,
                args_sha256: &subject.args_sha256,
            };
            shown.question(self.allow_for)
        };
        let answer = match (channel, retry) {
            (Channel::Session { asker, .. }, _) => match asker.elicit(&question()).await {
                Ok(answer) => answer,
                Err(why) => {
                    return Verdict::Refuse(
                        Outcome::CouldNotAsk,
                        format!("`{name}` was not run: asking the user failed ({why})"),
                    );
                }
            },
            (
                Channel::Rounds {
                    state: Some(state),
                    responses,
                    ..
                },
                true,
            ) => {
                if let Err(error) = self.sealer.redeem(state, &subject, SystemTime::now()) {
                    return Verdict::Refuse(Outcome::Tampered, refused(name, &error));
                }
                match responses.and_then(|r| r.get(QUESTION_KEY)) {
                    Some(answer) => answer.clone(),
                    None => {
                        return Verdict::Refuse(
                            Outcome::Tampered,
                            format!(
                                "`{name}` was not run: the retry carried no answer to piton's \
                                 question (inputResponses.{QUESTION_KEY}); call it again to be asked"
                            ),
                        );
                    }
                }
            }
            // A first round (or a channel that cannot be asked, refused above).
            _ => {
                return match self.sealer.seal(&subject, SystemTime::now()) {
                    Ok(state) => Verdict::Ask {
                        question: question(),
                        state,
                    },
                    Err(error) => Verdict::Refuse(Outcome::CouldNotAsk, refused(name, &error)),
                };
            }
        };
        match read_answer(&answer) {
            Answer::AllowOnce => Verdict::Run(Outcome::AllowedOnce),
            Answer::AllowForAWhile if !self.allow_for.is_zero() => {
                let until = Instant::now() + self.allow_for;
                self.allowances.allow(scope, name, tool_grants, until);
                Verdict::Run(Outcome::AllowedForAWhile)
            }
            Answer::AllowForAWhile | Answer::Invalid => Verdict::Refuse(
                Outcome::Tampered,
                format!(
                    "`{name}` was not run: the answer to piton's question was not one of its \
                     choices; call it again to be asked"
                ),
            ),
            Answer::Deny => Verdict::Refuse(
                Outcome::Denied,
                format!("`{name}` was not run: the user declined"),
            ),
            Answer::Cancel => Verdict::Refuse(
                Outcome::Cancelled,
                format!("`{name}` was not run: the user cancelled the question"),
            ),
        }
    }

    /// What `piton serve` will ask about `tool`'s calls, in words (`piton inspect`).
    pub fn describe(&self, tool: &dyn Tool) -> String {
        let name = &tool.spec().name;
        let mode = self.mode_for(name);
        let set_by = self.set_by(name, mode);
        let trust = tool.hints_trust();
        match asks(mode, tool.hints(), trust.is_reliable()) {
            None => format!("never asked ({set_by})"),
            Some(reason) => {
                let mut text = format!("asked before each call ({set_by}): {}", reason.as_str());
                if !trust.is_reliable() {
                    text.push_str(&format!(
                        "; its hints are {}, so every call counts as the worst case",
                        trust.as_str()
                    ));
                } else if mode != AskMode::Always {
                    text.push_str("; a call its hints-for narrows past that is not asked");
                }
                text
            }
        }
    }

    fn set_by(&self, name: &str, mode: AskMode) -> String {
        if self.forced {
            format!("serve --approve {mode}")
        } else if self.per_tool.contains_key(name) {
            format!("piton.toml [tools.{name}] approve = \"{mode}\"")
        } else {
            format!("piton.toml [approve] ask = \"{mode}\"")
        }
    }

    fn cannot_ask(&self, name: &str, mode: AskMode, reason: AskReason) -> String {
        let set_by = self.set_by(name, mode);
        // Under `serve --approve` piton.toml's modes are not read: only the flag can
        // stop the asking.
        let stop = if self.forced {
            format!(
                "serve this run with `--approve never`, or without `--approve` and with \
                 `approve = \"never\"` in [tools.{name}] of piton.toml"
            )
        } else {
            format!("set `approve = \"never\"` in [tools.{name}] of piton.toml")
        };
        format!(
            "`{name}` was not run: its calls are asked about ({set_by}; {}), and this MCP \
             client cannot be asked: it did not declare the elicitation capability. To allow \
             it, use a client that supports elicitation (form mode) and turn it on, or stop \
             asking about this tool: {stop}",
            reason.as_str()
        )
    }
}

/// The capabilities of a call of `tool` with `hints`: its most, narrowed to them.
fn call_capabilities(tool: &dyn Tool, hints: Hints) -> Capabilities {
    let Some(report) = tool.sandbox() else {
        return Capabilities::default();
    };
    let most = report.capabilities;
    Grants {
        mounts: most.mounts.into_iter().map(|(mount, _)| mount).collect(),
        network: most.network,
        env: most.env,
    }
    .for_call(hints)
}

fn refused(name: &str, error: &StateError) -> String {
    format!("`{name}` was not run: {error}")
}

enum Answer {
    AllowOnce,
    AllowForAWhile,
    Deny,
    Cancel,
    Invalid,
}

/// An `ElicitResult` as JSON: `accept` with a decision, `decline` or `cancel`.
fn read_answer(result: &Value) -> Answer {
    match result.get("action").and_then(Value::as_str) {
        Some("decline") => Answer::Deny,
        Some("cancel") => Answer::Cancel,
        Some("accept") => match result
            .get("content")
            .and_then(|c| c.get(CHOICE))
            .and_then(Value::as_str)
        {
            Some("allow_once") => Answer::AllowOnce,
            Some("allow_for_a_while") => Answer::AllowForAWhile,
            Some("deny") => Answer::Deny,
            _ => Answer::Invalid,
        },
        _ => Answer::Invalid,
    }
}
