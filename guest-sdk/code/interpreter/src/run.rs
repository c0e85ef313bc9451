//! One run: the program parsed, started with the tools as its functions, and driven
//! from one suspension to the next (a tool call, an operating-system call) until it
//! ends; how it ended, as the host reads it.

use std::time::{Duration, Instant};

use monty::{MontyRun, RunProgress};
use monty_types::{
    CompileOptions, ExcType, MontyException, MontyObject, NameLookupResult, PrintWriter,
    ResourceLimits, ResourceTracker,
};

use crate::bindings::exports::piton::tool::program::{
    Callable, Failure, Finished, RunError, RunLimits, Value,
};
use crate::bindings::piton::tool::registry::{self, CallError};
use crate::bindings::piton::tool::types::ToolError;
use crate::json;
use crate::printed::Printed;

/// The file name tracebacks give the program.
const FILE: &str = "program.py";

/// What is left of the deadline after a tool call below which the run ends at
/// that call.
const NEARLY_NONE: Duration = Duration::from_millis(50);

/// The most bytes of a traceback an error carries (its start and its end).
const MAX_MESSAGE: usize = 4096;

/// What a tool call gives back to the program.
enum Answer {
    /// Its value.
    Value(MontyObject),
    /// An exception raised where it was called, which the program may catch.
    Raise(MontyException),
    /// The run ends, at the line of the call.
    End(Failure, String),
}

/// Runs `code` with `callables` as its functions under `limits`.
pub(crate) fn run(
    code: String,
    callables: &[Callable],
    limits: &RunLimits,
) -> Result<Finished, RunError> {
    let started = Instant::now();
    let deadline = Duration::from_millis(limits.deadline_ms);
    let heap = usize::try_from(limits.heap).unwrap_or(usize::MAX);
    // Counting starts with the first run in this instance; a failure means the
    // allocator is not installed, and then the host's limit alone holds.
    let _ = monty_alloc::set_limit(Some(heap), false);
    let mut printed = Printed::new(limits.max_printed as usize);
    let names: Vec<String> = callables.iter().map(|c| c.function.clone()).collect();
    let runner = match MontyRun::new(code, FILE, names, CompileOptions::default()) {
        Ok(runner) => runner,
        Err(exception) => {
            let failure = if exception.exc_type() == ExcType::SyntaxError {
                Failure::Syntax
            } else {
                Failure::Exception
            };
            return Err(run_error(failure, &exception, &printed));
        }
    };
    let inputs = callables
        .iter()
        .map(|c| MontyObject::Function {
            name: c.function.clone(),
            docstring: None,
        })
        .collect();
    let tracker = ResourceTracker::new(ResourceLimits {
        max_duration: Some(deadline),
        max_memory: Some(heap),
        gc_interval: None,
        max_recursion_depth: limits.max_depth as usize,
        // The host counts the calls against the run's budget.
        max_suspensions: usize::MAX,
    });
    let mut ended: Option<Failure> = None;
    let mut progress = runner.start(inputs, tracker, PrintWriter::Callback(&mut printed));
    loop {
        let step = match progress {
            Ok(step) => step,
            Err(exception) => {
                let failure = ended.unwrap_or_else(|| failure_of(&exception));
                return Err(run_error(failure, &exception, &printed));
            }
        };
        progress = match step {
            RunProgress::Complete(value) => return finished(&value, &printed),
            RunProgress::FunctionCall(mut call) => {
                let mut answer =
                    call_tool(callables, &call.function_name, &call.args, &call.kwargs);
                // Monty's clock stops while the host runs the call; the run's
                // deadline is wall-clock time, so what is left of it is given again.
                // Nearly none left: the run ends here, at the call's line (Monty's
                // own time limit, met between two calls, names no line).
                let left = deadline.saturating_sub(started.elapsed());
                if left < NEARLY_NONE && !matches!(answer, Answer::End(..)) {
                    answer = Answer::End(
                        Failure::Limit,
                        format!("the run's deadline of {deadline:?} ([code] deadline) passed"),
                    );
                }
                let spent = call.tracker().elapsed();
                call.tracker_mut().set_max_duration(spent + left);
                let print = PrintWriter::Callback(&mut printed);
                match answer {
                    Answer::Value(value) => call.resume(value, print),
                    Answer::Raise(exception) => call.resume(exception, print),
                    Answer::End(failure, message) => {
                        ended = Some(failure);
                        let exc_type = match failure {
                            Failure::Limit => ExcType::TimeoutError,
                            _ => ExcType::RuntimeError,
                        };
                        call.abort(MontyException::new(exc_type, Some(message)), print)
                    }
                }
            }
            RunProgress::OsCall(call) => {
                let name: &'static str = (&call.function_call).into();
                let refused = MontyException::new(
                    ExcType::PermissionError,
                    Some(format!(
                        "{name}() is not available in code mode: the program has no files, \
                         network or environment; call one of its tools instead"
                    )),
                );
                call.resume(refused, PrintWriter::Callback(&mut printed))
            }
            RunProgress::NameLookup(lookup) => lookup.resume(
                NameLookupResult::Undefined,
                PrintWriter::Callback(&mut printed),
            ),
            RunProgress::ResolveFutures(waiting) => waiting.abort(
                MontyException::new(
                    ExcType::NotImplementedError,
                    Some(
                        "async code is not available in code mode: call the tools directly".into(),
                    ),
                ),
                PrintWriter::Callback(&mut printed),
            ),
        };
    }
}

/// Calls the tool behind `function` with the program's arguments.
fn call_tool(
    callables: &[Callable],
    function: &str,
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
) -> Answer {
    let Some(callable) = callables.iter().find(|c| c.function == function) else {
        // Monty suspends on a call of any name it does not know: as in Python, that
        // is a NameError the program may catch.
        return Answer::Raise(MontyException::new(
            ExcType::NameError,
            Some(format!(
                "name '{function}' is not defined (it is no tool this program may call)"
            )),
        ));
    };
    let arguments = match json::arguments(function, &callable.params, args, kwargs) {
        Ok(arguments) => arguments,
        Err(message) => {
            return Answer::Raise(MontyException::new(ExcType::TypeError, Some(message)));
        }
    };
    match registry::call(&callable.tool, &arguments) {
        Ok(content) => match json::content_value(content) {
            Ok(value) => Answer::Value(value),
            Err(message) => Answer::Raise(MontyException::new(ExcType::ValueError, Some(message))),
        },
        Err(CallError::Tool(ToolError::Input(message))) => Answer::Raise(MontyException::new(
            ExcType::ValueError,
            Some(format!("{function}(): (input error: {message})")),
        )),
        Err(CallError::Tool(ToolError::Failed(message))) => Answer::Raise(MontyException::new(
            ExcType::RuntimeError,
            Some(format!("{function}(): {message}")),
        )),
        Err(CallError::Refused(message)) => Answer::End(Failure::Call, message),
        Err(CallError::Exhausted(message)) => Answer::End(Failure::Limit, message),
        Err(CallError::Failed(message)) => Answer::End(Failure::Call, message),
    }
}

/// How a run that raised `exception` (and was not ended by a call) failed.
fn failure_of(exception: &MontyException) -> Failure {
    match exception.exc_type() {
        ExcType::SyntaxError => Failure::Syntax,
        ExcType::TimeoutError | ExcType::MemoryError | ExcType::RecursionError => Failure::Limit,
        _ => Failure::Exception,
    }
}

/// The run's value by the seed's return rules.
fn finished(value: &MontyObject, printed: &Printed) -> Result<Finished, RunError> {
    let value = match value {
        MontyObject::None => Value::None,
        MontyObject::String(text) => Value::Text(text.clone()),
        other => match json::to_json(other) {
            Ok(text) => Value::Json(text),
            Err(why) => {
                return Err(RunError {
                    failure: Failure::NotJson,
                    message: format!(
                        "TypeError: the value of the program's last expression cannot become \
                         JSON: {why}; return str, int, float, bool, None, or lists and dicts of them"
                    ),
                    line: None,
                    printed: printed.text(),
                    printed_cut: printed.cut,
                });
            }
        },
    };
    Ok(Finished {
        value,
        printed: printed.text(),
        printed_cut: printed.cut,
    })
}

/// The error of a run that ended with `exception`: its traceback (cut in the middle
/// when long) and the line it was raised on.
fn run_error(failure: Failure, exception: &MontyException, printed: &Printed) -> RunError {
    let line = exception.traceback().last().map(|frame| frame.start.line);
    RunError {
        failure,
        message: cut_middle(exception.to_string()),
        line,
        printed: printed.text(),
        printed_cut: printed.cut,
    }
}

fn cut_middle(text: String) -> String {
    if text.len() <= MAX_MESSAGE {
        return text;
    }
    let half = MAX_MESSAGE / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[... {} bytes ...]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}
