//! [`CallContext`]: what one call carries with it from the transport to the tool and
//! back to the observer.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::call::elicit::Elicit;
use crate::call::notes::{Denials, Notes};
use crate::call::trace::{TraceParent, TraceState};

/// The next call's id.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A call's id: unique within this process, in the order calls were made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct CallId(u64);

impl CallId {
    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What one call carries with it: its id, its notes (what its sandboxes refused and
/// were granted, which the registry's observer reads when it ends) and the trace
/// context its caller sent.
///
/// [`Registry::call`](crate::registry::Registry::call) makes one per call;
/// [`Registry::call_with`](crate::registry::Registry::call_with) takes one a
/// transport made, with the caller's trace context. A [`Tool`](crate::tool::Tool)
/// gets it in [`Tool::call`](crate::tool::Tool::call): what the call may touch is
/// in its signature, not in a task-local.
///
/// ```
/// use piton_host::call::CallContext;
///
/// let ctx = CallContext::new().traced(
///     Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
///     Some("rojo=00f067aa0ba902b7"),
/// );
/// let trace = ctx.trace.expect("a valid traceparent");
/// assert_eq!(trace.trace_id()[0], 0x4b);
/// assert!(trace.sampled());
/// // A traceparent that does not parse is ignored, and its tracestate with it.
/// let ctx = CallContext::new().traced(Some("not a traceparent"), Some("rojo=1"));
/// assert!(ctx.trace.is_none() && ctx.tracestate.is_none());
/// ```
pub struct CallContext {
    id: CallId,
    notes: Arc<Notes>,
    /// The caller's `traceparent`, if it sent a valid one: the call's span is a
    /// child of its parent id, in its trace. `None`: the call starts a trace.
    pub trace: Option<TraceParent>,
    /// The caller's `tracestate`; only with a [`CallContext::trace`].
    pub tracestate: Option<TraceState>,
    /// How to ask the person who made the call, if their client can be asked
    /// during it: an upstream MCP server's questions are sent there, and so are
    /// the consent questions of the calls a program makes (code mode).
    asker: Option<Arc<dyn Elicit>>,
    /// Who "allow for a while" is remembered for: the caller's session or client.
    scope: Option<Arc<str>>,
    /// The program that made this call, when code mode made it.
    made_by: Option<MadeBy>,
}

/// The run of a program (code mode) that made a call: the tool that ran it and the
/// run's own call id.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MadeBy {
    /// The code-mode tool, such as `run_python`.
    pub tool: String,
    /// The id of the run's own call.
    pub run: CallId,
}

impl CallContext {
    /// A context with a new id, nothing noted and no trace context.
    pub fn new() -> Self {
        Self {
            id: CallId(NEXT_ID.fetch_add(1, Ordering::Relaxed)),
            notes: Arc::default(),
            trace: None,
            tracestate: None,
            asker: None,
            scope: None,
            made_by: None,
        }
    }

    /// A context for a call that the program run in `run` (a call of the code-mode
    /// tool `tool`) makes: a new id, the run's trace context, asker and scope, and
    /// [`CallContext::made_by`] naming the run.
    pub fn made_by_program(run: &CallContext, tool: &str) -> Self {
        Self {
            trace: run.trace,
            tracestate: run.tracestate.clone(),
            asker: run.asker.clone(),
            scope: run.scope.clone(),
            made_by: Some(MadeBy {
                tool: tool.to_owned(),
                run: run.id,
            }),
            ..Self::new()
        }
    }

    /// This context with the name "allow for a while" is remembered for (the
    /// caller's session or client), for the calls made inside this one.
    pub fn with_scope(mut self, scope: &str) -> Self {
        self.scope = Some(Arc::from(scope));
        self
    }

    /// Who "allow for a while" is remembered for, if the caller said.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The program run that made this call, if code mode made it.
    pub fn made_by(&self) -> Option<&MadeBy> {
        self.made_by.as_ref()
    }

    /// This context with a way to ask the person who made the call (a session
    /// client that declared elicitation): a question an upstream MCP server asks
    /// during the call is sent there.
    pub fn with_asker(mut self, asker: Arc<dyn Elicit>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// How to ask the person who made the call, if they can be asked.
    pub fn asker(&self) -> Option<&Arc<dyn Elicit>> {
        self.asker.as_ref()
    }

    /// This context with the caller's `traceparent` and `tracestate` values, parsed
    /// ([`TraceParent::parse`], [`TraceState::parse`]). A `traceparent` that does
    /// not parse is ignored (the call starts a trace of its own), and so is the
    /// `tracestate` sent with it, as the W3C spec says.
    pub fn traced(mut self, traceparent: Option<&str>, tracestate: Option<&str>) -> Self {
        self.trace = traceparent.and_then(TraceParent::parse);
        self.tracestate = self.trace.and(tracestate).and_then(TraceState::parse);
        self
    }

    /// The call's id.
    pub fn id(&self) -> CallId {
        self.id
    }

    /// The call's notes, for its observer.
    pub(crate) fn notes(&self) -> &Arc<Notes> {
        &self.notes
    }

    /// Where a sandbox of this call reports what it refuses and is granted.
    pub(crate) fn denials(&self) -> Denials {
        Denials::to(self.notes.clone())
    }
}

impl Default for CallContext {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("id", &self.id)
            .field("trace", &self.trace)
            .field("tracestate", &self.tracestate)
            .field("asks", &self.asker.is_some())
            .field("made_by", &self.made_by)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_context_has_its_own_id_and_notes() {
        let (a, b) = (CallContext::new(), CallContext::new());
        assert!(b.id() > a.id(), "{:?} then {:?}", a.id(), b.id());
        assert!(!Arc::ptr_eq(a.notes(), b.notes()));
        assert!(a.trace.is_none() && a.tracestate.is_none());
    }

    #[test]
    fn a_program_s_call_has_its_own_id_and_names_the_run() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let run = CallContext::new()
            .traced(Some(parent), None)
            .with_scope("session-1");
        let nested = CallContext::made_by_program(&run, "run_python");
        assert!(nested.id() > run.id());
        assert!(!Arc::ptr_eq(nested.notes(), run.notes()));
        assert_eq!(nested.trace, run.trace);
        assert_eq!(nested.scope(), Some("session-1"));
        assert_eq!(
            nested.made_by(),
            Some(&MadeBy {
                tool: "run_python".into(),
                run: run.id()
            })
        );
        assert!(run.made_by().is_none());
    }

    #[test]
    fn a_tracestate_comes_only_with_a_traceparent() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let ctx = CallContext::new().traced(Some(parent), Some("rojo=1"));
        assert_eq!(ctx.trace.map(|t| t.to_string()).as_deref(), Some(parent));
        assert_eq!(
            ctx.tracestate.as_ref().map(TraceState::as_str),
            Some("rojo=1")
        );
        let ctx = CallContext::new().traced(None, Some("rojo=1"));
        assert!(ctx.trace.is_none() && ctx.tracestate.is_none());
        // A bad tracestate leaves the traceparent.
        let ctx = CallContext::new().traced(Some(parent), Some("Bad Key=1"));
        assert!(ctx.trace.is_some() && ctx.tracestate.is_none());
    }
}
