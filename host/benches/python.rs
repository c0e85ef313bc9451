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

use std::path::Path;
use std::time::Instant;

use piton_host::build::Lang;
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::folders::Folders;
use support::raw::RawClient;
use support::{Summary, load_average, record};

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

    let mut servers = [
        ("piton", RawClient::spawn(folders.serve(&[])), Vec::new()),
        ("python-sdk", RawClient::spawn(sdk), Vec::new()),
    ];
    let params = json!({"name": "word_count", "arguments": {"text": TEXT}}).to_string();
    for (_, client, _) in &mut servers {
        for _ in 0..WARM_UP {
            client.call(&params, "9");
        }
    }
    let before = load_average();
    for _ in 0..BLOCKS {
        for (_, client, samples) in &mut servers {
            for _ in 0..BLOCK {
                let started = Instant::now();
                client.call(&params, "9");
                samples.push(started.elapsed());
            }
        }
    }
    let after = load_average();
    let mut medians = Vec::new();
    for (name, _, samples) in servers {
        let summary = Summary::of(samples);
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
             load average before {before}, after {after}; {} CPUs",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        record("python", "ratio", ratio, "x");
    }
}
