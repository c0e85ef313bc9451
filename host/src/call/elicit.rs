//! Asking the person behind a call: [`Elicit`] sends one form through their MCP
//! client. Consent asks with it before a call that changes things; a call of an
//! upstream MCP server's tool carries one (in its [`CallContext`](super::CallContext))
//! so that the server's own questions reach the person who made the call.

use std::time::Duration;

use serde_json::Value;

/// Sends one `elicitation/create` and gives the client's result as JSON
/// (`{"action": …, "content": …}`), or why there is none.
#[async_trait::async_trait]
pub trait Elicit: Send + Sync {
    /// Asks `question`.
    async fn elicit(&self, question: &Question) -> Result<Value, ElicitError>;
}

/// Why asking the person gave no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitError {
    /// The question's form is not one MCP can carry.
    #[error("piton's question is not a form MCP can carry: {0}")]
    Form(#[source] serde_json::Error),
    /// No answer within `[approve] answer_within`.
    #[error("no answer within {}s ([approve] answer_within)", .0.as_secs())]
    NoAnswer(Duration),
    /// The client answered the request with an error.
    #[error("the client answered with an error: {0}")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The client's answer is not JSON piton can read.
    #[error("{0}")]
    Answer(#[source] serde_json::Error),
    /// The client answered with something else than the form's result.
    #[error("the client answered something other than the form")]
    NotTheForm,
}

/// What the person is asked: a message and a form (`requestedSchema`).
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    /// What the person reads.
    pub message: String,
    /// The form: `requestedSchema`.
    pub schema: Value,
}
