//! What every benchmark shares: timing summaries, the machine's load, and the record
//! the benchmark report reads.
//!
//! A bench includes it with `#[path = "support/mod.rs"] mod support;`. Each figure a
//! bench wants in the README's performance table goes through [`record`]: printed
//! always, and appended as one JSON line to the file `$PITON_BENCH_RECORD` names when
//! it is set (the report script sets it, then rewrites the table from those lines).

#![allow(dead_code, unreachable_pub)] // each bench uses a different part

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

/// The allocator the `piton` binary runs with (see host/src/main.rs), so that a bench
/// in process measures what piton does. The binary also turns off one of mimalloc's
/// options, which bears on resident memory; memory is measured on the binary
/// (start.rs), never in process.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod folders;
pub mod raw;
pub mod versus;

/// Sorted samples of one timed loop.
pub struct Summary {
    sorted: Vec<Duration>,
}

impl Summary {
    /// The summary of `samples` (any order).
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        Self { sorted: samples }
    }

    /// The sample at quantile `q` (0.5 is the median); zero when there are none.
    pub fn at(&self, q: f64) -> Duration {
        let last = self.sorted.len().saturating_sub(1);
        let index = ((self.sorted.len() as f64 * q) as usize).min(last);
        self.sorted.get(index).copied().unwrap_or_default()
    }

    /// The median.
    pub fn median(&self) -> Duration {
        self.at(0.5)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> Duration {
        self.at(0.99)
    }

    /// The mean.
    pub fn mean(&self) -> Duration {
        let n = u32::try_from(self.sorted.len().max(1)).unwrap_or(u32::MAX);
        self.sorted.iter().sum::<Duration>() / n
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }
}

/// The 1-minute load average, or NaN where it cannot be read.
pub fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The 1, 5 and 15-minute load averages as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Nanoseconds, for [`record`].
pub fn ns(d: Duration) -> f64 {
    d.as_secs_f64() * 1e9
}

/// Microseconds, for [`record`].
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Milliseconds, for [`record`].
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Records one figure: `bench` is the bench file's name, `key` names the figure
/// within it (stable: the report looks figures up by `bench/key`), `unit` is how
/// `value` is counted ("µs", "ms", "calls/s", "MiB", "x"...). Printed always;
/// appended to `$PITON_BENCH_RECORD` as a JSON line with the load average when set.
pub fn record(bench: &str, key: &str, value: f64, unit: &str) {
    let load = load();
    println!("{bench}/{key}: {value:.3} {unit} (load {load:.2})");
    let Some(path) = std::env::var_os("PITON_BENCH_RECORD") else {
        return;
    };
    let line = serde_json::json!({
        "bench": bench,
        "key": key,
        "value": value,
        "unit": unit,
        "load": load,
    });
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| writeln!(file, "{line}"));
    if let Err(error) = written {
        eprintln!(
            "cannot append to PITON_BENCH_RECORD {}: {error}",
            std::path::Path::new(&path).display()
        );
    }
}

/// The folder `tests/peers/install` puts the test peers in (the Python SDK's venv,
/// the npm packages, the guest toolchains), after running it (it returns at once
/// when they are there).
pub fn peers() -> std::path::PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target tmp folder has a parent")
        .to_path_buf();
    let peers = target.join("peers");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/install");
    let status = std::process::Command::new("bash")
        .arg(&script)
        .arg(&peers)
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!(
            "{} failed: Python and JavaScript will not build",
            script.display()
        );
    }
    peers
}

/// The test toolchains: `tests/peers/install` puts componentize-py and
/// componentize-js into `target/peers`.
pub fn toolchains() -> piton_host::build::Toolchains {
    let peers = peers();
    let target = peers
        .parent()
        .expect("target/peers has a parent")
        .to_path_buf();
    let bin = peers.join("node_modules/.bin");
    piton_host::build::Toolchains {
        python: Some(peers.join("venv/bin/python")),
        componentize_js: Some(bin.join("componentize-js")),
        node: Some(bin.join("node")),
        tsc: Some(bin.join("tsc")),
        esbuild: Some(bin.join("esbuild")),
        go: Some(peers.join("venv/bin/go")),
        cargo_target_dir: Some(target.join("lang-rust")),
        ..piton_host::build::Toolchains::from_env()
    }
}
