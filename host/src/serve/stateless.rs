//! A 2026-07-28 `tools/call` (no session: the request carries the client's
//! capabilities), answered the same way whichever path takes it: rmcp's handler
//! (session.rs) or the lean HTTP path (http/lean.rs).
//!
//! Nothing is remembered between such requests but the consent policy's allowances,
//! kept for the caller's scope ([`ask::stateless_scope`]), and the calls waiting for
//! an upstream server's answer (rounds.rs). A client that can be asked gets its
//! questions as `input_required` results; one that cannot is refused a call the
//! policy would ask about.

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, InputResponses, JsonObject};

use super::served::Served;
use super::{answer, ask, rounds};
use crate::call::CallContext;
use crate::consent::Channel;

/// One stateless `tools/call`, as its request gives it.
pub(super) struct Call {
    /// The call's context, with the trace context of the request.
    pub(super) ctx: CallContext,
    pub(super) name: String,
    pub(super) arguments: Option<JsonObject>,
    /// The answers of a retry after `input_required`.
    pub(super) responses: Option<InputResponses>,
    /// The request state a retry echoes back.
    pub(super) state: Option<String>,
    /// Whether the client can be asked (it declared form elicitation).
    pub(super) elicits: bool,
}

/// Answers `call` on the registry served now, which it runs on to its end. `scope`
/// names who "allow for a while" is remembered for; it is asked only of a client that
/// can be asked, as no other call reads it (one that cannot is refused, and so are the
/// calls of its programs).
pub(super) async fn call_tool(
    served: &Served,
    call: Call,
    scope: impl FnOnce() -> String,
) -> Result<CallToolResponse, ErrorData> {
    let registry = served.registry();
    let Call {
        ctx,
        name,
        arguments,
        responses,
        state,
        elicits,
    } = call;
    if elicits {
        let scope = scope();
        // The calls a program makes (code mode) are allowed for a while in it too.
        let ctx = ctx.with_scope(&scope);
        // An upstream server's question is asked with input_required (rounds.rs).
        let within = registry
            .consent()
            .map_or(ask::ANSWER_WITHIN, |c| c.answer_within());
        let request = rounds::Request {
            ctx,
            name,
            arguments,
            responses,
            state,
            scope,
            within,
        };
        return rounds::call_tool(registry, served.calls(), served.waiting(), request).await;
    }
    answer::call_tool(
        &registry,
        served.calls(),
        ctx,
        &name,
        arguments,
        &Channel::Cannot,
    )
    .await
}
