//! Asking the person through the MCP client: what a session's `tools/call` hands
//! the [`Consent`](crate::consent::Consent) policy, and the MCP shapes of its
//! question (an `elicitation/create` form, or an `input_required` result).

use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientResult, ElicitRequest, ElicitRequestParams, InputRequest,
    InputRequests, InputRequiredResult, ServerRequest,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::consent::{Elicit, ElicitError, Question};

/// Whether a client with `caps` can be asked with a form (`"elicitation": {}` means
/// form only; a client that names modes must name `form`).
pub(super) fn can_elicit(caps: Option<&ClientCapabilities>) -> bool {
    caps.and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The form of `question` as MCP sends it.
fn form(question: &Question) -> Result<ElicitRequestParams, ElicitError> {
    let schema = serde_json::from_value(question.schema.clone()).map_err(ElicitError::Form)?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.message.clone(),
        requested_schema: schema,
    })
}

/// The `input_required` answer of a 2026-07-28 call: one question, under `key`
/// among the `inputRequests`, and the state the retry must carry.
pub(super) fn input_required(
    key: &str,
    question: &Question,
    state: String,
) -> Result<InputRequiredResult, ElicitError> {
    let request = InputRequest::Elicitation(ElicitRequest::new(form(question)?));
    let requests: InputRequests = [(key.to_owned(), request)].into();
    Ok(InputRequiredResult::new(Some(requests), Some(state)))
}

/// How long a question waits for its answer when no consent policy says
/// (`[approve] answer_within` does otherwise).
pub(super) const ANSWER_WITHIN: Duration = Duration::from_secs(600);

/// Asks over a session with `elicitation/create`, waiting `within` for the answer.
#[derive(Debug)]
pub(super) struct PeerAsker {
    pub(super) peer: Peer<RoleServer>,
    pub(super) within: Duration,
}

#[async_trait::async_trait]
impl Elicit for PeerAsker {
    async fn elicit(&self, question: &Question) -> Result<Value, ElicitError> {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(form(question)?));
        match tokio::time::timeout(self.within, self.peer.send_request(request)).await {
            Err(_) => Err(ElicitError::NoAnswer(self.within)),
            Ok(Err(error)) => Err(ElicitError::Client(Box::new(error))),
            Ok(Ok(ClientResult::ElicitResult(result))) => {
                serde_json::to_value(result).map_err(ElicitError::Answer)
            }
            Ok(Ok(_)) => Err(ElicitError::NotTheForm),
        }
    }
}

/// Who "allow for a while" is remembered for on a stateless (2026-07-28) request
/// over HTTP: the client's address (its /64 for IPv6), the `Authorization` it sends,
/// and the name its `clientInfo` gives, hashed.
pub(super) fn stateless_scope(
    client: Option<&dyn std::fmt::Display>,
    authorization: Option<&[u8]>,
    client_name: Option<&str>,
) -> String {
    let mut hash = Sha256::new();
    for part in [
        client.map(|c| c.to_string()).unwrap_or_default().as_bytes(),
        authorization.unwrap_or_default(),
        client_name.unwrap_or_default().as_bytes(),
    ] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    format!("http-{}", hex::encode(&hash.finalize()[..12]))
}
