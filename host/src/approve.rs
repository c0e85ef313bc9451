//! Asking before calls: the seed's loop that asks before calls that are not
//! read-only, as a hook on the [`Registry`](crate::registry::Registry).

use crate::tool::{Args, HintsTrust, Tool};
use piton_wit::Hints;

/// One call waiting for a decision.
pub struct ApprovalRequest<'a> {
    /// The tool to run.
    pub tool: &'a dyn Tool,
    /// Its arguments (already checked against its input schema).
    pub args: &'a Args,
    /// The hints of this call: the tool's own, narrowed by its `hints_for` answer.
    /// For a wasm tool these are what its sandbox enforces.
    pub hints: Hints,
}

impl std::fmt::Debug for ApprovalRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalRequest")
            .field("tool", &self.tool.spec().name)
            .field("args", &self.args)
            .field("hints", &self.hints)
            .finish()
    }
}

/// What an [`Approver`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Allow,
    /// Do not run it; the model gets an error result with this reason.
    Deny(String),
}

/// Decides whether a call runs. [`Registry::set_approver`](crate::registry::Registry::set_approver)
/// puts one in front of every call.
///
/// A closure `Fn(&ApprovalRequest<'_>) -> Decision` is an approver too.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// The decision for one call.
    async fn approve(&self, request: &ApprovalRequest<'_>) -> Decision;
}

#[async_trait::async_trait]
impl<F> Approver for F
where
    F: Fn(&ApprovalRequest<'_>) -> Decision + Send + Sync,
{
    async fn approve(&self, request: &ApprovalRequest<'_>) -> Decision {
        self(request)
    }
}

/// Allows read-only calls and asks another approver about the rest (by default:
/// denies them).
///
/// A wasm tool's read-only is trusted because its sandbox enforces it (no writable
/// mount; over HTTP only GET, HEAD and OPTIONS to its granted hosts), unless a grant
/// gives it raw TCP (`tcp = true`), where nothing checks what it sends: then it is
/// asked about like any call that is not read-only. An upstream MCP tool's read-only
/// is only what the server says about itself: it is trusted only with `trust_mcp`. A
/// native tool is the embedding program's own code, and is trusted.
pub struct AllowByReadOnly {
    /// Trust what upstream MCP servers declare.
    pub trust_mcp: bool,
    ask: Option<Box<dyn Approver>>,
}

impl std::fmt::Debug for AllowByReadOnly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AllowByReadOnly")
            .field("trust_mcp", &self.trust_mcp)
            .field("asks", &self.ask.is_some())
            .finish()
    }
}

impl Default for AllowByReadOnly {
    fn default() -> Self {
        Self::new(false)
    }
}

impl AllowByReadOnly {
    /// Allows read-only calls, denies the rest.
    pub fn new(trust_mcp: bool) -> Self {
        Self {
            trust_mcp,
            ask: None,
        }
    }

    /// Asks `approver` about the calls that are not (trusted to be) read-only.
    #[must_use]
    pub fn or_ask(mut self, approver: impl Approver + 'static) -> Self {
        self.ask = Some(Box::new(approver));
        self
    }

    /// Whether this call's read-only hint is one to rely on: the tool's hints
    /// trust alone decides.
    fn trusts(&self, request: &ApprovalRequest<'_>) -> bool {
        match request.tool.hints_trust() {
            HintsTrust::Enforced | HintsTrust::Native => true,
            HintsTrust::Declared => self.trust_mcp,
            HintsTrust::Trusted => true,
            HintsTrust::Unenforced => false,
        }
    }
}

#[async_trait::async_trait]
impl Approver for AllowByReadOnly {
    async fn approve(&self, request: &ApprovalRequest<'_>) -> Decision {
        if request.hints.is_read_only() && self.trusts(request) {
            return Decision::Allow;
        }
        match &self.ask {
            Some(ask) => ask.approve(request).await,
            None if request.hints.is_read_only() => {
                Decision::Deny(match request.tool.hints_trust() {
                    HintsTrust::Declared => format!(
                        "`{}` says it is read-only, but MCP servers' hints are not trusted \
                     (AllowByReadOnly without trust_mcp) and nobody was asked",
                        request.tool.spec().name
                    ),
                    _ => format!(
                        "`{}` says it is read-only, but a grant gives it raw TCP (tcp = true), \
                     where read-only is not checked, and nobody was asked",
                        request.tool.spec().name
                    ),
                })
            }
            None => Decision::Deny(format!(
                "`{}` is not read-only for this call and nobody was asked",
                request.tool.spec().name
            )),
        }
    }
}
