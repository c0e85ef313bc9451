//! What an operator sees of the calls: Prometheus metrics, the audit log and spans.
//!
//! An [`Observer`] is made from piton.toml's `[audit]` and `[tracing]` tables (the
//! [`Loader`](crate::loader::Loader) makes one and hands it to each registry it
//! builds); a registry without one has [`Observer::disabled`], which counts and
//! writes nothing. [`Registry::call`](crate::registry::Registry::call), the one call
//! path of every transport and of `piton call`, wraps each call in a [`Watch`]: it
//! counts the call in its tool's metrics and, when the call ends (or is dropped),
//! writes its audit record and queues its span ([`trace`]), a child of the caller's
//! when the call's [`CallContext`] carries a trace context. The sandbox reports
//! denials and grants through the notes of the call's [`CallContext`].

mod audit;
mod metrics;
mod trace;

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};
use std::time::{Instant, SystemTime};

use serde_json::Value;

use crate::call::CallContext;
use crate::call::notes;
use crate::config::audit::AuditSettings;
use crate::config::tracing::TracingSettings;
use crate::error::{CallError, Trap};
use crate::tool::{Tool, ToolError, ToolResult};
pub(crate) use audit::{Approval, rfc3339};
use audit::{AuditLog, Record};
pub(crate) use metrics::ToolStats;
use metrics::{ErrorKind, InFlight, Metrics};
use piton_wit::Hints;
use trace::{CallSpan, Spans};

pub use crate::wasm::cache::CacheCounts;

/// Metrics, the audit log and spans, shared by every registry a loader builds.
pub struct Observer {
    /// None: the observer is [disabled](Observer::disabled).
    metrics: Option<Metrics>,
    audit: Option<AuditLog>,
    spans: Option<Spans>,
    cache: Arc<CacheCounts>,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("audit", &self.audit)
            .field("spans", &self.spans)
            .finish_non_exhaustive()
    }
}

/// Why an [`Observer`] could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ObserveError {
    /// The audit log named in piton.toml cannot be opened.
    #[error("cannot open the audit log {to}: {error}")]
    Audit {
        /// Where it was to go.
        to: String,
        /// Why not.
        error: std::io::Error,
    },
    /// The metrics could not be set up.
    #[error("cannot set up the metrics: {0}")]
    Metrics(String),
    /// The span exporter named in piton.toml could not be set up.
    #[error("cannot set up the OTLP exporter for {to}: {error}")]
    Tracing {
        /// Where spans were to go.
        to: String,
        /// Why not.
        error: String,
    },
}

impl Observer {
    /// Metrics, the audit log `settings` asks for (opened now) and the span
    /// exporter `tracing` asks for (started now; it sends nothing until a call
    /// ends); `cache` is where the runtime counts compile cache hits and misses.
    pub fn new(
        settings: &AuditSettings,
        tracing: &TracingSettings,
        cache: Arc<CacheCounts>,
    ) -> Result<Arc<Self>, ObserveError> {
        let metrics = Metrics::new().map_err(|e| ObserveError::Metrics(e.to_string()))?;
        let audit = AuditLog::open(settings).map_err(|error| ObserveError::Audit {
            to: settings
                .to
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            error,
        })?;
        let spans = Spans::start(tracing).map_err(|error| ObserveError::Tracing {
            to: tracing
                .otlp
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            error,
        })?;
        Ok(Arc::new(Self {
            metrics: Some(metrics),
            audit,
            spans,
            cache,
        }))
    }

    /// The observer of a registry that has none: it keeps no metrics and writes no
    /// audit record, so a call takes the same path whether it is observed or not.
    pub fn disabled() -> Arc<Self> {
        static DISABLED: LazyLock<Arc<Observer>> = LazyLock::new(|| {
            Arc::new(Observer {
                metrics: None,
                audit: None,
                spans: None,
                cache: Arc::default(),
            })
        });
        DISABLED.clone()
    }

    /// Whether this is [`Observer::disabled`].
    pub fn is_disabled(&self) -> bool {
        self.metrics.is_none()
    }

    /// Every metric in Prometheus' text format (what `/metrics` serves); nothing
    /// from a disabled observer.
    pub fn metrics_text(&self) -> String {
        self.metrics
            .as_ref()
            .map(|metrics| metrics.render(&self.cache))
            .unwrap_or_default()
    }

    /// Waits (a few seconds at most) until the audit records of calls that have
    /// ended are written and their spans sent. Blocking.
    pub fn flush(&self) {
        if let Some(audit) = &self.audit {
            audit.flush();
        }
        if let Some(spans) = &self.spans {
            spans.flush();
        }
    }

    /// The metric handles of the tool called `name` (none when disabled).
    pub(crate) fn tool_stats(&self, name: &str) -> Option<ToolStats> {
        self.metrics.as_ref().map(|metrics| metrics.tool(name))
    }

    /// Drops the series of every tool not in `names`: a reload left them out.
    pub(crate) fn keep_only(&self, names: &[String]) {
        let Some(metrics) = &self.metrics else {
            return;
        };
        for name in metrics.tools() {
            if names.binary_search(&name).is_err() {
                metrics.forget(&name);
            }
        }
    }

    /// Starts watching the call `ctx` of `name` with `args`.
    pub(crate) fn watch<'a>(
        &'a self,
        ctx: &'a CallContext,
        name: &'a str,
        args: &Value,
    ) -> Watch<'a> {
        let args = self.audit.as_ref().map(|audit| {
            (
                audit::arguments_sha256(args),
                audit.arguments.then(|| args.clone()),
            )
        });
        // Spans list denials as events, as the audit log lists them.
        ctx.notes()
            .keep_details(self.audit.is_some() || self.spans.is_some());
        Watch {
            observer: self,
            ctx,
            name,
            started: Instant::now(),
            stats: None,
            in_flight: None,
            args,
            source: None,
            trust: None,
            facts: Facts::default(),
            done: false,
        }
    }
}

/// What the call path learns of a call on the way: its hints and the approver's
/// decision.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// The call's hints, once known.
    pub(crate) hints: Option<Hints>,
    /// What the approver said.
    pub(crate) approval: Approval,
    /// How the call's consent ended, when a policy is set.
    pub(crate) consent: Option<crate::consent::Outcome>,
}

/// One call being watched; it writes the call's record when it ends, or when it is
/// dropped first (the call was cancelled).
pub(crate) struct Watch<'a> {
    observer: &'a Observer,
    /// The call's context: its notes, and the trace it belongs to.
    ctx: &'a CallContext,
    name: &'a str,
    started: Instant,
    stats: Option<Cow<'a, ToolStats>>,
    in_flight: Option<InFlight>,
    /// With an audit log: the arguments' hash, and the arguments if wanted.
    args: Option<(String, Option<Value>)>,
    source: Option<String>,
    /// How far the tool's hints are held (with spans only).
    trust: Option<&'static str>,
    /// Filled in by the call path.
    pub(crate) facts: Facts,
    done: bool,
}

impl<'a> Watch<'a> {
    /// The call found its tool, whose metric handles are `stats` (the registry's)
    /// or made now (none when the observer is disabled).
    pub(crate) fn found(&mut self, tool: &dyn Tool, stats: Option<&'a ToolStats>) {
        let stats = match stats {
            Some(stats) => Some(Cow::Borrowed(stats)),
            None => self.observer.tool_stats(self.name).map(Cow::Owned),
        };
        self.in_flight = stats.as_ref().map(|stats| stats.start());
        self.stats = stats;
        if self.observer.audit.is_some() || self.observer.spans.is_some() {
            self.source = Some(tool.source().to_string());
        }
        if self.observer.spans.is_some() {
            self.trust = Some(tool.hints_trust().as_str());
        }
    }

    /// The call ended with `result`.
    pub(crate) fn finish(mut self, result: &Result<ToolResult, CallError>) {
        self.done = true;
        let (outcome, kind, trap, message) =
            outcome_of(result, &self.facts.approval, self.facts.consent);
        self.record(outcome, kind, trap, message);
    }

    fn record(
        &mut self,
        outcome: &'static str,
        kind: Option<ErrorKind>,
        trap: Option<usize>,
        message: Option<String>,
    ) {
        let took = self.started.elapsed();
        let taken = self.ctx.notes().take();
        // A trap the tool's `on_trap = "error"` made an error result is still a trap.
        let (outcome, kind, trap) = match (kind, &taken.trap_as_error) {
            (Some(ErrorKind::Failed), Some(trap)) => {
                let index = trap_index(trap);
                let kind = trap_kind(index);
                (kind.as_str(), Some(kind), Some(index))
            }
            _ => (outcome, kind, trap),
        };
        if let Some(stats) = &self.stats {
            stats.ended(took, kind, trap, &taken.counts);
        } else if let Some(metrics) = &self.observer.metrics
            && matches!(outcome, "unknown_tool")
        {
            metrics.unknown();
        }
        self.in_flight = None;
        if let Some(consent) = self.facts.consent
            && consent != crate::consent::Outcome::NotAsked
            && let Some(metrics) = &self.observer.metrics
        {
            metrics.approval(self.name, consent.as_str());
        }
        if let Some(metrics) = &self.observer.metrics {
            for (outcome, n) in notes::QuestionOutcome::ALL
                .iter()
                .zip(taken.question_counts)
            {
                if n > 0 {
                    metrics.upstream_questions(self.name, outcome.as_str(), n);
                }
            }
        }
        if self.observer.audit.is_none() && self.observer.spans.is_none() {
            return;
        }
        let mut tool = self.name.to_owned();
        notes::truncate(&mut tool, 128);
        let secrets = &taken.secrets;
        let denied: u64 = taken.counts.iter().sum();
        let listed = taken.listed.len() as u64;
        let denials: Vec<_> = taken
            .listed
            .into_iter()
            .map(|mut denial| {
                denial.target = notes::redact(&denial.target, secrets);
                denial
            })
            .collect();
        let message = message.map(|m| {
            let mut m = notes::redact(&m, secrets);
            notes::truncate(&mut m, audit::MAX_MESSAGE);
            m
        });
        let ended = SystemTime::now();
        let started = ended.checked_sub(took).unwrap_or(ended);
        if let Some(spans) = &self.observer.spans {
            spans.record(&CallSpan {
                tool: &tool,
                source: self.source.as_deref(),
                trust: self.trust,
                hints: self.facts.hints,
                outcome,
                message: message.as_deref(),
                denials: &denials,
                denied,
                approval: &self.facts.approval,
                started,
                ended,
                parent: self.ctx.trace.as_ref(),
                state: self.ctx.tracestate.as_ref(),
            });
        }
        let Some(audit) = &self.observer.audit else {
            return;
        };
        let (arguments_sha256, arguments) = match self.args.take() {
            Some((hash, args)) => (Some(hash), args),
            None => (None, None),
        };
        let record = Record {
            time: audit::rfc3339(started),
            tool: &tool,
            source: self.source.take(),
            hints: self.facts.hints,
            granted: taken.granted,
            denials,
            denials_not_listed: denied.saturating_sub(listed),
            approval: std::mem::take(&mut self.facts.approval),
            consent: self.facts.consent.map(crate::consent::Outcome::as_str),
            upstream_questions_not_listed: taken
                .question_counts
                .iter()
                .sum::<u64>()
                .saturating_sub(taken.questions.len() as u64),
            upstream_questions: taken.questions,
            duration_ms: took.as_secs_f64() * 1000.0,
            outcome,
            message,
            arguments_sha256,
            arguments,
            made_by: self.ctx.made_by().cloned(),
            call: self.ctx.id(),
        };
        if !audit.write(&record)
            && let Some(metrics) = &self.observer.metrics
        {
            metrics.audit_dropped();
        }
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            self.record("cancelled", None, None, None);
        }
    }
}

/// A call's outcome word, error kind, trap kind (index in `TRAP_KINDS`) and message.
fn outcome_of(
    result: &Result<ToolResult, CallError>,
    approval: &Approval,
    consent: Option<crate::consent::Outcome>,
) -> (
    &'static str,
    Option<ErrorKind>,
    Option<usize>,
    Option<String>,
) {
    let kind = match result {
        Ok(Ok(_)) => return ("ok", None, None, None),
        Ok(Err(ToolError::Input(_))) => ErrorKind::Input,
        Ok(Err(_)) if matches!(approval, Approval::Deny(_)) => ErrorKind::NotApproved,
        Ok(Err(_)) if consent.is_some_and(|c| !c.runs()) => ErrorKind::NotApproved,
        Err(CallError::InputRequired { .. }) => {
            return ("input_required", None, None, None);
        }
        Ok(Err(_)) => ErrorKind::Failed,
        Err(CallError::UnknownTool { .. }) => {
            return ("unknown_tool", None, None, result_message(result));
        }
        Err(CallError::Trap { trap, .. }) => {
            let index = trap_index(trap);
            let kind = trap_kind(index);
            return (
                kind.as_str(),
                Some(kind),
                Some(index),
                result_message(result),
            );
        }
        Err(CallError::Busy { .. }) => ErrorKind::Busy,
        Err(CallError::Connection { .. }) => ErrorKind::Connection,
        Err(CallError::Host { .. }) => ErrorKind::Host,
    };
    (kind.as_str(), Some(kind), None, result_message(result))
}

/// The index of `trap`'s kind in `TRAP_KINDS`.
fn trap_index(trap: &Trap) -> usize {
    match trap {
        Trap::Deadline(_) => 0,
        Trap::Memory(_) => 1,
        Trap::Output { .. } => 2,
        Trap::Resources(_) => 3,
        Trap::Guest(_) => 4,
    }
}

/// The error kind of a trap of kind `index`: a deadline is a timeout.
fn trap_kind(index: usize) -> ErrorKind {
    if index == 0 {
        ErrorKind::Timeout
    } else {
        ErrorKind::Trap
    }
}

fn result_message(result: &Result<ToolResult, CallError>) -> Option<String> {
    match result {
        Ok(Ok(_)) => None,
        Ok(Err(error)) => Some(error.to_string()),
        Err(error) => Some(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_off_by_default() {
        let observer = Observer::new(
            &AuditSettings::default(),
            &TracingSettings::default(),
            Arc::default(),
        )
        .expect("an observer");
        assert!(observer.spans.is_none());
    }

    #[test]
    fn each_outcome_has_its_word_and_kind() {
        let trap = |trap| Err(CallError::trap("t", trap));
        let cases: Vec<(Result<ToolResult, CallError>, Approval, &str)> = vec![
            (Ok(Ok(Vec::new())), Approval::None, "ok"),
            (
                Ok(Err(ToolError::Input("x".into()))),
                Approval::None,
                "input",
            ),
            (
                Ok(Err(ToolError::Failed("x".into()))),
                Approval::None,
                "failed",
            ),
            (
                Ok(Err(ToolError::Failed("x".into()))),
                Approval::Deny("no".into()),
                "not_approved",
            ),
            (
                trap(Trap::Deadline(std::time::Duration::from_secs(1))),
                Approval::None,
                "timeout",
            ),
            (trap(Trap::Guest("boom".into())), Approval::None, "trap"),
            (
                Err(CallError::UnknownTool {
                    name: "x".into(),
                    known: Vec::new(),
                }),
                Approval::None,
                "unknown_tool",
            ),
        ];
        for (result, approval, word) in cases {
            let (outcome, kind, _, message) = outcome_of(&result, &approval, None);
            assert_eq!(outcome, word);
            assert_eq!(kind.map(ErrorKind::as_str).unwrap_or(outcome), word);
            assert_eq!(message.is_none(), word == "ok");
        }
    }
}
