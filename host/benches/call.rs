//! What one `word_count` call costs: in a fresh instance (piton's way), in a reused
//! instance, and as a native Rust function.
//!
//! Run with: `cargo bench -p piton-host --bench call`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};

#[path = "support/mod.rs"]
mod support;
use piton_host::Registry;
use piton_host::loader::Loader;
use piton_host::plugins::PluginsAt;
use piton_host::plugins::bundled_bytes;
use piton_host::wasm::{RuntimeConfig, WasmRuntime};
use serde_json::json;
use support::{Summary, record};
use wasmtime::component::{Component, Func, Linker, ResourceTable, Val};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

const TEXT: &str = "the quick brown fox jumps over the lazy dog";

fn native_word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

struct Setup {
    rt: tokio::runtime::Runtime,
    registry: Registry,
}

/// What a reused instance lives in: WASI with nothing granted.
struct Ctx {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Ctx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// One instance of `word-count` kept for many runs, on wasmtime alone (async, epoch
/// interruption on, as piton's engine): the floor that a fresh instance per call is
/// measured against. piton never runs calls this way: state would survive between
/// them.
struct Reused {
    store: Store<Ctx>,
    run: Func,
}

impl Reused {
    async fn new() -> Self {
        let mut config = Config::new();
        config.epoch_interruption(true);
        let engine = Engine::new(&config).expect("engine");
        let bytes = bundled_bytes("word-count").expect("word-count is bundled");
        let component = Component::new(&engine, bytes).expect("word-count compiles");
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("WASI links");
        let ctx = Ctx {
            wasi: WasiCtxBuilder::new().build(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(&engine, ctx);
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = linker
            .instantiate_async(&mut store, &component)
            .await
            .expect("instantiates");
        let interface = instance
            .get_export_index(&mut store, None, "piton:tool/tool@0.1.1")
            .expect("exports piton:tool/tool");
        let run = instance
            .get_export_index(&mut store, Some(&interface), "run")
            .and_then(|index| instance.get_func(&mut store, index))
            .expect("exports run");
        Self { store, run }
    }

    /// One run with `args` (JSON object text); the result is dropped.
    async fn run(&mut self, args: &str) {
        let mut result = [Val::Bool(false)];
        self.run
            .call_async(&mut self.store, &[Val::String(args.into())], &mut result)
            .await
            .expect("runs");
        black_box(result);
    }
}

fn setup() -> Setup {
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let runtime = WasmRuntime::new(RuntimeConfig::default()).expect("runtime");
    let registry = rt.block_on(async {
        Loader::new(runtime, PluginsAt::Bundled)
            .with_config(Default::default())
            .load()
            .await
            .expect("bundled plugins")
            .registry
    });
    Setup { rt, registry }
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
    let mut reused = s.rt.block_on(Reused::new());
    group.bench_function("reused_instance", |b| {
        b.iter(|| s.rt.block_on(reused.run(&args_text)));
    });
    group.bench_function("native", |b| b.iter(|| native_word_count(black_box(TEXT))));
    group.finish();
    drop(reused);
    ratios(&s);
}

/// Medians over plain timed loops, printed as ratios (criterion reports each alone)
/// and recorded for the report.
fn ratios(s: &Setup) {
    let args = json!({ "text": TEXT });
    let args_text = args.to_string();
    let n = 3000;
    let fresh = Summary::of(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                let _ = black_box(s.rt.block_on(s.registry.call("word_count", args.clone())));
                t.elapsed()
            })
            .collect(),
    );
    let mut reused_instance = s.rt.block_on(Reused::new());
    let reused = Summary::of(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                s.rt.block_on(reused_instance.run(&args_text));
                t.elapsed()
            })
            .collect(),
    );
    let native = Summary::of(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                black_box(native_word_count(black_box(TEXT)));
                t.elapsed()
            })
            .collect(),
    );
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!("over {n} calls each:");
    record("call", "fresh_median", support::us(fresh.median()), "µs");
    record("call", "fresh_p99", support::us(fresh.p99()), "µs");
    record("call", "reused_median", support::us(reused.median()), "µs");
    record("call", "native_median", support::us(native.median()), "µs");
    record(
        "call",
        "fresh_over_reused",
        ratio(fresh.median(), reused.median()),
        "x",
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
