//! How a command ends (its exit code) and how the CLI prints what tools and servers
//! said: JSON indented, stderr lines escaped on a terminal.

use serde_json::Value;

use crate::term::Shown;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Success = 0,
    ErrorResult = 1,
    Usage = 2,
    Stopped = 3,
    /// Ended by SIGINT (Ctrl-C): 128 + 2.
    Interrupted = 130,
    /// Ended by SIGTERM: 128 + 15.
    Terminated = 143,
}

/// `value` as indented JSON.
pub(super) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Prints a line on stderr, escaped when stderr is a terminal: it may carry what a
/// tool or an upstream server wrote.
pub(super) fn say(line: std::fmt::Arguments<'_>) {
    eprintln!("{}", Shown::stderr().text(&line.to_string()));
}
