//! Consent: asking the person, through their MCP client, before a call that changes
//! things, about what the sandbox will actually allow that call.
//!
//! [`policy`] says which calls are asked about, [`form`] what the person is shown
//! (and `question` the message and form made of it), and [`state`] seals what was
//! shown into the `requestState` of a 2026-07-28 request, so any replica with the
//! same key can check the retry.

pub mod allow;
mod ask;
pub mod form;
mod keeper;
pub mod policy;
mod question;
#[cfg(test)]
mod question_tests;
pub mod state;

pub use crate::call::{Elicit, ElicitError, Question};
pub use ask::{Channel, Consent, Outcome, QUESTION_KEY, Verdict};
pub use keeper::{Keeper, KeyError};
pub use policy::{AskMode, AskReason};
pub use question::CHOICE;
pub use state::{ApprovalKey, Sealer, StateError, Subject};
