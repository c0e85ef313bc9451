//! The Prometheus metrics `piton serve --http` shows at `/metrics`: per tool, its
//! calls, errors by kind, traps by kind, denials by capability, a latency histogram
//! and the calls in flight; and the compile cache's hits and misses.
//!
//! A tool's series are made when the tool joins a registry (or, for an upstream
//! server's tool, at its first call) and dropped when a reload leaves it out, so the
//! `tool` label only ever holds names of tools in the registry. A call touches only
//! the handles its tool holds: atomic adds and a histogram observation, no lock and
//! no allocation.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use prometheus::{
    Encoder as _, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, TextEncoder,
};

use crate::call::notes::{Capability, QuestionOutcome};
use crate::wasm::cache::CacheCounts;

/// The histogram's buckets, in seconds: from a fast in-process call (~20 µs) to the
/// longest timeouts.
const BUCKETS: [f64; 19] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// How a call failed: the `kind` label of `piton_tool_errors_total` and the audit
/// record's `outcome`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The arguments were wrong (an input error result).
    Input,
    /// The tool said it failed (an error result).
    Failed,
    /// The approver denied the call.
    NotApproved,
    /// The tool trapped (not on its deadline).
    Trap,
    /// The tool ran past its deadline.
    Timeout,
    /// piton was busy; the call did not run.
    Busy,
    /// The upstream MCP server could not be reached.
    Connection,
    /// A fault of the host's own.
    Host,
}

impl ErrorKind {
    /// Every kind, for metrics.
    pub(crate) const ALL: [ErrorKind; 8] = [
        Self::Input,
        Self::Failed,
        Self::NotApproved,
        Self::Trap,
        Self::Timeout,
        Self::Busy,
        Self::Connection,
        Self::Host,
    ];

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Failed => "failed",
            Self::NotApproved => "not_approved",
            Self::Trap => "trap",
            Self::Timeout => "timeout",
            Self::Busy => "busy",
            Self::Connection => "connection",
            Self::Host => "host",
        }
    }
}

/// The `trap` label of `piton_tool_traps_total`.
pub(crate) const TRAP_KINDS: [&str; 5] = ["deadline", "memory", "output", "resources", "guest"];

/// Every metric family.
pub(crate) struct Metrics {
    registry: prometheus::Registry,
    calls: IntCounterVec,
    errors: IntCounterVec,
    traps: IntCounterVec,
    denials: IntCounterVec,
    duration: HistogramVec,
    in_flight: IntGaugeVec,
    unknown: IntCounter,
    cache_hits: IntCounter,
    cache_misses: IntCounter,
    audit_dropped: IntCounter,
    approvals: IntCounterVec,
    upstream_questions: IntCounterVec,
    /// The tools that have series.
    names: Mutex<BTreeSet<String>>,
    /// Scrapes one at a time, so the cache counts are brought up to date once.
    scrape: Mutex<()>,
}

/// One tool's handles, held by the registry: what a call touches.
#[derive(Clone)]
pub(crate) struct ToolStats {
    calls: IntCounter,
    duration: Histogram,
    in_flight: IntGauge,
    errors: [IntCounter; ErrorKind::ALL.len()],
    traps: [IntCounter; TRAP_KINDS.len()],
    denials: [IntCounter; Capability::ALL.len()],
}

impl std::fmt::Debug for ToolStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolStats")
            .field("calls", &self.calls.get())
            .finish_non_exhaustive()
    }
}

/// A call counted in flight until dropped.
pub(crate) struct InFlight(IntGauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl ToolStats {
    /// Counts a call that starts now; in flight until the guard is dropped.
    pub(crate) fn start(&self) -> InFlight {
        self.calls.inc();
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// Counts how a call ended.
    pub(crate) fn ended(
        &self,
        took: Duration,
        error: Option<ErrorKind>,
        trap: Option<usize>,
        denials: &[u64; 2],
    ) {
        self.duration.observe(took.as_secs_f64());
        if let Some(kind) = error
            && let Some(counter) = ErrorKind::ALL
                .iter()
                .position(|k| *k == kind)
                .and_then(|i| self.errors.get(i))
        {
            counter.inc();
        }
        if let Some(counter) = trap.and_then(|i| self.traps.get(i)) {
            counter.inc();
        }
        for (counter, n) in self.denials.iter().zip(denials) {
            if *n > 0 {
                counter.inc_by(*n);
            }
        }
    }
}

impl Metrics {
    /// The families, registered.
    pub(crate) fn new() -> Result<Self, prometheus::Error> {
        let registry = prometheus::Registry::new();
        let counters = |name: &str, help: &str, labels: &[&str]| {
            let vec = IntCounterVec::new(Opts::new(name, help), labels)?;
            registry.register(Box::new(vec.clone()))?;
            Ok::<_, prometheus::Error>(vec)
        };
        let counter = |name: &str, help: &str| {
            let counter = IntCounter::new(name, help)?;
            registry.register(Box::new(counter.clone()))?;
            Ok::<_, prometheus::Error>(counter)
        };
        let calls = counters(
            "piton_tool_calls_total",
            "Calls of each tool, whatever their outcome.",
            &["tool"],
        )?;
        let errors = counters(
            "piton_tool_errors_total",
            "Calls of each tool that did not succeed, by kind: input, failed, not_approved, \
             trap, timeout, busy, connection, host.",
            &["tool", "kind"],
        )?;
        let traps = counters(
            "piton_tool_traps_total",
            "Traps of each tool, by kind: deadline, memory, output, resources, guest.",
            &["tool", "trap"],
        )?;
        let denials = counters(
            "piton_tool_denials_total",
            "Requests of each tool's calls that the sandbox refused, by capability: fs, net.",
            &["tool", "capability"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "piton_tool_call_duration_seconds",
                "How long each tool's calls took, from arrival to answer.",
            )
            .buckets(BUCKETS.to_vec()),
            &["tool"],
        )?;
        registry.register(Box::new(duration.clone()))?;
        let in_flight = IntGaugeVec::new(
            Opts::new(
                "piton_tool_calls_in_flight",
                "Calls of each tool running now (each holds an instance while it runs).",
            ),
            &["tool"],
        )?;
        registry.register(Box::new(in_flight.clone()))?;
        let approvals = counters(
            "piton_approvals_total",
            "Calls the person was asked about (or could not be), by tool and decision: asked, \
             allowed_once, allowed_for_a_while, allowed_earlier, denied, cancelled, \
             could_not_ask, tampered.",
            &["tool", "decision"],
        )?;
        let upstream_questions = counters(
            "piton_upstream_questions_total",
            "Questions an upstream MCP server asked during a call of one of its tools, by \
             tool and outcome: accepted, declined, cancelled, no_answer, not_passed_on, \
             answer_refused (a 2026-07-28 retry with an answer that no waiting call took).",
            &["tool", "outcome"],
        )?;
        Ok(Self {
            approvals,
            upstream_questions,
            unknown: counter(
                "piton_unknown_tool_calls_total",
                "Calls naming no tool in the registry.",
            )?,
            cache_hits: counter(
                "piton_compile_cache_hits_total",
                "Components taken compiled from the compile cache.",
            )?,
            cache_misses: counter(
                "piton_compile_cache_misses_total",
                "Components compiled because the compile cache did not hold them.",
            )?,
            audit_dropped: counter(
                "piton_audit_records_dropped_total",
                "Audit records not written: the log could not keep up or could not be written.",
            )?,
            registry,
            calls,
            errors,
            traps,
            denials,
            duration,
            in_flight,
            names: Mutex::default(),
            scrape: Mutex::new(()),
        })
    }

    /// The handles of the tool called `name`, its series made if new.
    pub(crate) fn tool(&self, name: &str) -> ToolStats {
        {
            let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
            if !names.contains(name) {
                names.insert(name.to_owned());
            }
        }
        let with = |vec: &IntCounterVec, label: &str| vec.with_label_values(&[name, label]);
        ToolStats {
            calls: self.calls.with_label_values(&[name]),
            duration: self.duration.with_label_values(&[name]),
            in_flight: self.in_flight.with_label_values(&[name]),
            errors: ErrorKind::ALL.map(|kind| with(&self.errors, kind.as_str())),
            traps: TRAP_KINDS.map(|trap| with(&self.traps, trap)),
            denials: Capability::ALL.map(|cap| with(&self.denials, cap.as_str())),
        }
    }

    /// Counts one consent decision about a call of `tool`.
    pub(crate) fn approval(&self, tool: &str, decision: &str) {
        self.approvals.with_label_values(&[tool, decision]).inc();
    }

    /// Counts `n` questions of an upstream server during calls of `tool` that ended
    /// as `outcome`.
    pub(crate) fn upstream_questions(&self, tool: &str, outcome: &str, n: u64) {
        self.upstream_questions
            .with_label_values(&[tool, outcome])
            .inc_by(n);
    }

    /// Drops the series of the tool called `name`.
    pub(crate) fn forget(&self, name: &str) {
        for outcome in crate::consent::Outcome::ALL {
            let _ = self
                .approvals
                .remove_label_values(&[name, outcome.as_str()]);
        }
        for outcome in QuestionOutcome::ALL {
            let _ = self
                .upstream_questions
                .remove_label_values(&[name, outcome.as_str()]);
        }
        (self.names.lock().unwrap_or_else(PoisonError::into_inner)).remove(name);
        // Each removal fails only for a series that was never made: nothing to do.
        let _ = self.calls.remove_label_values(&[name]);
        let _ = self.duration.remove_label_values(&[name]);
        let _ = self.in_flight.remove_label_values(&[name]);
        for kind in ErrorKind::ALL {
            let _ = self.errors.remove_label_values(&[name, kind.as_str()]);
        }
        for trap in TRAP_KINDS {
            let _ = self.traps.remove_label_values(&[name, trap]);
        }
        for cap in Capability::ALL {
            let _ = self.denials.remove_label_values(&[name, cap.as_str()]);
        }
    }

    /// The tools that have series now, sorted.
    pub(crate) fn tools(&self) -> Vec<String> {
        let names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        names.iter().cloned().collect()
    }

    /// Counts a call of a name no tool has.
    pub(crate) fn unknown(&self) {
        self.unknown.inc();
    }

    /// Counts an audit record not written.
    pub(crate) fn audit_dropped(&self) {
        self.audit_dropped.inc();
    }

    /// Every metric in Prometheus' text format, the cache counts brought up to
    /// `cache` first.
    pub(crate) fn render(&self, cache: &CacheCounts) -> String {
        let _one = self.scrape.lock().unwrap_or_else(PoisonError::into_inner);
        let (hits, misses) = cache.get();
        for (counter, now) in [(&self.cache_hits, hits), (&self.cache_misses, misses)] {
            counter.inc_by(now.saturating_sub(counter.get()));
        }
        let mut text = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&self.registry.gather(), &mut text) {
            tracing::warn!(%error, "cannot encode the metrics");
        }
        String::from_utf8_lossy(&text).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_series_count_what_its_calls_did_and_go_when_it_is_forgotten() {
        let metrics = Metrics::new().expect("metrics");
        let stats = metrics.tool("word_count");
        drop(stats.start());
        let running = stats.start();
        stats.ended(
            Duration::from_millis(3),
            Some(ErrorKind::Timeout),
            Some(0),
            &[0, 2],
        );
        let cache = CacheCounts::default();
        cache.hit();
        cache.miss();
        cache.miss();
        let text = metrics.render(&cache);
        for line in [
            "piton_tool_calls_total{tool=\"word_count\"} 2",
            "piton_tool_calls_in_flight{tool=\"word_count\"} 1",
            "piton_tool_errors_total{kind=\"timeout\",tool=\"word_count\"} 1",
            "piton_tool_errors_total{kind=\"trap\",tool=\"word_count\"} 0",
            "piton_tool_traps_total{tool=\"word_count\",trap=\"deadline\"} 1",
            "piton_tool_denials_total{capability=\"net\",tool=\"word_count\"} 2",
            "piton_tool_call_duration_seconds_count{tool=\"word_count\"} 1",
            "piton_tool_call_duration_seconds_bucket{tool=\"word_count\",le=\"0.005\"} 1",
            "piton_tool_call_duration_seconds_bucket{tool=\"word_count\",le=\"0.0025\"} 0",
            "piton_compile_cache_hits_total 1",
            "piton_compile_cache_misses_total 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        // A second scrape does not count the cache again.
        assert!(
            metrics
                .render(&cache)
                .contains("piton_compile_cache_misses_total 2\n")
        );
        drop(running);
        assert_eq!(metrics.tools(), ["word_count"]);
        metrics.forget("word_count");
        assert!(metrics.tools().is_empty());
        assert!(!metrics.render(&cache).contains("word_count"));
    }

    #[test]
    fn label_values_are_escaped() {
        let metrics = Metrics::new().expect("metrics");
        metrics.tool("a\"b\\c\nd").start();
        let text = metrics.render(&CacheCounts::default());
        assert!(
            text.contains("piton_tool_calls_total{tool=\"a\\\"b\\\\c\\nd\"} 1"),
            "{text}"
        );
    }
}
