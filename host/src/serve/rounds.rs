//! MCP 2026-07-28 calls during which an upstream MCP server asks its own question.
//!
//! Such a client cannot be sent `elicitation/create` mid-call: it is asked with an
//! `input_required` answer, and its retry carries the answer. An upstream server on
//! 2025-11-25 asks mid-call and waits, so its call cannot be ended and started again:
//! the call runs in a task of its own, and when its server asks, the request answers
//! `input_required` with that question (under [`UPSTREAM_KEY`]) and a state naming
//! the call, which waits here ([`Waiting`]). The retry with that state gives the
//! answer to the waiting call and answers with its result, or with its next question.
//!
//! The state is a random id, good for the call it names (its tool and arguments)
//! on the replica that asked, once, for `[approve] answer_within`; a retry that
//! reaches another replica is told so. Every 2026-07-28 call whose client can be
//! asked runs this way, whatever its tool: nothing but an upstream server asks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, InputResponses, JsonObject};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::answer;
use super::ask;
use super::stop::Calls;
use crate::call::{CallContext, Elicit, ElicitError, Question};
use crate::consent::Channel;
use crate::consent::form::args_digest;
use crate::registry::Registry;

/// The key of an upstream server's question among a result's `inputRequests`,
/// and of its answer among the retry's `inputResponses`.
pub(super) const UPSTREAM_KEY: &str = "piton_upstream";

/// How the state of a waiting call begins (the rest is its id).
const STATE_PREFIX: &str = "piton-upstream.";

/// The most calls that wait at once; past it the one waiting longest is ended (its
/// server's question gets no answer, which it reads as declined).
const MAX_WAITING: usize = 256;

/// What a call's question waits on: the person's answer, as JSON.
type Answer = oneshot::Sender<Result<Value, ElicitError>>;

/// Hands a call's questions to the request waiting for the call, and waits
/// `within` for the retry that answers them.
struct RoundsAsker {
    questions: mpsc::Sender<(Question, Answer)>,
    within: Duration,
}

#[async_trait::async_trait]
impl Elicit for RoundsAsker {
    async fn elicit(&self, question: &Question) -> Result<Value, ElicitError> {
        let (answer, answered) = oneshot::channel();
        self.questions
            .send((question.clone(), answer))
            .await
            .map_err(|_| ElicitError::NoAnswer(self.within))?;
        match tokio::time::timeout(self.within, answered).await {
            Ok(Ok(answer)) => answer,
            // Timed out, or the call's entry was dropped unanswered.
            Err(_) | Ok(Err(_)) => Err(ElicitError::NoAnswer(self.within)),
        }
    }
}

/// A task's handle that ends the task when dropped.
struct Task(JoinHandle<Result<CallToolResponse, ErrorData>>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A call running in its own task: what it was called with, and its questions.
struct Running {
    tool: String,
    args_sha256: [u8; 32],
    task: Task,
    questions: mpsc::Receiver<(Question, Answer)>,
    /// The question the person was shown, and where its answer goes.
    asked: Option<(Question, Answer)>,
}

struct Entry {
    running: Running,
    since: Instant,
}

/// The calls waiting for a retry to answer their server's question, by id. Kept
/// by the server (across reloads and sessions: a stateless request has no session).
#[derive(Default)]
pub(super) struct Waiting {
    calls: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Waiting")
            .field("calls", &calls.len())
            .finish()
    }
}

/// One 2026-07-28 `tools/call` of a client that can be asked.
pub(super) struct Request {
    pub(super) ctx: CallContext,
    pub(super) name: String,
    pub(super) arguments: Option<JsonObject>,
    pub(super) responses: Option<InputResponses>,
    pub(super) state: Option<String>,
    /// Who "allow for a while" is remembered for.
    pub(super) scope: String,
    /// How long a question waits for its answer.
    pub(super) within: Duration,
}

/// Answers `request` on `registry`: a retry that carries a waiting call's state
/// goes on with that call; any other runs the call in a task of its own.
pub(super) async fn call_tool(
    registry: Arc<Registry>,
    calls: &Arc<Calls>,
    waiting: &Waiting,
    request: Request,
) -> Result<CallToolResponse, ErrorData> {
    let digest = args_digest(&Value::Object(
        request.arguments.clone().unwrap_or_default(),
    ));
    if let Some(id) = request
        .state
        .as_deref()
        .and_then(|state| state.strip_prefix(STATE_PREFIX))
    {
        let mut running = match waiting.take(id, &request.name, &digest, request.within) {
            Ok(running) => running,
            Err(refused) => {
                let args = Value::Object(request.arguments.unwrap_or_default());
                return Ok(refused_result(
                    &registry,
                    &request.ctx,
                    &request.name,
                    &args,
                    &refused,
                ));
            }
        };
        let answer = request
            .responses
            .and_then(|mut responses| responses.remove(UPSTREAM_KEY));
        match (answer, running.asked.take()) {
            (Some(answer), Some((_, to))) => {
                let _gone = to.send(Ok(answer));
            }
            // No answer given: ask again.
            (None, asked @ Some(_)) => {
                running.asked = asked;
                return waiting.wait(running, request.within);
            }
            (_, None) => {}
        }
        return next(waiting, running, request.within).await;
    }
    let in_flight = match calls.start(&request.name) {
        Ok(entry) => entry,
        Err(refused) => return Err(ErrorData::internal_error(refused.to_string(), None)),
    };
    let (questions, asked) = mpsc::channel(1);
    let asker = Arc::new(RoundsAsker {
        questions,
        within: request.within,
    });
    let Request {
        ctx,
        name,
        arguments,
        responses,
        state,
        scope,
        within,
    } = request;
    let tool = name.clone();
    let cut = calls.clone();
    let task = tokio::spawn(async move {
        let _in_flight = in_flight;
        let ctx = ctx.with_asker(asker);
        let channel = Channel::Rounds {
            responses: responses.as_ref(),
            state: state.as_deref(),
            scope: &scope,
        };
        tokio::select! {
            answer = answer::call(&registry, &ctx, &name, arguments, &channel) => answer,
            grace = cut.cut() => Err(answer::stopped(&name, grace)),
        }
    });
    let running = Running {
        tool,
        args_sha256: digest,
        task: Task(task),
        questions: asked,
        asked: None,
    };
    next(waiting, running, within).await
}

/// Waits for the call's answer, or its next question, which then waits here.
async fn next(
    waiting: &Waiting,
    mut running: Running,
    within: Duration,
) -> Result<CallToolResponse, ErrorData> {
    tokio::select! {
        biased;
        done = &mut running.task.0 => match done {
            Ok(answer) => answer,
            Err(error) => Err(ErrorData::internal_error(
                format!("tool `{}` ended without an answer: {error}", running.tool),
                None,
            )),
        },
        Some(question) = running.questions.recv() => {
            running.asked = Some(question);
            waiting.wait(running, within)
        }
    }
}

/// Why a retry's state names no call it may go on with.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error(
        "the call this answer was for is no longer waiting: it ended, waited longer than \
         [approve] answer_within, or waits on another piton replica (an upstream server's \
         question is answered on the replica that asked it); call the tool again"
    )]
    Gone,
    #[error("the answer was for a call of `{0}`; call the tool again to be asked again")]
    OtherTool(String),
    #[error("the answer was for a call with other arguments; call the tool again")]
    OtherArguments,
}

/// The error result of a refused retry, which the model reads; audited and counted
/// as a call of `name` whose answer was refused.
fn refused_result(
    registry: &Registry,
    ctx: &CallContext,
    name: &str,
    args: &Value,
    refused: &Refused,
) -> CallToolResponse {
    tracing::warn!("tools/call retry refused: {refused}");
    let why = refused.to_string();
    let _error = registry.refused_answer(ctx, name, args, &why);
    CallToolResult::error(vec![ContentBlock::text(why)]).into()
}

impl Waiting {
    /// Keeps `running` until a retry names it, and answers `input_required` with its
    /// question.
    fn wait(&self, running: Running, within: Duration) -> Result<CallToolResponse, ErrorData> {
        let Some((question, _)) = &running.asked else {
            return Err(ErrorData::internal_error("no question to ask", None));
        };
        let mut id = [0u8; 16];
        SystemRandom::new().fill(&mut id).map_err(|_| {
            ErrorData::internal_error(
                "piton could not name the waiting call: the system's random source failed",
                None,
            )
        })?;
        let id = URL_SAFE_NO_PAD.encode(id);
        let result = ask::input_required(UPSTREAM_KEY, question, format!("{STATE_PREFIX}{id}"))
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.retain(|_, entry| entry.since.elapsed() < within);
        if calls.len() >= MAX_WAITING
            && let Some(oldest) = calls
                .iter()
                .min_by_key(|(_, entry)| entry.since)
                .map(|(id, _)| id.clone())
        {
            calls.remove(&oldest);
        }
        calls.insert(
            id,
            Entry {
                running,
                since: Instant::now(),
            },
        );
        Ok(result.into())
    }

    /// The call `id` names, if it waits and is the call of `tool` with arguments of
    /// digest `args`; a retry for another call leaves it waiting.
    fn take(
        &self,
        id: &str,
        tool: &str,
        args: &[u8; 32],
        within: Duration,
    ) -> Result<Running, Refused> {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = calls
            .remove(id)
            .filter(|entry| entry.since.elapsed() < within)
            .ok_or(Refused::Gone)?;
        let refused = if entry.running.tool != tool {
            Refused::OtherTool(entry.running.tool.clone())
        } else if entry.running.args_sha256 != *args {
            Refused::OtherArguments
        } else {
            return Ok(entry.running);
        };
        calls.insert(id.to_owned(), entry);
        Err(refused)
    }
}
