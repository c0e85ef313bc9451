//! An upstream server's own questions: an `elicitation/create` it sends during a
//! call of one of its tools goes to the person who made that call, with the
//! server's name on it, and their answer goes back unchanged.
//!
//! Over Streamable HTTP a question that arrives on the response stream of a
//! `tools/call` belongs to that call ([`Origin::Request`]): it goes to whoever made
//! it, however many callers the connection has at once. A question that names no
//! call (stdio, or an HTTP server's stream of its own) is sent only when the calls
//! in flight on the connection were all made by one asker. Otherwise (no such call,
//! calls from several clients, a call whose client cannot be asked) it is declined,
//! and the log says why. The question is put to the person from the call's own
//! task (so over Streamable HTTP it rides the call's stream), at most [`MAX_ASKS`]
//! times per call, and a message or form over [`MAX_QUESTION`] bytes is declined
//! unseen. What became of each question that reached a call is in that call's
//! notes (its audit record and `piton_upstream_questions_total`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, RequestId};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::call::notes::{Notes, QuestionOutcome};
use crate::call::{Elicit, Question, one_line};

/// How many questions one call's server may ask; more are declined.
pub(super) const MAX_ASKS: usize = 4;

/// The most bytes a question's message, or its form as JSON, may have.
pub(super) const MAX_QUESTION: usize = 64 * 1024;

/// How long a question that names a request waits for piton to have noted which
/// call sent it (the request goes out before its id is noted).
const NOTED_WITHIN: Duration = Duration::from_secs(2);

const NOT_IN_FLIGHT: &str = "the request it came with is no call of its tools in flight";
const CANNOT_BE_ASKED: &str = "the client that called its tool cannot be asked";

/// Which outbound request a question came with, as the transport tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// It came on the response stream of this request.
    Request(RequestId),
    /// The transport cannot tell (stdio), or it came on no request's stream.
    Unknown,
}

/// One question on its way to a call's task, and where its answer goes.
pub(super) struct Ask {
    question: Question,
    answer: oneshot::Sender<Result<ElicitResult, String>>,
}

struct InFlight {
    key: u64,
    /// The id of the call's `tools/call`, once sent.
    request: Option<RequestId>,
    asker: Option<Arc<dyn Elicit>>,
    asks: mpsc::Sender<Ask>,
    notes: Arc<Notes>,
}

/// The calls in flight on one connection, each with how its person is asked.
#[derive(Default)]
pub(super) struct Relay {
    calls: Mutex<Vec<InFlight>>,
    next: AtomicU64,
    /// Woken when a call's request id is noted.
    noted: Notify,
}

/// A call's place among those in flight; it leaves when dropped.
pub(super) struct Entered {
    relay: Arc<Relay>,
    key: u64,
    /// The questions for this call.
    pub(super) asks: mpsc::Receiver<Ask>,
    asker: Option<Arc<dyn Elicit>>,
    notes: Arc<Notes>,
    asked: usize,
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.relay.calls().retain(|call| call.key != self.key);
    }
}

/// Where a call's request id is noted; cheap to clone, for the call's future.
#[derive(Clone)]
pub(super) struct Sent {
    relay: Arc<Relay>,
    key: u64,
}

impl Sent {
    /// Notes that the call's `tools/call` went out as `id`.
    pub(super) fn sent(&self, id: RequestId) {
        let mut calls = self.relay.calls();
        if let Some(call) = calls.iter_mut().find(|call| call.key == self.key) {
            call.request = Some(id);
        }
        drop(calls);
        self.relay.noted.notify_waiters();
    }
}

/// The call a question goes to.
struct Routed {
    asks: mpsc::Sender<Ask>,
    notes: Arc<Notes>,
}

/// Why a question goes to no call: with the call's notes when it is one call's.
struct Unrouted {
    why: &'static str,
    notes: Option<Arc<Notes>>,
}

impl Relay {
    fn calls(&self) -> MutexGuard<'_, Vec<InFlight>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a call as in flight until the returned [`Entered`] is dropped; what
    /// becomes of its server's questions goes to `notes`.
    pub(super) fn enter(
        self: &Arc<Self>,
        asker: Option<Arc<dyn Elicit>>,
        notes: Arc<Notes>,
    ) -> Entered {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(MAX_ASKS);
        self.calls().push(InFlight {
            key,
            request: None,
            asker: asker.clone(),
            asks: tx,
            notes: notes.clone(),
        });
        Entered {
            relay: self.clone(),
            key,
            asks: rx,
            asker,
            notes,
            asked: 0,
        }
    }

    /// The call a question from `origin` goes to, or why there is none; `None`
    /// while the call that sent the request may not have noted its id yet.
    fn route(&self, origin: &Origin) -> Option<Result<Routed, Unrouted>> {
        let calls = self.calls();
        let routed = |call: &InFlight| match &call.asker {
            Some(_) => Ok(Routed {
                asks: call.asks.clone(),
                notes: call.notes.clone(),
            }),
            None => Err(Unrouted {
                why: CANNOT_BE_ASKED,
                notes: Some(call.notes.clone()),
            }),
        };
        let unrouted = |why| Some(Err(Unrouted { why, notes: None }));
        if let Origin::Request(id) = origin {
            if let Some(call) = calls.iter().find(|c| c.request.as_ref() == Some(id)) {
                return Some(routed(call));
            }
            // A call may not have noted its request's id yet.
            let noting = calls.iter().any(|call| call.request.is_none());
            return if noting {
                None
            } else {
                unrouted(NOT_IN_FLIGHT)
            };
        }
        let Some(first) = calls.first() else {
            return unrouted("no call of its tools is in flight");
        };
        if calls.len() == 1 {
            return Some(routed(first));
        }
        let Some(asker) = &first.asker else {
            return unrouted(CANNOT_BE_ASKED);
        };
        for call in &calls[1..] {
            match &call.asker {
                None => return unrouted(CANNOT_BE_ASKED),
                Some(other) if !Arc::ptr_eq(asker, other) => {
                    return unrouted("calls of its tools from more than one client are in flight");
                }
                Some(_) => {}
            }
        }
        Some(routed(first))
    }

    /// [`Relay::route`], waiting up to [`NOTED_WITHIN`] for request ids to be noted.
    async fn routed(&self, origin: &Origin) -> Result<Routed, Unrouted> {
        let deadline = tokio::time::Instant::now() + NOTED_WITHIN;
        loop {
            let noted = self.noted.notified();
            tokio::pin!(noted);
            noted.as_mut().enable();
            if let Some(route) = self.route(origin) {
                return route;
            }
            if tokio::time::timeout_at(deadline, noted).await.is_err() {
                return Err(Unrouted {
                    why: NOT_IN_FLIGHT,
                    notes: None,
                });
            }
        }
    }

    /// The answer to `request` from `server`, which came as `origin` says: the
    /// person's, or decline.
    pub(super) async fn elicit(
        &self,
        server: &str,
        request: ElicitRequestParams,
        origin: &Origin,
    ) -> ElicitResult {
        let call = match self.routed(origin).await {
            Ok(call) => call,
            Err(Unrouted { why, notes }) => {
                if let Some(notes) = notes {
                    notes.upstream_question(QuestionOutcome::NotPassedOn, Some(why));
                }
                tracing::warn!(server, "declined its question: {why}");
                return ElicitResult::new(ElicitationAction::Decline);
            }
        };
        match forward(server, request, &call.asks).await {
            Ok(result) => result,
            Err(why) => {
                call.notes
                    .upstream_question(QuestionOutcome::NotPassedOn, Some(&why));
                tracing::warn!(server, "declined its question: {why}");
                ElicitResult::new(ElicitationAction::Decline)
            }
        }
    }
}

/// Hands `request` from `server` to the call's task, and waits for its answer. The
/// call's task notes what became of a question it was handed.
async fn forward(
    server: &str,
    request: ElicitRequestParams,
    call: &mpsc::Sender<Ask>,
) -> Result<ElicitResult, String> {
    let question = question_of(server, request)?;
    let (answer, answered) = oneshot::channel();
    call.try_send(Ask { question, answer })
        .map_err(|error| match error {
            mpsc::error::TrySendError::Full(_) => {
                format!("it asked more than {MAX_ASKS} questions during one call")
            }
            mpsc::error::TrySendError::Closed(_) => "the call has ended".to_owned(),
        })?;
    match answered.await {
        Ok(Ok(result)) => Ok(result),
        // The call's task noted why.
        Ok(Err(why)) => {
            tracing::warn!(server, "declined its question: {why}");
            Ok(ElicitResult::new(ElicitationAction::Decline))
        }
        Err(_) => Err("the call ended before the question was answered".to_owned()),
    }
}

/// `request` from `server` as it is put to the person, with the server's name on
/// it; or why it is not passed on.
pub(super) fn question_of(server: &str, request: ElicitRequestParams) -> Result<Question, String> {
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
    Ok(Question {
        message: format!("MCP server `{server}` asks: {}", one_line(&message)),
        schema,
    })
}

impl Entered {
    /// Where the call's request id is to be noted.
    pub(super) fn sent(&self) -> Sent {
        Sent {
            relay: self.relay.clone(),
            key: self.key,
        }
    }

    /// Puts `ask` to the call's person and sends back their answer.
    pub(super) async fn answer(&mut self, ask: Ask) {
        let answer = self.put(ask.question).await;
        let _gone = ask.answer.send(answer);
    }

    /// Puts `question` to the call's person: their answer, or why there is none.
    /// Either is noted in the call's notes.
    pub(super) async fn put(&mut self, question: Question) -> Result<ElicitResult, String> {
        self.asked += 1;
        let answer = match &self.asker {
            _ if self.asked > MAX_ASKS => Err((
                QuestionOutcome::NotPassedOn,
                format!("it asked more than {MAX_ASKS} questions during one call"),
            )),
            None => Err((QuestionOutcome::NotPassedOn, CANNOT_BE_ASKED.to_owned())),
            Some(asker) => match asker.elicit(&question).await {
                Err(error) => Err((QuestionOutcome::NoAnswer, error.to_string())),
                Ok(value) => serde_json::from_value::<ElicitResult>(value).map_err(|e| {
                    (
                        QuestionOutcome::NoAnswer,
                        format!("the client's answer is not an elicitation result: {e}"),
                    )
                }),
            },
        };
        match answer {
            Ok(result) => {
                let outcome = match result.action {
                    ElicitationAction::Accept => QuestionOutcome::Accepted,
                    ElicitationAction::Decline => QuestionOutcome::Declined,
                    _ => QuestionOutcome::Cancelled,
                };
                self.notes.upstream_question(outcome, None);
                Ok(result)
            }
            Err((outcome, why)) => {
                self.notes.upstream_question(outcome, Some(&why));
                Err(why)
            }
        }
    }

    /// Notes that a question of the call was not passed on, and why.
    pub(super) fn not_passed_on(&self, why: &str) {
        self.notes
            .upstream_question(QuestionOutcome::NotPassedOn, Some(why));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::upstream::testing::{Person, form, noted, notes, url};

    /// Asks `request` of `relay` while `call` is answering in its own task, as
    /// Connection::call does, and gives the answer.
    async fn ask(
        relay: &Arc<Relay>,
        call: Option<&mut Entered>,
        request: ElicitRequestParams,
    ) -> ElicitResult {
        let asking = relay.elicit("py", request, &Origin::Unknown);
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
        let mut call = relay.enter(Some(person.clone()), notes());
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
        let mut call = relay.enter(Some(person.clone()), notes());
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
        let mut mute = relay.enter(None, notes());
        assert_eq!(
            ask(&relay, Some(&mut mute), form("Name?")).await.action,
            decline
        );
        // It, and one that can, at once: not sent to either.
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()), notes());
        assert_eq!(
            ask(&relay, Some(&mut call), form("Name?")).await.action,
            decline
        );
        drop(mute);
        // Two callers who can both be asked, at once: not sent to either.
        let other = Arc::new(Person::default());
        let _other_call = relay.enter(Some(other.clone()), notes());
        assert_eq!(
            ask(&relay, Some(&mut call), form("Name?")).await.action,
            decline
        );
        assert!(person.asked.lock().unwrap().is_empty());
        assert!(other.asked.lock().unwrap().is_empty());
        // The same caller twice is still one person.
        drop(_other_call);
        let _again = relay.enter(Some(person.clone()), notes());
        let result = ask(&relay, Some(&mut call), form("Name?")).await;
        assert_eq!(result.action, ElicitationAction::Accept);
    }

    #[tokio::test]
    async fn oversized_url_and_too_many_questions_are_declined_unseen() {
        let relay = Arc::new(Relay::default());
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()), notes());
        let decline = ElicitationAction::Decline;
        let long = "x".repeat(MAX_QUESTION + 1);
        assert_eq!(
            ask(&relay, Some(&mut call), form(&long)).await.action,
            decline
        );
        assert_eq!(ask(&relay, Some(&mut call), url()).await.action, decline);
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

    #[tokio::test]
    async fn a_question_that_names_its_request_goes_to_that_call_only() {
        let relay = Arc::new(Relay::default());
        let (ada, bob) = (Arc::new(Person::default()), Arc::new(Person::default()));
        let (ada_notes, bob_notes) = (notes(), notes());
        let mut ada_call = relay.enter(Some(ada.clone()), ada_notes.clone());
        let mut bob_call = relay.enter(Some(bob.clone()), bob_notes.clone());
        ada_call.sent().sent(RequestId::Number(7));
        bob_call.sent().sent(RequestId::Number(8));
        // Without an origin, two callers at once: declined, noted on neither call.
        let unknown = relay.elicit("py", form("Name?"), &Origin::Unknown).await;
        assert_eq!(unknown.action, ElicitationAction::Decline);
        // With one, each question reaches the caller of its request.
        for (call, id, person) in [(&mut bob_call, 8, &bob), (&mut ada_call, 7, &ada)] {
            let origin = Origin::Request(RequestId::Number(id));
            let asking = relay.elicit("py", form("Name?"), &origin);
            tokio::pin!(asking);
            let result = loop {
                tokio::select! {
                    result = &mut asking => break result,
                    Some(question) = call.asks.recv() => call.answer(question).await,
                }
            };
            assert_eq!(result.action, ElicitationAction::Accept);
            assert_eq!(person.asked.lock().unwrap().len(), 1);
        }
        assert_eq!(noted(&ada_notes), [(QuestionOutcome::Accepted, None)]);
        assert_eq!(noted(&bob_notes), [(QuestionOutcome::Accepted, None)]);
        // A request that is no call in flight: declined.
        let stray = Origin::Request(RequestId::Number(9));
        assert_eq!(
            relay.elicit("py", form("Name?"), &stray).await.action,
            ElicitationAction::Decline
        );
    }

    #[tokio::test]
    async fn a_question_waits_for_its_call_to_note_the_request_it_sent() {
        let relay = Arc::new(Relay::default());
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()), notes());
        let sent = call.sent();
        let origin = Origin::Request(RequestId::Number(3));
        let asking = relay.elicit("py", form("Name?"), &origin);
        tokio::pin!(asking);
        // The question came before the call noted its id: it waits for it.
        tokio::select! {
            _ = &mut asking => panic!("answered before the call was known"),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        sent.sent(RequestId::Number(3));
        let result = loop {
            tokio::select! {
                result = &mut asking => break result,
                Some(question) = call.asks.recv() => call.answer(question).await,
            }
        };
        assert_eq!(result.action, ElicitationAction::Accept);
    }

    #[tokio::test]
    async fn what_became_of_each_question_is_in_its_call_notes() {
        let relay = Arc::new(Relay::default());
        let notes = notes();
        let mut mute = relay.enter(None, notes.clone());
        ask(&relay, Some(&mut mute), form("Name?")).await;
        drop(mute);
        let person = Arc::new(Person::default());
        let mut call = relay.enter(Some(person.clone()), notes.clone());
        ask(&relay, Some(&mut call), url()).await;
        ask(&relay, Some(&mut call), form("Name?")).await;
        let noted = noted(&notes);
        assert_eq!(
            noted,
            [
                (
                    QuestionOutcome::NotPassedOn,
                    Some("the client that called its tool cannot be asked".to_owned())
                ),
                (
                    QuestionOutcome::NotPassedOn,
                    Some("piton passes on forms only, not URLs".to_owned())
                ),
                (QuestionOutcome::Accepted, None),
            ]
        );
    }
}
