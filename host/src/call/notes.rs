//! What one call's sandboxes tell its observer: each denial (the filesystem or
//! network layer refused something the guest asked for), what the call was
//! granted, and a trap its tool turned into an error result. The notes travel in
//! the call's [`CallContext`](crate::call::CallContext): a sandbox reports to the
//! [`Denials`] it is given, and the registry's observer reads the notes when the
//! call ends, for the metrics and the audit record.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::error::Trap;
use crate::grants::{Capabilities, FsAccess};

/// The most denials one call's audit record lists; past it they are only counted
/// (a guest that loops on a refused path could make millions).
pub(crate) const MAX_DENIALS_LISTED: usize = 32;

/// The most bytes of a guest's path or name a denial keeps.
const MAX_TARGET: usize = 256;

/// Which capability a denial was of: the metric label and the audit field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Capability {
    /// A mount: a write, delete, rename or link the call's access does not allow.
    Fs,
    /// The network: a host:port (or name) the call's grants do not reach, or a
    /// method a read-only call may not send.
    Net,
}

impl Capability {
    /// Every capability, for metrics.
    pub(crate) const ALL: [Capability; 2] = [Capability::Fs, Capability::Net];

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Fs => "fs",
            Self::Net => "net",
        }
    }
}

/// One refusal: what the guest asked for and why it was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Denial {
    /// The capability.
    pub(crate) capability: Capability,
    /// The path (as the guest named it, relative to the folder it opened) or
    /// host:port (or name, for a lookup).
    pub(crate) target: String,
    /// Why.
    pub(crate) why: &'static str,
}

/// The most questions of an upstream server one call's audit record lists; past it
/// they are only counted.
pub(crate) const MAX_QUESTIONS_LISTED: usize = 16;

/// The most bytes of why a question was not passed on, or its answer refused.
const MAX_WHY: usize = 256;

/// What became of a question an upstream MCP server asked during a call (the
/// metric label and the audit word).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum QuestionOutcome {
    /// Passed on; the person accepted (and filled in the form).
    Accepted,
    /// Passed on; the person declined.
    Declined,
    /// Passed on; the person cancelled.
    Cancelled,
    /// Passed on; no answer came (the client failed, or took too long).
    NoAnswer,
    /// Not passed on: piton declined it for the person (see `why`).
    NotPassedOn,
    /// A 2026-07-28 retry carrying an answer was refused: the call it named was not
    /// waiting, or was of another tool or other arguments.
    AnswerRefused,
}

impl QuestionOutcome {
    /// Every outcome, for metrics.
    pub(crate) const ALL: [QuestionOutcome; 6] = [
        Self::Accepted,
        Self::Declined,
        Self::Cancelled,
        Self::NoAnswer,
        Self::NotPassedOn,
        Self::AnswerRefused,
    ];

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Declined => "declined",
            Self::Cancelled => "cancelled",
            Self::NoAnswer => "no_answer",
            Self::NotPassedOn => "not_passed_on",
            Self::AnswerRefused => "answer_refused",
        }
    }
}

/// One question of an upstream server, as the audit record lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct UpstreamQuestion {
    pub(crate) outcome: QuestionOutcome,
    /// Why it was not passed on, got no answer, or its answer was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
}

/// What a call was granted, as the audit log shows it: mounts with the access of
/// this call, hosts with the names (never the values) of the headers added, and the
/// names (never the values) of the environment variables.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Granted {
    pub(crate) mounts: Vec<GrantedMount>,
    pub(crate) network: Vec<GrantedHost>,
    pub(crate) env: Vec<String>,
}

/// One mount of a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct GrantedMount {
    pub(crate) guest: String,
    pub(crate) host: String,
    pub(crate) access: FsAccess,
}

/// One host a call may reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct GrantedHost {
    pub(crate) host: String,
    pub(crate) headers: Vec<String>,
    pub(crate) tcp: bool,
}

impl Granted {
    fn of(caps: &Capabilities) -> Self {
        Self {
            mounts: caps
                .mounts
                .iter()
                .map(|(mount, access)| GrantedMount {
                    guest: mount.guest.clone(),
                    host: mount.host.display().to_string(),
                    access: *access,
                })
                .collect(),
            network: caps
                .network
                .iter()
                .map(|grant| GrantedHost {
                    host: grant.authority(),
                    headers: grant.headers.iter().map(|(name, _)| name.clone()).collect(),
                    tcp: grant.tcp,
                })
                .collect(),
            env: caps.env.iter().map(|(name, _)| name.clone()).collect(),
        }
    }
}

/// A call's notes, shared by its sandboxes and the registry.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    /// Whether the audit log wants details (denials listed, what was granted);
    /// without, denials are only counted.
    details: AtomicBool,
    inner: Mutex<Taken>,
}

/// What the notes hold so far.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    /// Denials by capability, in [`Capability::ALL`] order.
    pub(crate) counts: [u64; 2],
    /// The first [`MAX_DENIALS_LISTED`] denials, with details.
    pub(crate) listed: Vec<Denial>,
    /// What the call's last sandbox was granted (the `run` instance comes after
    /// the `hints-for` one, which is granted nothing).
    pub(crate) granted: Option<Granted>,
    /// The values the call was given that must not reach the log: header values
    /// and environment values.
    pub(crate) secrets: Vec<String>,
    /// The trap the tool turned into an error result (`on_trap = "error"`): the
    /// call still counts as that trap.
    pub(crate) trap_as_error: Option<Trap>,
    /// The questions its upstream server asked, by outcome, in
    /// [`QuestionOutcome::ALL`] order.
    pub(crate) question_counts: [u64; 6],
    /// The first [`MAX_QUESTIONS_LISTED`] of them.
    pub(crate) questions: Vec<UpstreamQuestion>,
}

impl Notes {
    /// From now on, with `details`, denials and grants are kept for the audit log.
    pub(crate) fn keep_details(&self, details: bool) {
        self.details.store(details, Ordering::Relaxed);
    }

    fn details(&self) -> bool {
        self.details.load(Ordering::Relaxed)
    }

    /// Notes that the tool turned `trap` into an error result.
    pub(crate) fn trap_as_error(&self, trap: Trap) {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .trap_as_error = Some(trap);
    }

    /// Notes a question the call's upstream server asked, and what became of it.
    pub(crate) fn upstream_question(&self, outcome: QuestionOutcome, why: Option<&str>) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let index = QuestionOutcome::ALL
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or(0);
        if let Some(count) = inner.question_counts.get_mut(index) {
            *count = count.saturating_add(1);
        }
        if self.details() && inner.questions.len() < MAX_QUESTIONS_LISTED {
            let why = why.map(|why| {
                let mut why = why.to_owned();
                truncate(&mut why, MAX_WHY);
                why
            });
            inner.questions.push(UpstreamQuestion { outcome, why });
        }
    }

    /// What has been noted, taken out.
    pub(crate) fn take(&self) -> Taken {
        std::mem::take(&mut *self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn deny(&self, capability: Capability, target: &dyn fmt::Display, why: &'static str) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let index = Capability::ALL
            .iter()
            .position(|c| *c == capability)
            .unwrap_or(0);
        if let Some(count) = inner.counts.get_mut(index) {
            *count = count.saturating_add(1);
        }
        if self.details() && inner.listed.len() < MAX_DENIALS_LISTED {
            // Masked before it is cut: a target padded to end mid-value would keep
            // all of the value but the bytes cut, which no longer match the mask.
            let mut target = redact(&target.to_string(), &inner.secrets);
            truncate(&mut target, MAX_TARGET);
            inner.listed.push(Denial {
                capability,
                target,
                why,
            });
        }
    }

    fn granted(&self, caps: &Capabilities) {
        if !self.details() {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let secrets = caps
            .network
            .iter()
            .flat_map(|grant| grant.headers.iter().map(|(_, secret)| secret.0.clone()))
            .chain(caps.env.iter().map(|(_, value)| value.clone()));
        inner.secrets.extend(secrets);
        inner.granted = Some(Granted::of(caps));
    }
}

/// Where a sandbox reports its denials: the notes of the call it runs for, or
/// nowhere (a load's reads of a tool's spec, which are no call). Cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Denials(Option<Arc<Notes>>);

impl Denials {
    /// Reports to `notes`.
    pub(crate) fn to(notes: Arc<Notes>) -> Self {
        Self(Some(notes))
    }

    /// Notes that the sandbox being made is granted `caps`: a sandbox calls this
    /// when it is made, so the last one of a call (its `run`) is what the call was
    /// granted.
    pub(crate) fn granted(&self, caps: &Capabilities) {
        if let Some(notes) = &self.0 {
            notes.granted(caps);
        }
    }

    /// Notes that `target` was refused `capability` because of `why`.
    pub(crate) fn deny(
        &self,
        capability: Capability,
        target: &dyn fmt::Display,
        why: &'static str,
    ) {
        if let Some(notes) = &self.0 {
            notes.deny(capability, target, why);
        }
    }
}

/// `text` with every one of `secrets` (at least 4 bytes long) replaced by
/// `[secret]`: a tool's message could repeat a value it was given.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), "[secret]");
        }
    }
    text
}

/// Cuts `text` to at most `max` bytes, on a character boundary, marking the cut.
pub(crate) fn truncate(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::{Host, Mount, MountMode, NetGrant, Secret};

    fn caps() -> Capabilities {
        Capabilities {
            mounts: vec![(
                Mount {
                    host: "/srv/data".into(),
                    guest: "/data".into(),
                    mode: MountMode::Write,
                },
                FsAccess::AddOnly,
            )],
            network: vec![NetGrant {
                host: Host::Name("api.example.com".into()),
                port: 443,
                headers: vec![("Authorization".into(), Secret("Bearer xyz".into()))],
                tcp: false,
            }],
            env: vec![("TOKEN".into(), "s3cret-value".into())],
            ..Capabilities::default()
        }
    }

    /// Notes that keep details, as with an audit log.
    fn detailed() -> Arc<Notes> {
        let notes = Arc::new(Notes::default());
        notes.keep_details(true);
        notes
    }

    #[test]
    fn a_sandbox_of_a_call_reports_to_its_notes_and_keeps_names_not_values() {
        let notes = detailed();
        let denials = Denials::to(notes.clone());
        denials.granted(&caps());
        denials.deny(Capability::Net, &"example.org:443", "not granted");
        denials.deny(Capability::Fs, &"a.txt", "existed");
        let taken = notes.take();
        assert_eq!(taken.counts, [1, 1]);
        assert_eq!(taken.listed.len(), 2);
        assert_eq!(taken.listed[0].target, "example.org:443");
        let granted = taken.granted.expect("granted");
        assert_eq!(granted.env, ["TOKEN"]);
        assert_eq!(granted.network[0].host, "api.example.com:443");
        assert_eq!(granted.network[0].headers, ["Authorization"]);
        let text = serde_json::to_string(&granted).expect("serializes");
        assert!(!text.contains("xyz") && !text.contains("s3cret"), "{text}");
        assert_eq!(taken.secrets, ["Bearer xyz", "s3cret-value"]);
    }

    #[test]
    fn without_details_denials_are_only_counted_and_grants_not_kept() {
        let notes = Arc::new(Notes::default());
        let denials = Denials::to(notes.clone());
        denials.granted(&caps());
        denials.deny(Capability::Net, &"example.org:443", "not granted");
        // Reporting nowhere (a load's reads) touches no call's notes.
        Denials::default().deny(Capability::Fs, &"x", "no");
        let taken = notes.take();
        assert_eq!(taken.counts, [0, 1]);
        assert!(taken.listed.is_empty() && taken.granted.is_none());
        assert!(taken.secrets.is_empty());
    }

    #[test]
    fn past_the_limit_denials_are_only_counted() {
        let notes = detailed();
        let denials = Denials::to(notes.clone());
        denials.granted(&Capabilities::default());
        for _ in 0..MAX_DENIALS_LISTED + 5 {
            denials.deny(Capability::Fs, &"p".repeat(1000), "no");
        }
        let taken = notes.take();
        assert_eq!(taken.counts, [MAX_DENIALS_LISTED as u64 + 5, 0]);
        assert_eq!(taken.listed.len(), MAX_DENIALS_LISTED);
        assert!(taken.listed[0].target.len() <= MAX_TARGET + '…'.len_utf8());
    }

    #[test]
    fn a_secret_at_the_cut_of_a_long_target_is_masked_before_the_cut() {
        // A guest pads a path so that the granted value ends just past the cut: cut
        // first, the value lost its last byte and no longer matched its mask.
        let notes = detailed();
        let secret = "s3cret-value";
        let padded = format!("{}{secret}", "p".repeat(MAX_TARGET - secret.len() + 1));
        let denials = Denials::to(notes.clone());
        denials.granted(&caps());
        denials.deny(Capability::Fs, &padded, "existed");
        let taken = notes.take();
        // What the audit record gets: the listed target, masked again at the end.
        let logged = redact(&taken.listed[0].target, &taken.secrets);
        assert!(!logged.contains("s3cret-valu"), "{logged}");
        assert!(logged.len() <= MAX_TARGET + '…'.len_utf8(), "{logged}");
    }

    #[test]
    fn secrets_are_redacted_and_short_values_left() {
        let secrets = ["Bearer abc123".to_owned(), "C".to_owned()];
        assert_eq!(
            redact("sent Bearer abc123 to C", &secrets),
            "sent [secret] to C"
        );
    }

    #[test]
    fn truncate_cuts_on_a_character_boundary() {
        let mut text = "ééé".to_owned();
        truncate(&mut text, 3);
        assert_eq!(text, "é…");
    }
}
