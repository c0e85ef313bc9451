//! Code mode's interpreter: the component of the world `code-mode` (wit/tool.wit)
//! that runs one Python program with Monty, a Python subset written in Rust, and
//! gives each tool the host offers it as a function of the program.
//!
//! It has nothing of its own: no files, no network, no environment. A call of one of
//! its functions is a call of `piton:tool/registry`, which the host runs through its
//! whole call path; what a program asks the operating system for (`open()`,
//! `Path.read_text()`, `os.getenv()`) is refused with an exception that says so.
//! The host builds it (guest-sdk/builder) and carries it in the `piton` binary.

mod json;
mod printed;
mod run;

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod bindings {
    wit_bindgen::generate!({
        world: "code-mode",
        path: "../../../wit",
    });
}

use bindings::exports::piton::tool::program::{Callable, Finished, Guest, RunError, RunLimits};

/// Counts the program's live bytes, so that Monty's memory limit holds: past it
/// the program gets MemoryError at its next checkpoint, and far past it (one huge
/// allocation) the component ends, which the host reports as the memory limit.
#[global_allocator]
static ALLOCATOR: monty_alloc::LimitedAllocator = monty_alloc::LimitedAllocator;

struct Interpreter;

impl Guest for Interpreter {
    fn run(
        code: String,
        callables: Vec<Callable>,
        limits: RunLimits,
    ) -> Result<Finished, RunError> {
        run::run(code, &callables, &limits)
    }
}

bindings::export!(Interpreter with_types_in bindings);
