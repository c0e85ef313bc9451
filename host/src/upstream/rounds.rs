//! A 2026-07-28 server's questions: it answers `tools/call` with `input_required`,
//! holding requests for its client, and expects the call again with the answers
//! and its `requestState`. Its forms are put to the person who made the call, as a
//! 2025-11-25 server's `elicitation/create` is (relay.rs), from the call's own
//! task; the answers and the state go only to that call's next round, so they
//! cannot reach another call. A person who cannot be asked is not: the question is
//! declined, unseen, and the call goes on.

use rmcp::model::{
    DEFAULT_MRTR_MAX_ROUNDS, ElicitResult, ElicitationAction, InputRequest, InputRequiredResult,
    InputResponses,
};

use super::relay::{Entered, question_of};

/// How many `input_required` rounds one call may take, as rmcp's own client
/// allows; a server that asks for ever is cut off here.
pub(super) const MAX_ROUNDS: usize = DEFAULT_MRTR_MAX_ROUNDS;

/// What the next round of a call carries: the answers, by the server's keys, and
/// the server's state, as it gave it.
pub(super) struct Retry {
    pub(super) responses: Option<InputResponses>,
    pub(super) state: Option<String>,
}

/// The person's answer to each request of `asked`, from `server`, during `call`:
/// a form goes to the person (declined when it cannot); a request piton does not
/// answer for its servers (sampling, roots) ends the call, with why.
pub(super) async fn retry(
    call: &mut Entered,
    server: &str,
    asked: InputRequiredResult,
) -> Result<Retry, String> {
    let mut responses = InputResponses::new();
    for (key, request) in asked.input_requests.unwrap_or_default() {
        let request = match request {
            InputRequest::Elicitation(request) => request.params,
            InputRequest::CreateMessage(_) => {
                return Err(refused("a model's answer (sampling/createMessage)"));
            }
            InputRequest::ListRoots(_) => return Err(refused("its client's roots (roots/list)")),
            _ => return Err(refused("a request that is not a form")),
        };
        let answer = match question_of(server, request) {
            Ok(question) => call.put(question).await,
            Err(why) => {
                call.not_passed_on(&why);
                Err(why)
            }
        };
        let answer = answer.unwrap_or_else(|why| {
            tracing::warn!(server, "declined its question: {why}");
            ElicitResult::new(ElicitationAction::Decline)
        });
        let answer = serde_json::to_value(answer).map_err(|e| e.to_string())?;
        responses.insert(key, answer);
    }
    Ok(Retry {
        responses: (!responses.is_empty()).then_some(responses),
        state: asked.request_state,
    })
}

fn refused(what: &str) -> String {
    format!("asked for {what}, which piton does not give its servers")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::ElicitRequestParams;
    use serde_json::{Value, json};

    use super::*;
    use crate::call::notes::QuestionOutcome;
    use crate::upstream::relay::Relay;
    use crate::upstream::testing::{Person, form, noted, notes, url};

    fn asked(requests: Value) -> InputRequiredResult {
        serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": "the server's own",
        }))
        .unwrap()
    }

    fn elicit(params: ElicitRequestParams) -> Value {
        json!({"method": "elicitation/create", "params": params})
    }

    #[tokio::test]
    async fn each_form_goes_to_the_caller_and_each_answer_back_under_its_key() {
        let relay = Arc::new(Relay::default());
        let person = Arc::new(Person::default());
        let notes = notes();
        let mut call = relay.enter(Some(person.clone()), notes.clone());
        let requests = json!({"name": elicit(form("Name?")), "login": elicit(url())});
        let retry = retry(&mut call, "py", asked(requests)).await.unwrap();
        assert_eq!(retry.state.as_deref(), Some("the server's own"));
        let responses = retry.responses.unwrap();
        assert_eq!(responses["name"]["action"], "accept");
        assert_eq!(responses["name"]["content"], json!({"name": "Ada"}));
        // A URL is not passed on: declined, unseen.
        assert_eq!(responses["login"]["action"], "decline");
        let asked = person.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].message, "MCP server `py` asks: Name?");
        assert_eq!(
            noted(&notes),
            [
                (
                    QuestionOutcome::NotPassedOn,
                    Some("piton passes on forms only, not URLs".into())
                ),
                (QuestionOutcome::Accepted, None),
            ]
        );
    }

    #[tokio::test]
    async fn a_caller_that_cannot_be_asked_is_not_and_the_question_is_declined() {
        let relay = Arc::new(Relay::default());
        let notes = notes();
        let mut call = relay.enter(None, notes.clone());
        let retry = retry(
            &mut call,
            "py",
            asked(json!({"name": elicit(form("Name?"))})),
        )
        .await
        .unwrap();
        assert_eq!(retry.responses.unwrap()["name"]["action"], "decline");
        assert_eq!(
            noted(&notes),
            [(
                QuestionOutcome::NotPassedOn,
                Some("the client that called its tool cannot be asked".into())
            )]
        );
    }

    #[tokio::test]
    async fn a_request_for_what_piton_does_not_give_ends_the_call_unasked() {
        let relay = Arc::new(Relay::default());
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()), notes());
        let sampling = json!({
            "method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 10},
        });
        let requests = json!({"a": sampling, "b": elicit(form("Name?"))});
        let why = retry(&mut call, "py", asked(requests)).await.err().unwrap();
        assert!(why.contains("sampling/createMessage"), "{why}");
        let roots = json!({"a": {"method": "roots/list"}});
        let why = retry(&mut call, "py", asked(roots)).await.err().unwrap();
        assert!(why.contains("roots/list"), "{why}");
        assert!(person.asked.lock().unwrap().is_empty());
    }
}
