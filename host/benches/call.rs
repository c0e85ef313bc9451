//! What one `word_count` call costs: in a fresh instance (piton's way), in a reused
//! instance, and as a native Rust function.
//!
//! Run with: `cargo bench -p piton-host --bench call`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use piton_host::Registry;
use piton_host::loader::Loader;
use piton_host::plugins::PluginsAt;
use piton_host::wasm::{RuntimeConfig, WasmRuntime, WasmTool};
use serde_json::json;

const TEXT: &str = "the quick brown fox jumps over the lazy dog";

fn native_word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

struct Setup {
    rt: tokio::runtime::Runtime,
    registry: Registry,
    // A second copy, outside the registry, for the reused-instance case.
    tool: WasmTool,
}

fn setup() -> Setup {
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let runtime = WasmRuntime::new(RuntimeConfig::default()).expect("runtime");
    let (registry, tool) = rt.block_on(async {
        let loaded = Loader::new(runtime.clone(), PluginsAt::Bundled)
            .with_config(Default::default())
            .load()
            .await
            .expect("bundled plugins");
        let bytes =
            piton_host::plugins::bundled_bytes("word-count").expect("word-count is bundled");
        let tool = runtime
            .load(
                piton_host::ToolSource::Bundled("word-count".into()),
                bytes.to_vec(),
            )
            .await
            .expect("word-count loads");
        (loaded.registry, tool)
    });
    Setup { rt, registry, tool }
}

fn bench(c: &mut Criterion) {
    let s = setup();
    let args = json!({ "text": TEXT });
    let args_text = args.to_string();
    let mut group = c.benchmark_group("word_count");
    group.bench_function("fresh_instance", |b| {
        b.to_async(&s.rt)
            .iter(|| async { black_box(s.registry.call("word_count", args.clone()).await) });
    });
    let mut reused = s.rt.block_on(s.tool.reused_instance()).expect("instance");
    group.bench_function("reused_instance", |b| {
        b.iter(|| black_box(s.rt.block_on(reused.run(&args_text))));
    });
    group.bench_function("native", |b| b.iter(|| native_word_count(black_box(TEXT))));
    group.finish();
    drop(reused);
    ratios(&s);
}

/// Medians over plain timed loops, printed as ratios (criterion reports each alone).
fn ratios(s: &Setup) {
    let args = json!({ "text": TEXT });
    let args_text = args.to_string();
    let median = |mut samples: Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2]
    };
    let n = 3000;
    let fresh = median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                let _ = black_box(s.rt.block_on(s.registry.call("word_count", args.clone())));
                t.elapsed()
            })
            .collect(),
    );
    let mut reused_instance = s.rt.block_on(s.tool.reused_instance()).expect("instance");
    let reused = median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                let _ = black_box(s.rt.block_on(reused_instance.run(&args_text)));
                t.elapsed()
            })
            .collect(),
    );
    let native = median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                black_box(native_word_count(black_box(TEXT)));
                t.elapsed()
            })
            .collect(),
    );
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!(
        "medians over {n} calls: fresh {fresh:?}, reused {reused:?}, native {native:?}; \
         fresh/reused {:.1}x, fresh/native {:.0}x",
        ratio(fresh, reused),
        ratio(fresh, native)
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
