//! The question one call is asked with: what the person reads (the tool, why it is
//! asked, the hints its sandbox holds it to, what it is granted, its arguments with
//! their SHA-256) and the form of their choices.
//!
//! Only piton's own words start a line: the tool's description is cut to its first
//! line with nothing in it that breaks, hides or reorders text, and the arguments are
//! canonical JSON with such characters escaped (form.rs).

use std::time::Duration;

use piton_wit::Hints;
use serde_json::{Value, json};

use super::form::args_shown;
use super::policy::AskReason;
use crate::call::{Question, first_line};
use crate::tool::{HintsTrust, Tool};

/// The form's one field.
pub const CHOICE: &str = "decision";

/// The longest description shown, in characters.
const MAX_DESCRIPTION: usize = 200;

/// What one call's question is made of.
pub(super) struct Shown<'a> {
    pub(super) tool: &'a dyn Tool,
    /// The call's hints (after `hints_for`).
    pub(super) hints: Hints,
    pub(super) reason: AskReason,
    /// The lines of form.rs's `grants_shown`.
    pub(super) grants: &'a [String],
    pub(super) args: &'a Value,
    /// Of the text of `args` shown.
    pub(super) args_sha256: &'a [u8; 32],
}

impl Shown<'_> {
    /// The question, offering "allow for a while" for `allow_for` unless it is zero.
    pub(super) fn question(&self, allow_for: Duration) -> Question {
        let spec = self.tool.spec();
        let mut message = format!("Allow `{}` to run?", spec.name);
        // The description is the tool's (an upstream server's, maybe): its first
        // line only, with nothing in it that could start another line or reorder
        // this one, so it cannot pass for a line of piton's.
        let first = first_line(&spec.description);
        let first = first.trim();
        if !first.is_empty() {
            message.push_str(&format!("\n{}", cut(first, MAX_DESCRIPTION)));
        }
        let trust = self.tool.hints_trust();
        let why = if trust.is_reliable() {
            self.reason.as_str().to_owned()
        } else {
            format!(
                "nothing holds it to its hints, so it counts as the worst case ({})",
                self.reason.as_str()
            )
        };
        message.push_str(&format!(
            "\n\nAsked because {why}. This call: {} ({}).",
            hints_in_words(self.hints),
            match trust {
                HintsTrust::Enforced => "held to it by piton's sandbox",
                HintsTrust::Native => "the embedding program's own code",
                HintsTrust::Trusted => "as its MCP server says, trusted by piton.toml",
                _ => "as the tool says: nothing holds it to that",
            }
        ));
        if self.grants.is_empty() {
            message.push_str(
                "\nGranted for this call: nothing (no files, no network, no environment).",
            );
        } else {
            message.push_str("\nGranted for this call:");
            for line in self.grants {
                message.push_str(&format!("\n- {line}"));
            }
        }
        message.push_str(&format!(
            "\n\nArguments (SHA-256 {}):\n{}",
            hex::encode(self.args_sha256),
            args_shown(self.args)
        ));
        let mut choices = vec![json!({"const": "allow_once", "title": "Allow once"})];
        if !allow_for.is_zero() {
            choices.push(json!({
                "const": "allow_for_a_while",
                "title": format!("Allow `{}` for the next {}", spec.name, minutes(allow_for)),
            }));
        }
        choices.push(json!({"const": "deny", "title": "Deny"}));
        let schema = json!({
            "type": "object",
            "properties": {
                CHOICE: {
                    "type": "string",
                    "title": "Your decision",
                    "oneOf": choices,
                    "default": "deny",
                }
            },
            "required": [CHOICE],
        });
        Question { message, schema }
    }
}

/// A call's hints as the person reads them.
fn hints_in_words(hints: Hints) -> String {
    let mut words = Vec::new();
    if hints.is_read_only() {
        words.push("read-only");
    } else if hints.is_destructive() {
        words.push("may change or delete what it is granted");
    } else {
        words.push("may add, never changes or deletes what exists");
    }
    words.push(if hints.is_open_world() {
        "may reach the hosts it is granted"
    } else {
        "no network"
    });
    words.join(", ")
}

fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

fn minutes(d: Duration) -> String {
    let secs = d.as_secs();
    if secs.is_multiple_of(60) {
        let m = secs / 60;
        if m == 1 {
            "minute".into()
        } else {
            format!("{m} minutes")
        }
    } else {
        format!("{secs} seconds")
    }
}
