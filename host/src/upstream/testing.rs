//! What the tests of the upstream side share: a person who answers, forms, and a
//! call's notes.

use std::sync::{Arc, Mutex};

use rmcp::model::{ElicitRequestParams, ElicitationSchema};
use serde_json::{Value, json};

use crate::call::notes::{Notes, QuestionOutcome};
use crate::call::{Elicit, ElicitError, Question};

/// Answers every question with accept and `{"name": "Ada"}`, keeping what it
/// was asked.
#[derive(Default)]
pub(super) struct Person {
    pub(super) asked: Mutex<Vec<Question>>,
}

#[async_trait::async_trait]
impl Elicit for Person {
    async fn elicit(&self, question: &Question) -> Result<Value, ElicitError> {
        self.asked.lock().unwrap().push(question.clone());
        Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
    }
}

pub(super) fn form(message: &str) -> ElicitRequestParams {
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

pub(super) fn notes() -> Arc<Notes> {
    let notes = Arc::new(Notes::default());
    notes.keep_details(true);
    notes
}

/// What `notes` say of the questions: outcome words, and why.
pub(super) fn noted(notes: &Notes) -> Vec<(QuestionOutcome, Option<String>)> {
    notes
        .take()
        .questions
        .into_iter()
        .map(|q| (q.outcome, q.why))
        .collect()
}

pub(super) fn url() -> ElicitRequestParams {
    ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message: "Sign in".into(),
        url: "https://example.com/".into(),
        elicitation_id: "1".into(),
    }
}
