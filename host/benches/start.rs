//! How long the real `piton serve` (stdio) takes to start, and what it keeps resident.
//!
//! - Start: from spawning the process to the answer of its first `tools/list` (sent
//!   right after `initialize`), with 1, 10 and 100 plugins, cold (an empty compile
//!   cache: every component is compiled) and warm (the cache filled by a start before);
//!   and the CPU time the process used by then (its threads' schedstat), which a busy
//!   machine disturbs less than the wall time. Cold, also: how long the first call of
//!   the last tool then takes (its optimised compile is queued last), and when the
//!   cache holds every component's optimised code (from spawning).
//! - Memory: resident memory (VmRSS, and the peak VmHWM) of `serve` idle with 1 and
//!   100 plugins, and how it grows per call in flight (1, 16 and 64 calls of a tool
//!   that waits 2 s).
//!
//! With 100 plugins the cold start is measured twice: components as any toolchain
//! builds them, and as `piton build` does, with their specs written into them (the
//! plugins folder lists those without compiling; the first call compiles).
//!
//! The plugins are the bundled `word_count` with its tool's name rewritten in place
//! (`wc00000000`, `wc00000001`, ...; same length, so the component stays valid): each
//! file is a distinct component (its own sha256, compiled and cached on its own) with
//! a distinct tool, as 100 real small plugins would be. Plain copies would not do:
//! piton loads each copy, but every one after the first is refused as a second tool
//! named `word_count`, and a cold start would compile the same bytes 100 times.
//!
//! Run with: `cargo bench -p piton-host --bench start`

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "support/mod.rs"]
mod support;
use support::folders::{piton, serving};
use support::{Summary, load_average, ms, record};

/// Plugin counts to start with.
const SIZES: [usize; 3] = [1, 10, 100];
/// The name the bundled word_count gives its tool, and how long every rewrite is.
const NAME: &[u8] = b"word_count";

fn main() {
    println!(
        "start: {} CPUs, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let bytes = piton_host::plugins::bundled_bytes("word-count").expect("word-count is bundled");
    for n in SIZES {
        let plugins = scratch.path().join(format!("plugins-{n}"));
        write_variants(&plugins, n, bytes);
        start_times(&plugins, n, scratch.path(), "");
    }
    let built = with_specs(bytes);
    let plugins = scratch.path().join("plugins-built-100");
    write_variants(&plugins, 100, &built);
    start_times(&plugins, 100, scratch.path(), "_built");
    idle_memory(scratch.path());
    memory_per_call(scratch.path());
}

/// The component `bytes` with its specs written in, as `piton build` writes them.
fn with_specs(bytes: &[u8]) -> Vec<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let wasm = piton_host::wasm::WasmRuntime::new(piton_host::wasm::RuntimeConfig {
        cache_dir: None,
        ..Default::default()
    })
    .expect("the wasm runtime starts");
    let source = piton_host::ToolSource::File("word_count.wasm".into());
    runtime
        .block_on(wasm.with_specs_section(source, bytes.to_vec()))
        .expect("word_count's specs are written in")
}

/// `n` distinct components in `folder`, each `bytes` (word_count) with its own name.
fn write_variants(folder: &Path, n: usize, bytes: &[u8]) {
    std::fs::create_dir_all(folder).expect("plugins folder");
    let at: Vec<usize> = bytes
        .windows(NAME.len())
        .enumerate()
        .filter(|(_, w)| *w == NAME)
        .map(|(i, _)| i)
        .collect();
    assert!(!at.is_empty(), "word_count's name is not in its component");
    for i in 0..n {
        let name = format!("wc{i:08}");
        assert_eq!(name.len(), NAME.len());
        let mut variant = bytes.to_vec();
        for &start in &at {
            variant[start..start + NAME.len()].copy_from_slice(name.as_bytes());
        }
        std::fs::write(folder.join(format!("{name}.wasm")), variant).expect("write a plugin");
    }
}

/// Cold and warm starts with the plugins of `folder` (`n` of them), recorded with
/// `suffix` after their names.
fn start_times(folder: &Path, n: usize, scratch: &Path, suffix: &str) {
    let cold_runs = if n >= 100 { 3 } else { 5 };
    let warm_runs = if n >= 100 { 10 } else { 20 };
    let load = load_average();
    let last = format!("wc{:08}", n - 1);
    let (mut cold, mut cold_cpu, mut first_call, mut optimised) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..cold_runs {
        let cache = scratch.join(format!("cache-cold-{n}{suffix}-{run}"));
        let mut served = Served::start(folder, &cache, n);
        cold.push(served.took);
        cold_cpu.push(served.cpu());
        let called = Instant::now();
        served.call(1, &last, &json!({"text": "one two three"}));
        let answer = served.answer(1);
        first_call.push(called.elapsed());
        assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");
        optimised.push(served.until_cached(&cache, n));
        drop(served);
        let _ = std::fs::remove_dir_all(&cache);
    }
    let cache = scratch.join(format!("cache-warm-{n}{suffix}"));
    drop(Served::start(folder, &cache, n));
    let (warm, warm_cpu): (Vec<_>, Vec<_>) = (0..warm_runs)
        .map(|_| {
            let served = Served::start(folder, &cache, n);
            (served.took, served.cpu())
        })
        .unzip();
    let (cold, cold_cpu) = (Summary::of(cold), Summary::of(cold_cpu));
    let (first_call, optimised) = (Summary::of(first_call), Summary::of(optimised));
    let (warm, warm_cpu) = (Summary::of(warm), Summary::of(warm_cpu));
    println!(
        "start {n} plugins{suffix} to tools/list: cold median {:.1} ms (max {:.1}; CPU {:.1} ms; \
         {cold_runs} runs; then a first call of {last} {:.1} ms, every component optimised \
         and cached {:.1} ms after spawning), warm median {:.1} ms, p99 {:.1} ms (CPU \
         {:.1} ms; {warm_runs} runs); load average before {load}, after {}",
        ms(cold.median()),
        ms(cold.at(1.0)),
        ms(cold_cpu.median()),
        ms(first_call.median()),
        ms(optimised.median()),
        ms(warm.median()),
        ms(warm.p99()),
        ms(warm_cpu.median()),
        load_average(),
    );
    for (key, value) in [
        ("cold", cold.median()),
        ("cold_cpu", cold_cpu.median()),
        ("cold_first_call", first_call.median()),
        ("cold_optimised", optimised.median()),
        ("warm", warm.median()),
        ("warm_p99", warm.p99()),
        ("warm_cpu", warm_cpu.median()),
    ] {
        record("start", &format!("{key}_{n}{suffix}"), ms(value), "ms");
    }
}

/// Resident memory of an idle `serve`, with 1 and 100 plugins (warm cache).
fn idle_memory(scratch: &Path) {
    for n in [1, 100] {
        let folder = scratch.join(format!("plugins-{n}"));
        let cache = scratch.join(format!("cache-warm-{n}"));
        let served = Served::start(&folder, &cache, n);
        // Let the start's transient allocations settle.
        std::thread::sleep(Duration::from_millis(300));
        let (rss, hwm) = served.memory();
        println!(
            "serve idle with {n} plugins: VmRSS {:.1} MiB, VmHWM {:.1} MiB",
            mib(rss),
            mib(hwm)
        );
        record("start", &format!("idle_{n}_rss"), mib(rss), "MiB");
        record("start", &format!("idle_{n}_hwm"), mib(hwm), "MiB");
    }
}

/// How resident memory grows with calls in flight: `hoard` (a test guest) told to
/// make nothing and wait 2 s, `n` at once.
fn memory_per_call(scratch: &Path) {
    let folder = scratch.join("plugins-hoard");
    std::fs::create_dir_all(&folder).expect("plugins folder");
    std::fs::copy(
        piton_tests::guests::HOSTILE_HOARD,
        folder.join("hoard.wasm"),
    )
    .expect("copy hoard");
    // Narrowed to closed-world, so a call is one instance (no `hints_for` first).
    std::fs::write(
        folder.join("piton.toml"),
        "[tools.hoard]\ntimeout = \"60s\"\nopen_world = false\n",
    )
    .expect("piton.toml");
    let cache = scratch.join("cache-hoard");
    let wait = json!({"kind": "pollables", "count": 0, "size": 0, "path": "", "hold_ms": 2000});
    let quick = json!({"kind": "pollables", "count": 0, "size": 0, "path": "", "hold_ms": 0});
    for n in [1_i64, 16, 64] {
        let mut served = Served::start(&folder, &cache, 1);
        // One call first, so code and the first instance slot are paged in.
        served.call(1, "hoard", &quick);
        served.answer(1);
        std::thread::sleep(Duration::from_millis(200));
        let (idle, _) = served.memory();
        for id in 0..n {
            served.call(100 + id, "hoard", &wait);
        }
        // Every call is running (or waiting in its guest) by now.
        std::thread::sleep(Duration::from_millis(1000));
        let (busy, _) = served.memory();
        for _ in 0..n {
            served.answer(None);
        }
        let per_call = busy.saturating_sub(idle) as f64 / n as f64 / 1024.0;
        println!(
            "serve with {n} calls in flight: VmRSS {:.1} MiB (idle {:.1} MiB), {per_call:.0} KiB \
             per call; load average {}",
            mib(busy),
            mib(idle),
            load_average()
        );
        record("start", &format!("rss_per_call_{n}"), per_call, "KiB");
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// A `piton serve` over stdio, started and asked for its tools.
struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// When it was spawned.
    started: Instant,
    /// From spawning to the answer of the first tools/list.
    took: Duration,
}

impl Served {
    /// Starts `serve` on `plugins` with its compile cache in `cache`, and waits for
    /// its first tools/list, which must list `n` tools.
    fn start(plugins: &Path, cache: &Path, n: usize) -> Self {
        let cwd = plugins.parent().expect("a parent folder");
        let started = Instant::now();
        let mut child = serving(&mut Command::new(piton()), &[], plugins, cwd, cache)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("piton serve starts");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "piton-bench", "version": "0"}}});
        let messages = format!(
            "{init}\n{}\n{}\n",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": -1, "method": "tools/list"}),
        );
        stdin.write_all(messages.as_bytes()).expect("write");
        let mut served = Self {
            child,
            stdin: Some(stdin),
            stdout,
            started,
            took: Duration::ZERO,
        };
        let list = served.answer(-1);
        served.took = started.elapsed();
        let tools = list["result"]["tools"].as_array().map_or(0, Vec::len);
        assert_eq!(tools, n, "tools/list: {list}");
        served
    }

    /// From spawning until the compile cache `cache` holds `n` compiled components
    /// (each is written whole, then renamed into place).
    fn until_cached(&self, cache: &Path, n: usize) -> Duration {
        let cached = || {
            std::fs::read_dir(cache).map_or(0, |dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".cwasm"))
                    .count()
            })
        };
        while cached() < n {
            assert!(
                self.started.elapsed() < Duration::from_secs(600),
                "{} of {n} components cached after 10 minutes",
                cached()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.started.elapsed()
    }

    fn call(&mut self, id: i64, name: &str, arguments: &Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").expect("write");
    }

    /// The answer to request `id`, or to any request when `None` (notifications
    /// are skipped, and so are answers to other requests when `id` is given).
    fn answer(&mut self, id: impl Into<Option<i64>>) -> Value {
        let id = id.into();
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "piton serve closed its stdout");
            let Ok(value) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let answered = value["id"].as_i64();
            if answered.is_some() && (id.is_none() || answered == id) {
                assert!(value.get("error").is_none(), "{value}");
                return value;
            }
        }
    }

    /// The CPU time the process has used so far, all its threads together (each
    /// thread's schedstat, in nanoseconds): wall time on a shared machine says as much
    /// about the neighbours as about piton.
    fn cpu(&self) -> Duration {
        let tasks = format!("/proc/{}/task", self.child.id());
        let nanos: u64 = std::fs::read_dir(tasks)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
            .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        Duration::from_nanos(nanos)
    }

    /// VmRSS and VmHWM in bytes.
    fn memory(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("piton serve is running");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map_or(0, |kib| kib * 1024)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // Closing stdin ends `piton serve`; reap it.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
