//! One call's context: [`CallContext`] carries the call's id, its notes (what its
//! sandboxes refused and were granted, a trap turned into an error result) and the
//! caller's W3C trace context (and, from a client that can be asked, an
//! [`Elicit`] to ask its person) from the transport to the tool, and back to the
//! registry's observer when the call ends. The wasm sandbox and the observer both
//! use it; neither knows the other.

mod context;
mod elicit;
pub(crate) mod notes;
mod trace;

pub use context::{CallContext, CallId, MadeBy};
pub use elicit::{Elicit, ElicitError, Question, first_line, hides_or_breaks, one_line};
pub use trace::{MAX_TRACESTATE, TraceParent, TraceState};
