//! What a run gives the model: the value of the program's last expression by the
//! seed's return rules and what it printed, or an error result saying how the run
//! ended and on which line. The interpreter's own traps (its memory, its deadline)
//! are error results too: the program caused them, and the host is unaffected.

use super::bindings::{Failure, Finished, RunError, Value};
use crate::error::{CallError, Trap};
use crate::limits::format_size;
use crate::tool::{Content, ToolError, ToolResult};

/// The model's answer for a run that ended with `outcome`.
pub(crate) fn answer(
    outcome: Result<Result<Finished, RunError>, CallError>,
) -> Result<ToolResult, CallError> {
    match outcome {
        Ok(Ok(finished)) => Ok(finished_content(finished)),
        Ok(Err(error)) => Ok(Err(ToolError::Failed(failed(&error)))),
        Err(CallError::Trap { trap, .. }) => Ok(Err(ToolError::Failed(trapped(&trap)))),
        Err(other) => Err(other),
    }
}

fn finished_content(finished: Finished) -> ToolResult {
    let mut content = Vec::new();
    match finished.value {
        Value::None => {}
        Value::Text(text) => content.push(Content::text(text)),
        Value::Json(text) => match serde_json::from_str(&text) {
            Ok(json) => content.push(Content::Json { json }),
            // The interpreter writes JSON; text it got wrong is still the value.
            Err(_) => content.push(Content::text(text)),
        },
    }
    if let Some(printed) = printed(&finished.printed, finished.printed_cut) {
        content.push(Content::text(printed));
    }
    Ok(content)
}

/// The printed output as the model reads it, if there is any.
fn printed(text: &str, cut: u64) -> Option<String> {
    if text.is_empty() && cut == 0 {
        return None;
    }
    let mut shown = format!("printed:\n{text}");
    if cut > 0 {
        shown.push_str(&format!(
            "\n[{cut} more bytes printed, left out: [code] max_printed]"
        ));
    }
    Some(shown)
}

fn failed(error: &RunError) -> String {
    let what = match error.failure {
        Failure::Syntax => "the program does not parse",
        Failure::Exception => "the program raised an exception it did not catch",
        Failure::Limit => "the program reached a limit of its run",
        Failure::Call => "the program's run ended at a tool call",
        Failure::NotJson => "the program's value cannot be given as JSON",
    };
    let mut text = match error.line {
        Some(line) => format!("{what} (line {line}):\n{}", error.message),
        None => format!("{what}:\n{}", error.message),
    };
    if let Some(printed) = printed(&error.printed, error.printed_cut) {
        text.push_str("\n\n");
        text.push_str(&printed);
    }
    text
}

fn trapped(trap: &Trap) -> String {
    match trap {
        Trap::Memory(limit) => format!(
            "the program ran out of memory: code mode's interpreter may use {} ([code] \
             memory), and the run was stopped; work on less data at once",
            format_size(*limit)
        ),
        Trap::Deadline(took) => {
            format!("the program ran past its deadline ([code] deadline, {took:?}) and was stopped")
        }
        other => format!("code mode's interpreter stopped: it {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_and_what_was_printed_are_two_blocks() {
        let finished = Finished {
            value: Value::Json("[1,2]".into()),
            printed: "hi\n".into(),
            printed_cut: 7,
        };
        let content = answer(Ok(Ok(finished))).unwrap().unwrap();
        assert_eq!(content[0].to_model_text(), "[1,2]");
        assert_eq!(
            content[1].to_model_text(),
            "printed:\nhi\n\n[7 more bytes printed, left out: [code] max_printed]"
        );
        let none = Finished {
            value: Value::None,
            printed: String::new(),
            printed_cut: 0,
        };
        assert!(answer(Ok(Ok(none))).unwrap().unwrap().is_empty(), "(done)");
    }

    #[test]
    fn a_failed_run_is_an_error_result_naming_the_line() {
        let error = RunError {
            failure: Failure::Syntax,
            message: "SyntaxError: invalid syntax".into(),
            line: Some(3),
            printed: String::new(),
            printed_cut: 0,
        };
        let Err(ToolError::Failed(text)) = answer(Ok(Err(error))).unwrap() else {
            panic!("an error result");
        };
        assert_eq!(
            text,
            "the program does not parse (line 3):\nSyntaxError: invalid syntax"
        );
        let trap = CallError::trap("run_python", Trap::Memory(64 << 20));
        let Err(ToolError::Failed(text)) = answer(Err(trap)).unwrap() else {
            panic!("an error result");
        };
        assert!(
            text.contains("ran out of memory") && text.contains("64 MiB"),
            "{text}"
        );
        let busy = CallError::Busy {
            tool: "run_python".into(),
            instances: 1,
            queued: 1,
        };
        assert!(
            answer(Err(busy)).is_err(),
            "a busy host is not the program's fault"
        );
    }
}
