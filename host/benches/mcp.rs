//! What one MCP `tools/call` of `word_count` costs end to end: the real `piton serve`
//! as a child process on stdio, called by a Rust client, one call after another.
//!
//! Two clients: rmcp's (`TokioChildProcess` + `ServiceExt::serve`, as a Rust agent would
//! call piton), and raw JSON-RPC lines written and read with blocking std I/O, to show
//! how much of the round trip is the client. Each prints median, p90, p99 and mean over
//! timed loops with the load average before and after, then runs under criterion.
//!
//! Then the server's own CPU time per call: `piton serve` run under `/usr/bin/time`
//! (user + sys) for 20 000 raw calls, and once for none, which is what starting and
//! stopping cost.
//!
//! Then piton against a native MCP server: the same `echo` tool served by piton (a
//! Rust component, tests/guests/echo) and by `@modelcontextprotocol/server-everything`
//! (Node.js, no sandbox), both over stdio with the raw client, in alternating blocks.
//!
//! Run with: `cargo bench -p piton-host --bench mcp`; `PITON_BENCH_SERVER=path/to/piton`
//! benches another build of the server with the same clients.

use std::hint::black_box;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};

#[path = "support/mod.rs"]
mod support;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceError, ServiceExt as _};
use serde_json::{Value, json};
use support::folders::Folders;
use support::raw::RawClient;
use support::versus::{Blocks, side_by_side};
use support::{Summary, load_average, record};

const TEXT: &str = "the quick brown fox jumps over the lazy dog";
/// Timed calls per plain loop.
const CALLS: usize = 3000;
/// Untimed calls first: the first compiles (or loads from the cache), the rest warm up.
const WARM_UP: usize = 200;

/// The rmcp client.
type McpClient = RunningService<RoleClient, ()>;

async fn rmcp_client(folders: &Folders) -> McpClient {
    let mut serve = folders.serve(&[]);
    serve.stderr(Stdio::inherit());
    let transport =
        TokioChildProcess::new(tokio::process::Command::from(serve)).expect("piton serve starts");
    ().serve(transport).await.expect("MCP handshake")
}

fn call_params() -> CallToolRequestParams {
    let mut args = JsonObject::new();
    args.insert("text".into(), Value::from(TEXT));
    CallToolRequestParams::new("word_count").with_arguments(args)
}

async fn rmcp_call(client: &McpClient, params: CallToolRequestParams) -> Result<(), ServiceError> {
    let result = client.call_tool(params).await?;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    Ok(())
}

fn raw_params() -> String {
    json!({"name": "word_count", "arguments": {"text": TEXT}}).to_string()
}

/// Times `CALLS` sequential calls after `WARM_UP` untimed ones, prints the summary
/// and records median and p99 under `key`.
fn timed_loop(label: &str, key: &str, mut call: impl FnMut()) {
    for _ in 0..WARM_UP {
        call();
    }
    let before = load_average();
    let samples = Summary::of(
        (0..CALLS)
            .map(|_| {
                let t = Instant::now();
                call();
                t.elapsed()
            })
            .collect(),
    );
    let after = load_average();
    let ms = support::ms;
    println!(
        "mcp tools/call word_count, {label}: {CALLS} sequential calls: median {:.4} ms, \
         p90 {:.4} ms, p99 {:.4} ms, mean {:.4} ms; \
         load average before {before}, after {after}; {} CPUs",
        ms(samples.median()),
        ms(samples.at(0.9)),
        ms(samples.p99()),
        ms(samples.mean()),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    record("mcp", &format!("{key}_median"), ms(samples.median()), "ms");
    record("mcp", &format!("{key}_p99"), ms(samples.p99()), "ms");
}

fn bench(c: &mut Criterion) {
    let folders = Folders::new();
    let rt = tokio::runtime::Runtime::new().expect("tokio");

    // rmcp client.
    let client = rt.block_on(rmcp_client(&folders));
    let params = call_params();
    timed_loop("rmcp client", "stdio_rmcp", || {
        rt.block_on(rmcp_call(&client, params.clone()))
            .expect("call");
    });
    let mut group = c.benchmark_group("mcp_tools_call_word_count");
    group.bench_function("rmcp_client", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(rmcp_call(&client, params.clone()).await) });
    });
    rt.block_on(client.cancel()).expect("client stops");

    // The same client on a current-thread runtime, as an agent with one thread for its
    // MCP connections would run it: no hand-offs between threads in the client.
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let client = local.block_on(rmcp_client(&folders));
    timed_loop(
        "rmcp client on a current-thread runtime",
        "stdio_rmcp_current_thread",
        || {
            local
                .block_on(rmcp_call(&client, params.clone()))
                .expect("call");
        },
    );
    group.bench_function("rmcp_client_current_thread", |b| {
        b.to_async(&local)
            .iter(|| async { black_box(rmcp_call(&client, params.clone()).await) });
    });
    local.block_on(client.cancel()).expect("client stops");

    // Raw JSON-RPC lines.
    let mut raw = RawClient::spawn(folders.serve(&[]));
    let raw_params = raw_params();
    timed_loop("raw JSON-RPC client", "stdio_raw", || {
        raw.call(&raw_params, "9")
    });
    group.bench_function("raw_jsonrpc_client", |b| {
        b.iter(|| raw.call(&raw_params, "9"))
    });
    group.finish();
    drop(raw);
}

/// Calls timed for the server's CPU time.
const CPU_CALLS: usize = 20_000;

/// The CPU time (user + sys) `/usr/bin/time` reports for one `piton serve` that
/// answers `calls` raw calls after the handshake, with the wall time of the calls.
fn server_cpu(folders: &Folders, calls: usize) -> Option<(Duration, Duration)> {
    let report = tempfile::NamedTempFile::new().expect("temp file");
    let args = ["-f", "%U %S", "-o"].map(std::ffi::OsStr::new);
    let mut args = args.to_vec();
    args.push(report.path().as_os_str());
    let mut raw = RawClient::spawn(folders.serve_under(TIME, &args));
    let params = raw_params();
    let start = Instant::now();
    for _ in 0..calls {
        raw.call(&params, "9");
    }
    let wall = start.elapsed();
    drop(raw);
    let text = std::fs::read_to_string(report.path()).expect("the report of /usr/bin/time");
    // The report is the last line; a signal note may come before it.
    let seconds: Vec<f64> = text
        .lines()
        .last()?
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect();
    match seconds.as_slice() {
        [user, sys] => Some((Duration::from_secs_f64(user + sys), wall)),
        _ => {
            eprintln!("unexpected report from {TIME}: {text:?}");
            None
        }
    }
}

const TIME: &str = "/usr/bin/time";

fn cpu(folders: &Folders) {
    if !Path::new(TIME).exists() {
        eprintln!("{TIME} is missing (Debian: apt-get install time): no server CPU figure");
        return;
    }
    // The first start may compile the component into the cache; the figures are warm.
    let _ = server_cpu(folders, 0);
    let before = load_average();
    let Some((start, _)) = server_cpu(folders, 0) else {
        return;
    };
    let Some((total, wall)) = server_cpu(folders, CPU_CALLS) else {
        return;
    };
    let after = load_average();
    let per_call = total.saturating_sub(start) / CPU_CALLS as u32;
    let gross = total / CPU_CALLS as u32;
    println!(
        "mcp piton serve CPU (user+sys, {TIME}): {CPU_CALLS} raw calls {:.3} s in {:.3} s \
         ({:.1} µs of CPU per call with start and stop, {:.1} µs without); start and stop \
         alone {:.1} ms; load average before {before}, after {after}",
        total.as_secs_f64(),
        wall.as_secs_f64(),
        support::us(gross),
        support::us(per_call),
        support::ms(start),
    );
    record("mcp", "server_cpu_per_call", support::us(gross), "µs");
    record(
        "mcp",
        "server_cpu_per_call_net",
        support::us(per_call),
        "µs",
    );
    record("mcp", "server_cpu_start", support::ms(start), "ms");
}

/// `echo` served by piton and by server-everything, side by side.
fn against_everything() {
    let peers = support::peers();
    let bin = peers.join("node_modules/.bin");
    let everything = bin.join("mcp-server-everything");
    if !everything.exists() {
        eprintln!("{} is missing: no comparison with it", everything.display());
        return;
    }
    let echo = std::fs::read(piton_tests::guests::ECHO).expect("the echo guest is built");
    let folders = Folders::holding(&echo);
    let mut native = std::process::Command::new(&everything);
    native.arg("stdio");
    // Its `#!/usr/bin/env node` finds the Node.js the peers were installed with.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin];
    paths.extend(std::env::split_paths(&path));
    native.env("PATH", std::env::join_paths(paths).expect("a PATH"));
    let mut servers = [
        RawClient::spawn(folders.serve(&[])),
        RawClient::spawn(native),
    ];
    let params = json!({"name": "echo", "arguments": {"message": "hello"}}).to_string();
    let blocks = Blocks {
        warm_up: WARM_UP,
        block: 100,
        blocks: 20,
        pause: std::time::Duration::ZERO,
    };
    let run = side_by_side(&mut servers, &params, "Echo: hello", &blocks);
    let mut medians = Vec::new();
    for (name, summary) in ["piton", "everything"].into_iter().zip(&run.summaries) {
        let (median, p99) = (support::ms(summary.median()), support::ms(summary.p99()));
        println!(
            "mcp echo over stdio, {name}: {} calls: median {median:.4} ms, p99 {p99:.4} ms",
            blocks.block * blocks.blocks
        );
        record("mcp", &format!("echo_{name}_median"), median, "ms");
        record("mcp", &format!("echo_{name}_p99"), p99, "ms");
        medians.push(median);
    }
    if let [piton, native] = medians[..] {
        println!(
            "mcp echo: piton / server-everything = {:.2}; load average before {}, after {}",
            piton / native,
            run.load_before,
            run.load_after
        );
        record("mcp", "echo_ratio", piton / native, "x");
    }
}

criterion_group!(benches, bench);

fn main() {
    against_everything();
    cpu(&Folders::new());
    benches();
    Criterion::default().configure_from_args().final_summary();
}
