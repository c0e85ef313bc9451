//! What a code-mode run costs (`run_python`): a program that calls no tool, a
//! program that makes 10 `word_count` calls, and those same 10 calls made one after
//! another through the registry; the run's own overhead is the difference, measured
//! in interleaved rounds so that drift in the machine's load falls on all three.
//!
//! Run with: `cargo bench -p piton-host --bench code`

use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;
use piton_host::Registry;
use piton_host::config::Config;
use piton_host::loader::Loader;
use piton_host::plugins::PluginsAt;
use piton_host::wasm::{RuntimeConfig, WasmRuntime};
use serde_json::{Value, json};
use support::{Summary, record};

const TEXT: &str = "the quick brown fox jumps over the lazy dog";

/// Rounds, and runs of each kind in a round.
const ROUNDS: usize = 10;
const PER_ROUND: usize = 30;

fn registry(rt: &tokio::runtime::Runtime) -> Registry {
    let runtime = WasmRuntime::new(RuntimeConfig::default()).expect("runtime");
    let mut config = Config::default();
    config.code.enabled = true;
    rt.block_on(async {
        let loaded = Loader::new(runtime, PluginsAt::Bundled)
            .with_config(config)
            .load()
            .await
            .expect("bundled plugins");
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        loaded.registry
    })
}

fn ok(result: Result<piton_host::ToolResult, piton_host::CallError>) {
    match result {
        Ok(Ok(content)) => {
            black_box(content);
        }
        other => panic!("the call failed: {other:?}"),
    }
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let registry = registry(&rt);
    let nothing = json!({ "code": "1 + 1" });
    let ten = json!({
        "code": format!("[word_count(text={TEXT:?}) for _ in range(10)]"),
    });
    let args = json!({ "text": TEXT });
    let run = |args: &Value| ok(rt.block_on(registry.call("run_python", args.clone())));
    let direct = || {
        for _ in 0..10 {
            ok(rt.block_on(registry.call("word_count", args.clone())));
        }
    };
    // Warm up: the interpreter compiled (or taken from the cache), instances made.
    for _ in 0..20 {
        run(&nothing);
        run(&ten);
        direct();
    }
    let (mut empty, mut nested, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    let timed = |f: &dyn Fn(), into: &mut Vec<Duration>| {
        let t = Instant::now();
        f();
        into.push(t.elapsed());
    };
    let load_before = support::load_average();
    for _ in 0..ROUNDS {
        for _ in 0..PER_ROUND {
            timed(&|| run(&nothing), &mut empty);
            timed(&|| run(&ten), &mut nested);
            timed(&direct, &mut calls);
        }
    }
    let (empty, nested, calls) = (Summary::of(empty), Summary::of(nested), Summary::of(calls));
    println!(
        "code mode, {} runs each (load before {load_before}, after {}):",
        empty.len(),
        support::load_average()
    );
    record("code", "empty_median", support::ms(empty.median()), "ms");
    record("code", "empty_p99", support::ms(empty.p99()), "ms");
    record(
        "code",
        "ten_calls_median",
        support::ms(nested.median()),
        "ms",
    );
    record(
        "code",
        "ten_direct_median",
        support::ms(calls.median()),
        "ms",
    );
    let overhead = nested.median().saturating_sub(calls.median());
    record("code", "overhead_median", support::ms(overhead), "ms");
}
