//! Spans of tool calls: one OpenTelemetry span per call, sent in batches over
//! OTLP/HTTP (protobuf) when piton.toml's `[tracing]` names a collector.
//!
//! A span is made when its call ends, from what the [`Watch`](super::Watch) learned:
//! it starts at the call's start, ends at its end, and continues the client's trace
//! when the call came with a W3C trace context (its parent is the client's span);
//! else it starts a trace of its own. Ending a span only queues it: a thread of the
//! SDK's batch processor exports the queue every few seconds (and when piton stops),
//! so a call never waits for the collector, and a slow or absent collector costs
//! dropped spans, not slower calls.
//!
//! What a span carries (names follow OpenTelemetry's GenAI conventions where they
//! have one, `piton.*` where not):
//!
//! | attribute | value |
//! |---|---|
//! | `gen_ai.operation.name` | `execute_tool` |
//! | `gen_ai.tool.name` | the tool called |
//! | `piton.tool.source` | where the tool comes from: a file, `bundled:NAME`, `mcp:SERVER`, `native` |
//! | `piton.hints.trust` | `enforced` (the sandbox holds the tool to them), `declared`, `native`, `unenforced` |
//! | `piton.hints.read_only` … `open_world` | the call's hints (after `hints-for`) |
//! | `piton.outcome` | `ok`, `input`, `failed`, `not_approved`, `timeout`, `trap`, `busy`, `connection`, `host`, `unknown_tool`, `cancelled` |
//! | `error.type` | the outcome, when it is not `ok` |
//! | `piton.denials` | how many requests the sandbox refused |
//!
//! Each refusal (up to the audit log's limit) is an event `piton.denial` with
//! `piton.denial.capability` (`fs`, `net`), `.target` and `.reason`; an approver's
//! refusal is an event `piton.not_approved` with its reason. A call that did not
//! end `ok` has the status Error, with the message the caller got.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    Event, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use piton_wit::Hints;

use super::audit::Approval;
use crate::call::notes::Denial;
use crate::call::{TraceParent, TraceState as CallerState};
use crate::config::tracing::TracingSettings;

/// How long one export may take, and how long a flush at stop waits.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where spans go: the SDK's provider (its batch processor and exporter) and the
/// tracer calls are recorded with.
pub(crate) struct Spans {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl std::fmt::Debug for Spans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spans").finish_non_exhaustive()
    }
}

/// One ended call, as its span tells it.
pub(crate) struct CallSpan<'a> {
    pub(crate) tool: &'a str,
    pub(crate) source: Option<&'a str>,
    pub(crate) trust: Option<&'static str>,
    pub(crate) hints: Option<Hints>,
    pub(crate) outcome: &'static str,
    pub(crate) message: Option<&'a str>,
    pub(crate) denials: &'a [Denial],
    pub(crate) denied: u64,
    pub(crate) approval: &'a Approval,
    pub(crate) started: SystemTime,
    pub(crate) ended: SystemTime,
    /// The caller's span, and its `tracestate`.
    pub(crate) parent: Option<&'a TraceParent>,
    pub(crate) state: Option<&'a CallerState>,
}

impl Spans {
    /// The exporter `settings` ask for, started; `None` when they ask for none.
    /// Needs no async runtime: the exporter's thread has its own.
    pub(crate) fn start(settings: &TracingSettings) -> Result<Option<Self>, String> {
        let Some(endpoint) = &settings.otlp else {
            return Ok(None);
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(http_client()?)
            .with_endpoint(endpoint.to_string())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("piton");
        Ok(Some(Self { provider, tracer }))
    }

    /// Queues the span of `call`.
    pub(crate) fn record(&self, call: &CallSpan<'_>) {
        let parent = match call.parent.and_then(|p| remote_context(p, call.state)) {
            Some(remote) => Context::new().with_remote_span_context(remote),
            None => Context::new(),
        };
        let mut attributes = Vec::with_capacity(12);
        attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        attributes.push(KeyValue::new("gen_ai.tool.name", call.tool.to_owned()));
        if let Some(source) = call.source {
            attributes.push(KeyValue::new("piton.tool.source", source.to_owned()));
        }
        if let Some(trust) = call.trust {
            attributes.push(KeyValue::new("piton.hints.trust", trust));
        }
        if let Some(hints) = call.hints {
            attributes.extend([
                KeyValue::new("piton.hints.read_only", hints.is_read_only()),
                KeyValue::new("piton.hints.destructive", hints.is_destructive()),
                KeyValue::new("piton.hints.idempotent", hints.is_idempotent()),
                KeyValue::new("piton.hints.open_world", hints.is_open_world()),
            ]);
        }
        attributes.push(KeyValue::new("piton.outcome", call.outcome));
        if call.outcome != "ok" {
            attributes.push(KeyValue::new("error.type", call.outcome));
        }
        attributes.push(KeyValue::new("piton.denials", saturating_i64(call.denied)));
        let mut events: Vec<Event> = call
            .denials
            .iter()
            .map(|denial| {
                Event::new(
                    "piton.denial",
                    call.ended,
                    vec![
                        KeyValue::new("piton.denial.capability", denial.capability.as_str()),
                        KeyValue::new("piton.denial.target", denial.target.clone()),
                        KeyValue::new("piton.denial.reason", denial.why),
                    ],
                    0,
                )
            })
            .collect();
        if let Approval::Deny(reason) = call.approval {
            events.push(Event::new(
                "piton.not_approved",
                call.ended,
                vec![KeyValue::new("piton.reason", reason.clone())],
                0,
            ));
        }
        let mut span = self
            .tracer
            .span_builder(format!("execute_tool {}", call.tool))
            .with_kind(SpanKind::Internal)
            .with_start_time(call.started)
            .with_attributes(attributes)
            .with_events(events)
            .start_with_context(&self.tracer, &parent);
        use opentelemetry::trace::Span as _;
        if call.outcome != "ok" {
            let description: Cow<'static, str> = match call.message {
                Some(message) => Cow::Owned(message.to_owned()),
                None => Cow::Borrowed(call.outcome),
            };
            span.set_status(Status::error(description));
        }
        span.end_with_timestamp(call.ended);
    }

    /// Waits (a few seconds at most) until the spans queued so far are exported.
    /// Blocking.
    pub(crate) fn flush(&self) {
        if let Err(error) = self.provider.force_flush() {
            tracing::warn!(%error, "spans could not all be sent to the OTLP collector");
        }
    }
}

impl Drop for Spans {
    fn drop(&mut self) {
        // Stops the batch thread, sending what is queued (bounded by the timeout).
        let _ = self.provider.shutdown_with_timeout(EXPORT_TIMEOUT);
    }
}

/// The exporter's HTTP client: reqwest's blocking one (the batch processor exports
/// from a plain thread), with piton's rustls (ring, the webpki roots) and no
/// redirects. Made on a thread of its own: the blocking client owns a runtime, which
/// may not be made, or dropped, inside the async one the loader runs on.
fn http_client() -> Result<reqwest::blocking::Client, String> {
    std::thread::spawn(|| {
        let tls = crate::tls::client_config()?;
        reqwest::blocking::Client::builder()
            .tls_backend_preconfigured(tls)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("HTTP client setup failed: {e}"))
    })
    .join()
    .map_err(|_| "HTTP client setup failed".to_owned())?
}

/// The client's span as OpenTelemetry's remote span context; `None` when its ids
/// are invalid (all zero), so the call starts a trace of its own.
fn remote_context(parent: &TraceParent, state: Option<&CallerState>) -> Option<SpanContext> {
    let trace_id = TraceId::from_bytes(parent.trace_id());
    let span_id = SpanId::from_bytes(parent.parent_id());
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    // A tracestate OpenTelemetry does not take is dropped, not the parent.
    let state = state
        .and_then(|state| state.as_str().parse().ok())
        .unwrap_or(TraceState::NONE);
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(parent.flags()),
        true,
        state,
    ))
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const SPAN: &str = "00f067aa0ba902b7";

    fn parent(flags: &str) -> TraceParent {
        TraceParent::parse(&format!("00-{TRACE}-{SPAN}-{flags}")).expect("a traceparent")
    }

    #[test]
    fn a_parent_is_the_clients_remote_span() {
        let state = CallerState::parse("vendor=opaque").expect("a tracestate");
        let remote = remote_context(&parent("01"), Some(&state)).expect("a valid parent");
        assert_eq!(remote.trace_id(), TraceId::from_hex(TRACE).expect("hex"));
        assert_eq!(remote.span_id(), SpanId::from_hex(SPAN).expect("hex"));
        assert!(remote.is_remote());
        assert!(remote.is_sampled());
        assert_eq!(remote.trace_state().get("vendor"), Some("opaque"));
        let unsampled = remote_context(&parent("00"), None).expect("valid");
        assert!(!unsampled.is_sampled(), "the client's decision is kept");
        assert_eq!(unsampled.trace_state(), &TraceState::NONE);
    }
}
