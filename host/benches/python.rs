//! A Python tool served by piton against the same function served natively, with no
//! sandbox, by the official Python SDK: the `word_count` of `piton new --lang python`
//! built with componentize-py, and tests/peers/sdk_word_count.py (`MCPServer` over
//! stdio). Both are called over MCP stdio by the same raw JSON-RPC client, one call
//! after another, in alternating blocks so the machine's load falls on both alike.
//! Prints the median and p99 of each and their ratio (piton / SDK; below 1 piton is
//! faster), with the load average. Then the same with the calls 20 ms apart, as an
//! agent's come between the model's turns: piton makes the next call's instance
//! while the client is away. The component is compiled (optimised, cached) before
//! the server starts, so no compile runs beside the calls timed.
//!
//! Run with: `cargo bench -p piton-host --bench python`. The Python toolchain and
//! the SDK come from `tests/peers/install` (run here).

use piton_host::build::Lang;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

#[path = "support/mod.rs"]
mod support;
use support::folders::Folders;
use support::raw::RawClient;
use support::record;
use support::versus::{Blocks, SideBySide, side_by_side};

const TEXT: &str = "the quick brown fox jumps over the lazy dog";
/// Calls in one block of one server's, then the other's.
const BLOCK: usize = 100;
/// Blocks timed for each server.
const BLOCKS: usize = 20;
/// Untimed calls first, for each server.
const WARM_UP: usize = 200;
/// Calls timed for each server when they come [`PAUSE`] apart.
const SPACED: usize = 300;
/// The time between spaced calls: an agent calls a tool between the model's turns,
/// not back to back.
const PAUSE: Duration = Duration::from_millis(20);

fn main() {
    let toolchains = support::toolchains();
    let Some(python) = toolchains.python.clone() else {
        eprintln!("no Python toolchain: nothing to compare");
        return;
    };
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let project = scratch.path().join("word-count");
    piton_host::build::new::new_project(Lang::Python, &project).expect("the template is made");
    let built = piton_host::build::build(&project, None, &toolchains).expect("the tool builds");
    // Compiled first: the calls timed run the optimised code, with no compile beside them.
    let folders =
        Folders::holding(&std::fs::read(&built.wasm).expect("the built component")).compiled();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/sdk_word_count.py");
    let mut sdk = std::process::Command::new(python);
    sdk.arg(script);

    let mut servers = [RawClient::spawn(folders.serve(&[])), RawClient::spawn(sdk)];
    let params = json!({"name": "word_count", "arguments": {"text": TEXT}}).to_string();
    let back_to_back = Blocks {
        warm_up: WARM_UP,
        block: BLOCK,
        blocks: BLOCKS,
        pause: Duration::ZERO,
    };
    let run = side_by_side(&mut servers, &params, "9", &back_to_back);
    report(&run, "", BLOCK * BLOCKS, "(target at most 1.0)");

    // The same calls 20 ms apart: piton's instance for the next call is made while
    // the client is away, so a call waits only for its own run.
    let spaced = Blocks {
        warm_up: 0,
        block: 1,
        blocks: SPACED,
        pause: PAUSE,
    };
    let run = side_by_side(&mut servers, &params, "9", &spaced);
    report(&run, "spaced_", SPACED, "(calls 20 ms apart)");
}

/// Prints and records each server's median and p99 (keys starting `prefix`) and
/// piton's over the SDK's.
fn report(run: &SideBySide, prefix: &str, calls: usize, what: &str) {
    let mut medians = Vec::new();
    for (name, summary) in ["piton", "python-sdk"].into_iter().zip(&run.summaries) {
        let (median, p99) = (support::ms(summary.median()), support::ms(summary.p99()));
        println!(
            "python word_count over MCP stdio {what}, {name}: {calls} calls: median \
             {median:.3} ms, p99 {p99:.3} ms"
        );
        record("python", &format!("{prefix}{name}_median"), median, "ms");
        record("python", &format!("{prefix}{name}_p99"), p99, "ms");
        medians.push(median);
    }
    if let [piton, sdk] = medians[..] {
        let ratio = piton / sdk;
        println!(
            "python word_count {what}: piton / Python SDK = {ratio:.2}; load average \
             before {}, after {}; {} CPUs",
            run.load_before,
            run.load_after,
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        record("python", &format!("{prefix}ratio"), ratio, "x");
    }
}
