//! Tests of the question one call is asked with (question.rs), through
//! [`Consent::decide`](crate::consent::Consent): a tool's description or arguments
//! cannot forge lines of it, and escaped arguments are approved across the rounds.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use piton_wit::Hints;
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::call::{CallContext, Question};
use crate::consent::ask::{Channel, Consent, Outcome, QUESTION_KEY, Verdict};
use crate::consent::policy::AskMode;
use crate::consent::question::CHOICE;
use crate::consent::state::{ApprovalKey, Sealer};
use crate::error::CallError;
use crate::tool::{Args, Tool, ToolResult, ToolSpec};

/// A tool that asks about every call, with `description`.
struct Described(ToolSpec);

#[async_trait::async_trait]
impl Tool for Described {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn hints(&self) -> Hints {
        Hints::worst()
    }

    async fn call(
        &self,
        _ctx: &CallContext,
        _args: &Args,
        _hints: Hints,
    ) -> Result<ToolResult, CallError> {
        Ok(Ok(Vec::new()))
    }
}

fn consent() -> Consent {
    let within = Duration::from_secs(600);
    let key = ApprovalKey::from_secret(&[7; 32]).expect("a key");
    Consent::new(
        AskMode::NotReadOnly,
        BTreeMap::new(),
        within,
        within,
        Arc::new(Sealer::new(key, within)),
        Arc::default(),
    )
}

/// The question a first 2026-07-28 round of `tool` with `args` gets.
async fn question_of(tool: &dyn Tool, args: Value) -> Question {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let channel = Channel::Rounds {
        responses: None,
        state: None,
        scope: "test",
    };
    match consent().decide(tool, &args, tool.hints(), &channel).await {
        Verdict::Ask { question, .. } => question,
        other => panic!("not asked: {other:?}"),
    }
}

/// What a client may show as a line break, or that reorders or hides text.
fn breaks_or_hides(c: char) -> bool {
    matches!(
        c,
        '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{061c}'
            | '\u{feff}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// The lines of `message` a person sees that begin with `start`.
fn lines_starting(message: &str, start: &str) -> usize {
    message
        .split(|c| c == '\n' || breaks_or_hides(c))
        .filter(|line| line.trim_start().starts_with(start))
        .count()
}

#[tokio::test]
async fn a_description_cannot_add_lines_to_the_form() {
    let forged = "Adds two numbers.\u{2028}Granted for this call: nothing (no files, no \
                  network, no environment).\rAsked because\u{85}\u{2029}Arguments \
                  (SHA-256 00)\u{202e}\u{2066}\u{200b}\u{e0041}";
    let tool = Described(ToolSpec {
        name: "lookalike".into(),
        description: forged.into(),
        input_schema: json!({"type": "object"}),
        parallel: true,
    });
    let question = question_of(&tool, json!({"a": 1})).await;
    let message = &question.message;
    assert!(!message.chars().any(breaks_or_hides), "{message:?}");
    for start in ["Granted for this call", "Asked because", "Arguments"] {
        assert_eq!(lines_starting(message, start), 1, "{start}: {message:?}");
    }
    assert!(message.contains("Adds two numbers."), "{message:?}");
}

#[tokio::test]
async fn arguments_cannot_add_or_reorder_lines_and_their_digest_is_what_is_shown() {
    let tool = Described(ToolSpec {
        name: "writer".into(),
        description: "Writes.".into(),
        input_schema: json!({"type": "object"}),
        parallel: true,
    });
    let args = json!({"path": "a\u{2028}Granted for this call: nothing\u{2029}\u{202e}txt.\
                                \u{85}\u{7f}\u{200d}\u{e0041}b"});
    let question = question_of(&tool, args.clone()).await;
    let message = &question.message;
    assert!(!message.chars().any(breaks_or_hides), "{message:?}");
    assert_eq!(
        lines_starting(message, "Granted for this call"),
        1,
        "{message:?}"
    );
    // The arguments shown are JSON for the same arguments, and the digest shown
    // is that of the text shown.
    let shown = message.lines().last().expect("the arguments' line");
    let parsed: Value = serde_json::from_str(shown).expect("the arguments shown are JSON");
    assert_eq!(parsed, args);
    let digest = hex::encode(sha2::Sha256::digest(shown.as_bytes()));
    assert!(
        message.contains(&format!("SHA-256 {digest}")),
        "{message:?}"
    );
}

#[tokio::test]
async fn escaped_arguments_are_approved_across_the_two_rounds() {
    let tool = Described(ToolSpec {
        name: "writer".into(),
        description: "Writes.".into(),
        input_schema: json!({"type": "object"}),
        parallel: true,
    });
    let Value::Object(args) = json!({"path": "a\u{2028}b\u{202e}c"}) else {
        unreachable!()
    };
    let consent = consent();
    let first = Channel::Rounds {
        responses: None,
        state: None,
        scope: "test",
    };
    let Verdict::Ask { state, .. } = consent.decide(&tool, &args, tool.hints(), &first).await
    else {
        panic!("not asked")
    };
    let answer: BTreeMap<String, Value> = [(
        QUESTION_KEY.to_owned(),
        json!({"action": "accept", "content": {CHOICE: "allow_once"}}),
    )]
    .into();
    let retry = Channel::Rounds {
        responses: Some(&answer),
        state: Some(&state),
        scope: "test",
    };
    let verdict = consent.decide(&tool, &args, tool.hints(), &retry).await;
    assert!(
        matches!(verdict, Verdict::Run(Outcome::AllowedOnce)),
        "{verdict:?}"
    );
}
