//! What one `word_count` call costs: in a fresh instance (piton's way), in a reused
//! instance, and as a native Rust function; what watching a call adds (the metrics,
//! the audit log); what the consent policy `serve` follows adds to a read-only call
//! it does not ask about; what watching a native call that does nothing adds, with
//! `[tracing]` off and on (the per-call cost of the observer alone); and how many
//! fresh-instance calls a second 1, 2, 4 and 8 concurrent callers get through.
//!
//! Run with: `cargo bench -p piton-host --bench call`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};

#[path = "support/mod.rs"]
mod support;
use piton_host::loader::Loader;
use piton_host::observe::Observer;
use piton_host::plugins::PluginsAt;
use piton_host::plugins::bundled_bytes;
use piton_host::wasm::{RuntimeConfig, WasmRuntime};
use piton_host::{AuditSettings, AuditTo, Registry};
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
    registry: Arc<Registry>,
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
            .get_export_index(&mut store, None, "piton:tool/tool@0.1.2")
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
    Setup {
        rt,
        registry: Arc::new(registry),
    }
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
    observed(&s);
    observed_native(&s);
    consented(&s);
    throughput(&s);
}

/// What watching a call costs: medians of `word_count` in a fresh instance in a
/// registry with no observer, with the metrics only (a registry the loader made, with
/// no `[audit]`), and with the metrics and an audit log written to a file; in
/// interleaved rounds, so that drift in the machine's load falls on all three.
fn observed(s: &Setup) {
    let tool = s.registry.get("word_count").expect("bundled").clone();
    let mut bare = Registry::new();
    bare.add_shared(tool.clone()).expect("one tool");
    let mut audited = Registry::new();
    audited.add_shared(tool).expect("one tool");
    let logs = tempfile::tempdir().expect("temp dir");
    let settings = AuditSettings {
        to: Some(AuditTo::File(logs.path().join("audit.log"))),
        arguments: false,
    };
    let observer =
        Observer::new(&settings, &Default::default(), Arc::default()).expect("an audit log");
    audited.set_observer(observer.clone());
    let registries = [
        ("unobserved", &bare),
        ("metrics", &*s.registry),
        ("metrics_and_audit", &audited),
    ];
    let medians = interleaved_medians(
        s,
        &registries,
        "word_count",
        &json!({ "text": TEXT }),
        10,
        500,
    );
    observer.flush();
    println!("watching a call, over 5000 calls each:");
    record_medians(&registries, &medians, support::us, "µs");
}

/// The median of calls of `tool` with `args` in each registry of `registries`, over
/// `rounds` rounds of `per_round` calls in each in turn, so that drift in the
/// machine's load falls on all of them alike.
fn interleaved_medians(
    s: &Setup,
    registries: &[(&str, &Registry)],
    tool: &str,
    args: &serde_json::Value,
    rounds: usize,
    per_round: usize,
) -> Vec<Duration> {
    let mut times = vec![Vec::new(); registries.len()];
    for _ in 0..rounds {
        for ((_, registry), times) in registries.iter().zip(&mut times) {
            for _ in 0..per_round {
                let t = Instant::now();
                let _ = black_box(s.rt.block_on(registry.call(tool, args.clone())));
                times.push(t.elapsed());
            }
        }
    }
    times.into_iter().map(|t| Summary::of(t).median()).collect()
}

/// Records each registry's median as `NAME_median`, and what each after the first
/// adds to the first as `NAME_added`, in `unit`.
fn record_medians(
    registries: &[(&str, &Registry)],
    medians: &[Duration],
    scale: fn(Duration) -> f64,
    unit: &str,
) {
    for ((name, _), median) in registries.iter().zip(medians) {
        record("call", &format!("{name}_median"), scale(*median), unit);
    }
    for ((name, _), median) in registries.iter().zip(medians).skip(1) {
        let added = median.saturating_sub(medians[0]);
        record("call", &format!("{name}_added"), scale(added), unit);
    }
}

/// A native tool that does nothing: a call of it is the registry's own path.
struct Noop {
    spec: piton_host::ToolSpec,
}

#[async_trait::async_trait]
impl piton_host::Tool for Noop {
    fn spec(&self) -> &piton_host::ToolSpec {
        &self.spec
    }

    fn hints(&self) -> piton_host::Hints {
        piton_host::Hints::read_only().open_world(false)
    }

    async fn call(
        &self,
        _ctx: &piton_host::CallContext,
        _args: &piton_host::Args,
        _hints: piton_host::Hints,
    ) -> Result<piton_host::ToolResult, piton_host::CallError> {
        Ok(Ok(Vec::new()))
    }
}

/// What the consent policy `piton serve` follows adds to a call it does not ask
/// about: medians of the read-only native no-op (the registry's own path, nothing
/// else) in a registry without and with the default policy (`not-read-only`), in
/// interleaved rounds.
fn consented(s: &Setup) {
    let bare = native_registry(s, Default::default());
    let mut asking = native_registry(s, Default::default());
    let consent = piton_host::consent::Keeper::new(None)
        .consent(
            &piton_host::config::approve::ApproveSettings::default(),
            Default::default(),
            &mut Vec::new(),
        )
        .expect("a consent policy");
    asking.set_consent(Arc::new(consent));
    let registries = [
        ("native_without_consent", &bare),
        ("native_with_consent", &asking),
    ];
    let medians = interleaved_medians(s, &registries, "noop", &json!({}), 20, 2000);
    println!("the consent policy on a read-only native no-op call, over 40000 calls each:");
    record_medians(&registries, &medians, support::ns, "ns");
}

/// A registry a loader made with `config` (so with an observer), holding `noop`.
fn native_registry(s: &Setup, config: piton_host::config::Config) -> Registry {
    let mut registry = s.rt.block_on(async {
        Loader::new(
            WasmRuntime::new(RuntimeConfig::default()).expect("runtime"),
            PluginsAt::Bundled,
        )
        .with_config(config)
        .load()
        .await
        .expect("bundled plugins")
        .registry
    });
    registry
        .add(Noop {
            spec: piton_host::ToolSpec {
                name: "noop".into(),
                description: "does nothing".into(),
                input_schema: json!({"type": "object"}),
                parallel: true,
            },
        })
        .expect("one tool");
    registry
}

/// What watching a call costs where the call itself costs next to nothing: medians
/// of a native no-op in a registry with no observer, with the metrics (`[tracing]`
/// off, as by default), and with spans sent to an OTLP address (a closed port: the
/// call's share is queueing its span; the export runs on the exporter's thread), in
/// interleaved rounds.
fn observed_native(s: &Setup) {
    let mut bare = Registry::new();
    bare.add_shared(
        native_registry(s, Default::default())
            .get("noop")
            .expect("noop")
            .clone(),
    )
    .expect("one tool");
    let metrics = native_registry(s, Default::default());
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = closed.local_addr().expect("address").port();
    drop(closed);
    let mut config = piton_host::config::Config::default();
    config.tracing.otlp =
        Some(piton_host::OtlpEndpoint::parse(&format!("http://127.0.0.1:{port}")).expect("a URL"));
    let traced = native_registry(s, config);
    let registries = [
        ("native_unobserved", &bare),
        ("native_metrics_tracing_off", &metrics),
        ("native_tracing_on", &traced),
    ];
    let medians = interleaved_medians(s, &registries, "noop", &json!({}), 20, 2000);
    println!("watching a native no-op call, over 40000 calls each:");
    record_medians(&registries, &medians, support::ns, "ns");
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

/// Calls a second with `callers` tasks calling `word_count` back to back on the
/// multi-thread runtime (a worker per core), over `window` after a short warm-up; and
/// the median and p99 of those calls.
fn calls_per_second(s: &Setup, callers: usize, window: Duration) -> (f64, Summary) {
    let args = json!({ "text": TEXT });
    let run = |for_how_long: Duration| {
        let tasks: Vec<_> = (0..callers)
            .map(|_| {
                let registry = s.registry.clone();
                let args = args.clone();
                s.rt.spawn(async move {
                    let mut times = Vec::new();
                    let end = Instant::now() + for_how_long;
                    while Instant::now() < end {
                        let t = Instant::now();
                        let result = registry.call("word_count", args.clone()).await;
                        times.push(t.elapsed());
                        assert!(matches!(result, Ok(Ok(_))), "word_count failed");
                    }
                    times
                })
            })
            .collect();
        let start = Instant::now();
        let times: Vec<Duration> = s.rt.block_on(async {
            let mut all = Vec::new();
            for task in tasks {
                all.extend(task.await.expect("a caller panicked"));
            }
            all
        });
        (times.len() as f64 / start.elapsed().as_secs_f64(), times)
    };
    run(window / 5);
    let (rate, times) = run(window);
    (rate, Summary::of(times))
}

/// Fresh-instance calls a second with 1, 2, 4 and 8 concurrent callers, recorded.
fn throughput(s: &Setup) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("throughput, {cores} cores:");
    let mut one = None;
    for callers in [1, 2, 4, 8] {
        let (rate, times) = calls_per_second(s, callers, Duration::from_secs(3));
        record("call", &format!("throughput_c{callers}"), rate, "calls/s");
        println!(
            "  {callers} callers: median {:.1} µs, p99 {:.1} µs a call",
            support::us(times.median()),
            support::us(times.p99())
        );
        match one {
            None => one = Some(rate),
            Some(one) if callers == 2 => {
                record("call", "throughput_c2_over_c1", rate / one, "x");
            }
            Some(_) => {}
        }
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
