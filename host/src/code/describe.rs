//! What the model reads about code mode's tool: what a program may do, how a tool
//! call and its failure look in it, and every callable tool as a Python function
//! signature, so that the model writes correct calls the first time.

use super::signature::Function;
use crate::config::code::CodeSettings;
use crate::tool::MAX_DESCRIPTION;

/// Room kept under [`MAX_DESCRIPTION`] for the lines that say what was left out.
const SLACK: usize = 2048;

/// The description of code mode's tool over `functions`.
pub(crate) fn description(functions: &[Function], settings: &CodeSettings) -> String {
    let mut text = format!(
        "Run a short Python program that calls tools as functions; only its result \
         comes back. Prefer one program over many tool calls when the tools' outputs \
         only feed further calls. The value of the program's last expression is the \
         result (a str as is, None as (done), anything else as JSON); what it prints \
         comes after it, cut at {printed} bytes.\n\
         The language is Python 3 as Monty implements it (functions, classes, \
         comprehensions; modules such as json, re, math, datetime, collections), with \
         no files, network, environment or clock: everything outside goes through the \
         functions below, called with keyword or positional arguments. Each call \
         runs the tool in its own sandbox with its own grants and approval. A tool's \
         error result raises RuntimeError (ValueError for wrong arguments), which the \
         program may catch. A run may make {calls} tool calls and take {deadline:?}; \
         past either, or on a tool's crash, the run ends with an error naming the line.\n\
         A tool giving text returns a str; JSON comes back as dicts and lists; several \
         blocks as a list.\n\nFunctions:\n",
        printed = settings.max_printed,
        calls = settings.max_calls,
        deadline = settings.deadline,
    );
    if functions.is_empty() {
        text.push_str("(none: this run can call no tool)\n");
    }
    let mut left_out = Vec::new();
    for function in functions {
        let line = function.line();
        if text.len() + line.len() + SLACK > MAX_DESCRIPTION {
            left_out.push(function.name.as_str());
            continue;
        }
        text.push_str(&line);
        text.push('\n');
    }
    if !left_out.is_empty() {
        let mut names = left_out.join(", ");
        if names.len() > SLACK / 2 {
            names.truncate(
                (0..=SLACK / 2)
                    .rev()
                    .find(|i| names.is_char_boundary(*i))
                    .unwrap_or(0),
            );
            names.push_str(", …");
        }
        text.push_str(&format!(
            "({} more, by name only: {names})\n",
            left_out.len()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::signature::Param;

    fn function(name: &str) -> Function {
        Function {
            name: name.into(),
            tool: name.into(),
            params: vec![Param {
                key: "text".into(),
                annotation: "str".into(),
                required: true,
                default: None,
            }],
            summary: "x".repeat(150),
            read_only: false,
        }
    }

    #[test]
    fn every_function_is_listed_and_the_limits_are_said() {
        let settings = CodeSettings::default();
        let text = description(&[function("a"), function("b")], &settings);
        assert!(text.contains("def a(text: str) -> Any:  # xxx"), "{text}");
        assert!(text.contains("def b(text: str)"));
        assert!(text.contains("50 tool calls and take 30s"), "{text}");
    }

    #[test]
    fn a_description_too_long_names_the_rest() {
        let many: Vec<Function> = (0..2000).map(|i| function(&format!("tool_{i}"))).collect();
        let text = description(&many, &CodeSettings::default());
        assert!(text.len() <= MAX_DESCRIPTION, "{}", text.len());
        assert!(
            text.contains("more, by name only: tool_"),
            "{}",
            &text[text.len() - 300..]
        );
    }
}
