//! A Python tool served by piton against the same function served natively, with no
//! sandbox, by the official Python SDK: the `word_count` of `piton new --lang python`
//! built with componentize-py, and tests/peers/sdk_word_count.py (`MCPServer` over
//! stdio). Both are called over MCP stdio by the same raw JSON-RPC client, one call
//! after another, in alternating blocks so the machine's load falls on both alike.
//! Prints the median and p99 of each and their ratio (piton / SDK; below 1 piton is
//! faster), with the load average.
//!
//! Run with: `cargo bench -p piton-host --bench python`. The Python toolchain and
//! the SDK come from `tests/peers/install` (run here).

use piton_host::build::Lang;
use serde_json::json;
use std::path::Path;

#[path = "support/mod.rs"]
mod support;
use support::folders::Folders;
use support::raw::RawClient;
use support::record;
use support::versus::{Blocks, side_by_side};

const TEXT: &str = "the quick brown fox jumps over the lazy dog";
/// Calls in one block of one server's, then the other's.
const BLOCK: usize = 100;
/// Blocks timed for each server.
const BLOCKS: usize = 20;
/// Untimed calls first, for each server.
const WARM_UP: usize = 200;

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
    let folders = Folders::holding(&std::fs::read(&built.wasm).expect("the built component"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/sdk_word_count.py");
    let mut sdk = std::process::Command::new(python);
    sdk.arg(script);

    let mut servers = [RawClient::spawn(folders.serve(&[])), RawClient::spawn(sdk)];
    let params = json!({"name": "word_count", "arguments": {"text": TEXT}}).to_string();
    let blocks = Blocks {
        warm_up: WARM_UP,
        block: BLOCK,
        blocks: BLOCKS,
    };
    let run = side_by_side(&mut servers, &params, "9", &blocks);
    let mut medians = Vec::new();
    for (name, summary) in ["piton", "python-sdk"].into_iter().zip(&run.summaries) {
        let (median, p99) = (support::ms(summary.median()), support::ms(summary.p99()));
        println!(
            "python word_count over MCP stdio, {name}: {} calls: median {median:.3} ms, \
             p99 {p99:.3} ms",
            BLOCK * BLOCKS
        );
        record("python", &format!("{name}_median"), median, "ms");
        record("python", &format!("{name}_p99"), p99, "ms");
        medians.push(median);
    }
    if let [piton, sdk] = medians[..] {
        let ratio = piton / sdk;
        println!(
            "python word_count: piton / Python SDK = {ratio:.2} (target at most 1.0); \
             load average before {}, after {}; {} CPUs",
            run.load_before,
            run.load_after,
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        record("python", "ratio", ratio, "x");
    }
}
