//! Asking the person behind a call: [`Elicit`] sends one form through their MCP
//! client. Consent asks with it before a call that changes things; a call of an
//! upstream MCP server's tool carries one (in its [`CallContext`](super::CallContext))
//! so that the server's own questions reach the person who made the call.

use serde_json::Value;

/// Sends one `elicitation/create` and gives the client's result as JSON
/// (`{"action": …, "content": …}`), or why there is none.
#[async_trait::async_trait]
pub trait Elicit: Send + Sync {
    /// Asks `question`.
    async fn elicit(&self, question: &Question) -> Result<Value, String>;
}

/// What the person is asked: a message and a form (`requestedSchema`).
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    /// What the person reads.
    pub message: String,
    /// The form: `requestedSchema`.
    pub schema: Value,
}
