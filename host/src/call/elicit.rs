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

/// Whether `c` can break a line, or hide or reorder text, where a person reads it:
/// controls (line feed, carriage return, NEL…), format characters (the bidi marks,
/// embeddings and isolates, zero-width characters, tags) and the line and paragraph
/// separators. Text from a tool or server must not make its words look like another
/// line of the question, piton's own.
pub fn hides_or_breaks(c: char) -> bool {
    use unicode_general_category::{GeneralCategory, get_general_category};
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    )
}

/// `text` on one line, as a person reads it: each character that
/// [`hides_or_breaks`] becomes a space.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if hides_or_breaks(c) { ' ' } else { c })
        .collect()
}

/// The first line of `text`, ended by a line break of any kind (LF, CR, VT, FF, NEL,
/// U+2028, U+2029), on [`one_line`].
pub fn first_line(text: &str) -> String {
    let end = text
        .find([
            '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}',
        ])
        .unwrap_or(text.len());
    one_line(&text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_breaks_hides_or_reorders_a_line_is_found() {
        for c in [
            '\n',
            '\r',
            '\u{b}',
            '\u{c}',
            '\u{7f}',
            '\u{85}',
            '\u{2028}',
            '\u{2029}',
            '\u{200b}',
            '\u{200e}',
            '\u{200f}',
            '\u{202a}',
            '\u{202e}',
            '\u{2066}',
            '\u{2069}',
            '\u{061c}',
            '\u{feff}',
            '\u{e0041}',
        ] {
            assert!(hides_or_breaks(c), "{:04x}", c as u32);
        }
        for c in ['a', ' ', 'é', '日', '…', '`', '\u{1f600}'] {
            assert!(!hides_or_breaks(c), "{:04x}", c as u32);
        }
    }

    #[test]
    fn the_first_line_ends_at_any_line_break_and_shows_nothing_hidden() {
        for text in [
            "Adds.\nGranted",
            "Adds.\rGranted",
            "Adds.\u{85}Granted",
            "Adds.\u{2028}Granted",
            "Adds.\u{2029}Granted",
        ] {
            assert_eq!(first_line(text), "Adds.", "{text:?}");
        }
        assert_eq!(first_line("a\u{202e}b\u{200b}c"), "a b c");
        assert_eq!(one_line("a\nb\u{2028}c"), "a b c");
    }
}
