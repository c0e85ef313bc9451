//! What a tool costs in each language piton builds: the same `word_count` tool (each
//! language's `piton new` template) built from source, then its component size, its
//! cold compile time, its load time from the compile cache, the cost of a call in a
//! fresh instance (median and p99), and the least memory a call runs in.
//!
//! Run with: `cargo bench -p piton-host --bench langs` (optionally followed by the
//! languages to measure: `-- rust c`). The Python and JavaScript toolchains come from
//! `tests/peers/install` (run here), C's from the system (clang, lld, wasi-libc).
//! Cold compiles of a Python or JavaScript component take seconds: this bench times a
//! few of them by hand rather than through criterion's many samples.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use piton_host::Limits;
use piton_host::Registry;
use piton_host::build::Lang;
use piton_host::config::ToolConfig;
use piton_host::wasm::{LoadFrom, RuntimeConfig, WasmRuntime, WasmTool};
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::record;

const TEXT: &str = "the quick brown fox jumps over the lazy dog";
const COLD_COMPILES: usize = 3;
const CACHED_LOADS: usize = 10;
const CALLS: usize = 300;
/// Calls in one block of each runtime's, then the other's.
const BLOCK: usize = 50;

fn main() {
    let wanted: Vec<Lang> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| Lang::from_name(&a))
        .collect();
    let langs = if wanted.is_empty() {
        Lang::ALL.to_vec()
    } else {
        wanted
    };
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let toolchains = support::toolchains();
    let scratch = tempfile::tempdir().expect("a scratch folder");
    println!(
        "{:<7} {:>10} {:>8} {:>12} {:>12} {:>12} {:>14} {:>12} {:>22} {:>10}",
        "lang",
        "size",
        "build",
        "cold: listed",
        "compiled",
        "cached load",
        "call median",
        "call p99",
        "none made ahead: med",
        "memory"
    );
    for lang in langs {
        let dir = scratch.path().join(lang.name()).join("word-count");
        piton_host::build::new::new_project(lang, &dir).expect("the template is made");
        let started = Instant::now();
        let built = match piton_host::build::build(&dir, None, &toolchains) {
            Ok(built) => built,
            Err(e) => {
                println!("{:<7} cannot build: {e}", lang.name());
                continue;
            }
        };
        let build_time = started.elapsed();
        let size = std::fs::metadata(&built.wasm).map_or(0, |m| m.len());
        let row = rt.block_on(measure(&built.wasm, scratch.path()));
        println!(
            "{:<7} {:>10} {:>8} {:>12} {:>12} {:>12} {:>14} {:>12} {:>22} {:>10}",
            lang.name(),
            mib(size),
            secs(build_time),
            secs(row.cold_listed),
            secs(row.cold_compile),
            ms(row.cached_load),
            us(row.call_median),
            us(row.call_p99),
            us(row.unready_median),
            row.memory
                .map_or_else(|| "> 256MiB".to_owned(), piton_host::format_size),
        );
        let name = lang.name();
        record(
            "langs",
            &format!("{name}_size"),
            size as f64 / 1024.0,
            "KiB",
        );
        record(
            "langs",
            &format!("{name}_build"),
            build_time.as_secs_f64(),
            "s",
        );
        let listed = row.cold_listed.as_secs_f64();
        record("langs", &format!("{name}_cold_listed"), listed, "s");
        let cold = row.cold_compile.as_secs_f64();
        record("langs", &format!("{name}_cold_compile"), cold, "s");
        let cached = support::ms(row.cached_load);
        record("langs", &format!("{name}_cached_load"), cached, "ms");
        let median = support::us(row.call_median);
        record("langs", &format!("{name}_call_median"), median, "µs");
        let p99 = support::us(row.call_p99);
        record("langs", &format!("{name}_call_p99"), p99, "µs");
        let median = support::us(row.unready_median);
        record("langs", &format!("{name}_unready_median"), median, "µs");
        let p99 = support::us(row.unready_p99);
        record("langs", &format!("{name}_unready_p99"), p99, "µs");
        if let Some(memory) = row.memory {
            let memory = memory as f64 / f64::from(1 << 20);
            record("langs", &format!("{name}_memory"), memory, "MiB");
        }
    }
}

struct Row {
    /// With no compile cache: until the load gives the tools (specs read on
    /// baseline code).
    cold_listed: Duration,
    /// The same, until the optimised code is compiled too.
    cold_compile: Duration,
    cached_load: Duration,
    call_median: Duration,
    call_p99: Duration,
    /// The same with no instance made ahead of calls.
    unready_median: Duration,
    unready_p99: Duration,
    memory: Option<u64>,
}

async fn measure(wasm: &Path, scratch: &Path) -> Row {
    // Cold: a new engine with no compile cache each time; the median of a few.
    let (mut listed, mut cold) = (Vec::new(), Vec::new());
    for _ in 0..COLD_COMPILES {
        let runtime = runtime(None);
        let started = Instant::now();
        // Kept until its optimised code is ready: a component whose tools are all
        // dropped is not compiled.
        let tool = load(&runtime, wasm).await;
        listed.push(started.elapsed());
        runtime.optimised().await;
        cold.push(started.elapsed());
        drop(tool);
    }
    // Cached: a new engine over a compile cache that holds the component.
    let cache = scratch.join(format!("cache-{}", wasm.display().to_string().len()));
    let filling = runtime(Some(cache.clone()));
    let tool = load(&filling, wasm).await;
    filling.optimised().await;
    drop(tool);
    let mut cached = Vec::new();
    for _ in 0..CACHED_LOADS {
        let runtime = runtime(Some(cache.clone()));
        let started = Instant::now();
        load(&runtime, wasm).await;
        cached.push(started.elapsed());
    }
    // Calls: each in a fresh instance, one after another; on a runtime that makes
    // instances ahead of calls (piton's default) and on one that makes none, in
    // alternating blocks.
    let runtime = runtime(Some(cache.clone()));
    let unready_runtime = WasmRuntime::new(RuntimeConfig {
        cache_dir: Some(cache),
        made_ahead: Some(0),
        ..RuntimeConfig::default()
    })
    .expect("a runtime");
    let registry = registry_of(load(&runtime, wasm).await, Limits::default());
    let unready = registry_of(load(&unready_runtime, wasm).await, Limits::default());
    let args = json!({ "text": TEXT });
    for _ in 0..20 {
        call(&registry, &args).await;
        call(&unready, &args).await;
    }
    let mut calls = Vec::with_capacity(CALLS);
    let mut unready_calls = Vec::with_capacity(CALLS);
    for _ in 0..CALLS / BLOCK {
        for (registry, samples) in [(&registry, &mut calls), (&unready, &mut unready_calls)] {
            for _ in 0..BLOCK {
                let started = Instant::now();
                call(registry, &args).await;
                samples.push(started.elapsed());
            }
        }
    }
    // The least memory limit (in steps) under which a call still answers.
    let mut memory = None;
    for mib in [1u64, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256] {
        let limits = Limits {
            memory: mib << 20,
            ..Limits::default()
        };
        let registry = registry_of(load(&runtime, wasm).await, limits);
        if matches!(registry.call("word_count", args.clone()).await, Ok(Ok(_))) {
            memory = Some(mib << 20);
            break;
        }
    }
    Row {
        cold_listed: median(&mut listed),
        cold_compile: median(&mut cold),
        cached_load: median(&mut cached),
        call_median: median(&mut calls),
        call_p99: percentile(&mut calls, 99),
        unready_median: median(&mut unready_calls),
        unready_p99: percentile(&mut unready_calls, 99),
        memory,
    }
}

fn runtime(cache_dir: Option<PathBuf>) -> WasmRuntime {
    WasmRuntime::new(RuntimeConfig {
        cache_dir,
        ..RuntimeConfig::default()
    })
    .expect("a runtime")
}

async fn load(runtime: &WasmRuntime, wasm: &Path) -> WasmTool {
    let mut tools = runtime
        .load(LoadFrom::File(wasm.into()), None)
        .await
        .expect("the component loads");
    let at = tools
        .iter()
        .position(|t| piton_host::Tool::spec(t).name == "word_count")
        .expect("a word_count tool");
    tools.swap_remove(at)
}

fn registry_of(tool: WasmTool, limits: Limits) -> Registry {
    let settings = ToolConfig {
        limits,
        ..ToolConfig::default()
    };
    let mut registry = Registry::new();
    registry
        .add(tool.configured(&settings).expect("limits apply"))
        .expect("one tool");
    registry
}

async fn call(registry: &Registry, args: &serde_json::Value) {
    let result = registry.call("word_count", args.clone()).await;
    assert!(matches!(result, Ok(Ok(_))), "word_count failed: {result:?}");
}

fn median(samples: &mut [Duration]) -> Duration {
    percentile(samples, 50)
}

fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    samples.sort();
    let at = (samples.len() * p / 100).min(samples.len().saturating_sub(1));
    samples.get(at).copied().unwrap_or_default()
}

fn mib(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}
