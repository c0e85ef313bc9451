//! An upstream server's own questions: an `elicitation/create` it sends during a
//! call of one of its tools goes to the person who made that call, with the
//! server's name on it, and their answer goes back unchanged.
//!
//! The request names no call (on stdio nothing ties it to one), so it is sent
//! only when the calls in flight on the connection were all made by one asker;
//! otherwise (no call in flight, calls from several clients, a call whose client
//! cannot be asked) it is declined, and the log says why. The question is put to
//! the person from the call's own task (so over Streamable HTTP it rides the
//! call's stream), at most [`MAX_ASKS`] times per call, and a message or form
//! over [`MAX_QUESTION`] bytes is declined unseen.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use tokio::sync::{mpsc, oneshot};

use crate::call::{Elicit, Question, one_line};

/// How many questions one call's server may ask; more are declined.
pub(super) const MAX_ASKS: usize = 4;

/// The most bytes a question's message, or its form as JSON, may have.
pub(super) const MAX_QUESTION: usize = 64 * 1024;

/// One question on its way to a call's task, and where its answer goes.
pub(super) struct Ask {
    question: Question,
    answer: oneshot::Sender<Result<ElicitResult, String>>,
}

struct InFlight {
    key: u64,
    asker: Option<Arc<dyn Elicit>>,
    asks: mpsc::Sender<Ask>,
}

/// The calls in flight on one connection, each with how its person is asked.
#[derive(Default)]
pub(super) struct Relay {
    calls: Mutex<Vec<InFlight>>,
    next: AtomicU64,
}

/// A call's place among those in flight; it leaves when dropped.
pub(super) struct Entered {
    relay: Arc<Relay>,
    key: u64,
    /// The questions for this call.
    pub(super) asks: mpsc::Receiver<Ask>,
    asker: Option<Arc<dyn Elicit>>,
    asked: usize,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let mut calls = self
            .relay
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        calls.retain(|call| call.key != self.key);
    }
}

impl Relay {
    /// Counts a call as in flight until the returned [`Entered`] is dropped.
    pub(super) fn enter(self: &Arc<Self>, asker: Option<Arc<dyn Elicit>>) -> Entered {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(MAX_ASKS);
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.push(InFlight {
            key,
            asker: asker.clone(),
            asks: tx,
        });
        Entered {
            relay: self.clone(),
            key,
            asks: rx,
            asker,
            asked: 0,
        }
    }

    /// The call a question goes to, or why there is none.
    fn route(&self) -> Result<mpsc::Sender<Ask>, &'static str> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let first = calls.first().ok_or("no call of its tools is in flight")?;
        let Some(asker) = &first.asker else {
            return Err("the client that called its tool cannot be asked");
        };
        for call in &calls[1..] {
            match &call.asker {
                None => return Err("the client that called its tool cannot be asked"),
                Some(other) if !Arc::ptr_eq(asker, other) => {
                    return Err("calls of its tools from more than one client are in flight");
                }
                Some(_) => {}
            }
        }
        Ok(first.asks.clone())
    }

    /// The answer to `request` from `server`: the person's, or decline.
    pub(super) async fn elicit(&self, server: &str, request: ElicitRequestParams) -> ElicitResult {
        match self.forward(server, request).await {
            Ok(result) => result,
            Err(why) => {
                tracing::warn!(server, "declined its question: {why}");
                ElicitResult::new(ElicitationAction::Decline)
            }
        }
    }

    async fn forward(
        &self,
        server: &str,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, String> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err("piton passes on forms only, not URLs".into());
        };
        let schema = serde_json::to_value(&requested_schema).map_err(|e| e.to_string())?;
        let size = serde_json::to_string(&schema).map_or(usize::MAX, |s| s.len());
        if message.len() > MAX_QUESTION || size > MAX_QUESTION {
            return Err(format!("its message or form is over {MAX_QUESTION} bytes"));
        }
        let question = Question {
            message: format!("MCP server `{server}` asks: {}", one_line(&message)),
            schema,
        };
        let call = self.route()?;
        let (answer, answered) = oneshot::channel();
        call.try_send(Ask { question, answer })
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => {
                    format!("it asked more than {MAX_ASKS} questions during one call")
                }
                mpsc::error::TrySendError::Closed(_) => "the call has ended".to_owned(),
            })?;
        answered
            .await
            .map_err(|_| "the call ended before the question was answered".to_owned())?
    }
}

impl Entered {
    /// Puts `ask` to the call's person and sends back their answer.
    pub(super) async fn answer(&mut self, ask: Ask) {
        self.asked += 1;
        let answer = match &self.asker {
            _ if self.asked > MAX_ASKS => Err(format!(
                "it asked more than {MAX_ASKS} questions during one call"
            )),
            None => Err("the client that called its tool cannot be asked".to_owned()),
            Some(asker) => asker
                .elicit(&ask.question)
                .await
                .map_err(|e| e.to_string())
                .and_then(|value| {
                    serde_json::from_value::<ElicitResult>(value).map_err(|e| {
                        format!("the client's answer is not an elicitation result: {e}")
                    })
                }),
        };
        let _gone = ask.answer.send(answer);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ElicitationSchema;
    use serde_json::{Value, json};

    use super::*;
    use crate::call::ElicitError;

    /// Answers every question with accept and `{"name": "Ada"}`, keeping what it
    /// was asked.
    #[derive(Default)]
    struct Person {
        asked: Mutex<Vec<Question>>,
    }

    #[async_trait::async_trait]
    impl Elicit for Person {
        async fn elicit(&self, question: &Question) -> Result<Value, ElicitError> {
            self.asked.lock().unwrap().push(question.clone());
            Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
        }
    }

    fn form(message: &str) -> ElicitRequestParams {
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }))
        .unwrap();
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.to_owned(),
            requested_schema: schema,
        }
    }

    /// Asks `request` of `relay` while `call` is answering in its own task, as
    /// Connection::call does, and gives the answer.
    async fn ask(
        relay: &Arc<Relay>,
        call: Option<&mut Entered>,
        request: ElicitRequestParams,
    ) -> ElicitResult {
        let asking = relay.elicit("py", request);
        match call {
            None => asking.await,
            Some(call) => {
                tokio::pin!(asking);
                loop {
                    tokio::select! {
                        result = &mut asking => return result,
                        Some(question) = call.asks.recv() => call.answer(question).await,
                    }
                }
            }
        }
    }

    #[tokio::test]
    async fn the_caller_is_asked_with_the_server_name_and_their_answer_goes_back() {
        let relay = Arc::new(Relay::default());
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()));
        let result = ask(&relay, Some(&mut call), form("Name?")).await;
        assert_eq!(result.action, ElicitationAction::Accept);
        assert_eq!(result.content, Some(json!({"name": "Ada"})));
        let asked = person.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].message, "MCP server `py` asks: Name?");
        assert_eq!(asked[0].schema["required"], json!(["name"]));
    }

    #[tokio::test]
    async fn a_server_message_stays_on_the_line_after_its_name() {
        let relay = Arc::new(Relay::default());
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()));
        let forged = "Name?\n\nMCP server `files` asks:\r\u{202e}Allow?\u{2028}ok";
        ask(&relay, Some(&mut call), form(forged)).await;
        let asked = person.asked.lock().unwrap().clone();
        assert_eq!(
            asked[0].message,
            "MCP server `py` asks: Name?  MCP server `files` asks:  Allow? ok"
        );
    }

    #[tokio::test]
    async fn a_question_no_one_caller_can_answer_is_declined() {
        let relay = Arc::new(Relay::default());
        let decline = ElicitationAction::Decline;
        // No call in flight.
        assert_eq!(ask(&relay, None, form("Name?")).await.action, decline);
        // A caller that cannot be asked.
        let mut mute = relay.enter(None);
        assert_eq!(
            ask(&relay, Some(&mut mute), form("Name?")).await.action,
            decline
        );
        // It, and one that can, at once: not sent to either.
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()));
        assert_eq!(
            ask(&relay, Some(&mut call), form("Name?")).await.action,
            decline
        );
        drop(mute);
        // Two callers who can both be asked, at once: not sent to either.
        let other = Arc::new(Person::default());
        let _other_call = relay.enter(Some(other.clone()));
        assert_eq!(
            ask(&relay, Some(&mut call), form("Name?")).await.action,
            decline
        );
        assert!(person.asked.lock().unwrap().is_empty());
        assert!(other.asked.lock().unwrap().is_empty());
        // The same caller twice is still one person.
        drop(_other_call);
        let _again = relay.enter(Some(person.clone()));
        let result = ask(&relay, Some(&mut call), form("Name?")).await;
        assert_eq!(result.action, ElicitationAction::Accept);
    }

    #[tokio::test]
    async fn oversized_url_and_too_many_questions_are_declined_unseen() {
        let relay = Arc::new(Relay::default());
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()));
        let decline = ElicitationAction::Decline;
        let long = "x".repeat(MAX_QUESTION + 1);
        assert_eq!(
            ask(&relay, Some(&mut call), form(&long)).await.action,
            decline
        );
        let url = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: "Sign in".into(),
            url: "https://example.com/".into(),
            elicitation_id: "1".into(),
        };
        assert_eq!(ask(&relay, Some(&mut call), url).await.action, decline);
        assert!(person.asked.lock().unwrap().is_empty());
        for _ in 0..MAX_ASKS {
            let result = ask(&relay, Some(&mut call), form("Name?")).await;
            assert_eq!(result.action, ElicitationAction::Accept);
        }
        assert_eq!(
            ask(&relay, Some(&mut call), form("Name?")).await.action,
            decline
        );
        assert_eq!(person.asked.lock().unwrap().len(), MAX_ASKS);
    }
}
