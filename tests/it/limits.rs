//! Host-side limits of one call: the resources it may hold in the host (handles and
//! the bytes behind them) and the file descriptors it may keep open. Each test runs
//! `piton serve` in a child process, so that the host's memory can be measured and
//! its descriptors used up without touching the test process.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use piton_tests::{guests, plugins};
use serde_json::{Value, json};

use crate::support::cache_dir;

/// How long any answer may take (debug builds, a loaded machine).
const ANSWER: Duration = Duration::from_secs(120);

/// `piton serve` over stdio in a child process.
struct Served {
    child: Child,
    /// `None` once closed ([`Served::finish`]).
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Answers read while waiting for another id.
    early: Vec<Value>,
}

impl Served {
    /// Serves copies of `files` with `config` as piton.toml, under a descriptor limit
    /// (soft and hard) of `nofile` when given.
    fn start(dir: &Path, files: &[(&str, &str)], config: &str, nofile: Option<u64>) -> Self {
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).expect("plugins folder");
        for (name, source) in files {
            std::fs::copy(source, plugins.join(name)).expect("copy a component");
        }
        let config_path = dir.join("piton.toml");
        std::fs::write(&config_path, config).expect("write piton.toml");
        let limit = nofile.map_or(String::new(), |n| format!("ulimit -n {n} && "));
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("{limit}exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_piton"))
            .args(["serve", "--approve", "never", "--plugins"])
            .arg(&plugins)
            .arg("--config")
            .arg(&config_path)
            .current_dir(dir)
            .env("PITON_CACHE_DIR", cache_dir())
            .env_remove("PITON_PLUGINS")
            .env_remove("PITON_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("piton serve starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str(&line)
                    && tx.send(value).is_err()
                {
                    break;
                }
            }
        });
        let mut served = Self {
            child,
            stdin: Some(stdin),
            lines,
            early: Vec::new(),
        };
        served.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "limits-test", "version": "0"}}}),
        );
        served.answer(0);
        served.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        served
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("piton serve reads");
        stdin.flush().expect("piton serve reads");
    }

    /// Closes stdin, as a client that is done does, and waits for piton to end; its
    /// exit status, or `None` if it has not ended within `ANSWER`.
    fn finish(&mut self) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        let deadline = Instant::now() + ANSWER;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("piton serve is a child") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    /// Starts a tools/call without waiting for its answer.
    fn call(&mut self, id: u64, name: &str, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
    }

    /// The answer to request `id`.
    fn answer(&mut self, id: u64) -> Value {
        if let Some(i) = self.early.iter().position(|a| a["id"] == id) {
            return self.early.remove(i);
        }
        let deadline = Instant::now() + ANSWER;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(value) if value["id"] == id => return value,
                Ok(value) if value.get("id").is_some() => self.early.push(value),
                Ok(_notification) => {}
                Err(RecvTimeoutError::Timeout) => panic!("no answer to request {id} in time"),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("piton serve ended before answering request {id}")
                }
            }
        }
    }

    /// The most memory the process has had resident so far, in bytes.
    fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("piton serve is running");
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmHWM in /proc/PID/status");
        kib * 1024
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tools/call answer: its error's message, or its content's text.
fn answer_text(answer: &Value) -> String {
    if let Some(message) = answer["error"]["message"].as_str() {
        return message.to_owned();
    }
    answer["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// How much more the host may hold at its peak while one call hoards: the call's own
/// bound (1024 handles of at most 64 KiB) and room for a debug build's noise. Today's
/// hoards of fields and bodies each need several hundred MiB without the limit.
const HOARD_RSS_BOUND: u64 = 128 << 20;

/// `piton serve` on `folder` with the hoard guest and counter beside it (the tool
/// that shows the host still answers), hoard configured by `config`.
fn hoard_beside_counter(folder: &std::path::Path, config: &str) -> Served {
    Served::start(
        folder,
        &[
            ("hoard.wasm", guests::HOSTILE_HOARD),
            ("counter.wasm", guests::HOSTILE_COUNTER),
        ],
        config,
        None,
    )
}

#[test]
fn hoarding_host_resources_fails_the_call_and_the_host_stays_small() {
    let mut failures = Vec::new();
    // (kind, count, bytes per item): each would hold far more than the bound, or
    // far more handles than the limit, if nothing stopped it.
    for (kind, count, size) in [
        ("fields", 10_000, 30_000),
        ("bodies", 400, 256 << 10),
        ("pollables", 100_000, 0),
        ("streams", 100_000, 0),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut served = hoard_beside_counter(dir.path(), "[tools.hoard]\ntimeout = \"100s\"\n");
        let before = served.peak_rss();
        served.call(
            1,
            "hoard",
            json!({"kind": kind, "count": count, "size": size, "path": "", "hold_ms": 300}),
        );
        let answer = served.answer(1);
        let grown = served.peak_rss().saturating_sub(before);
        let text = answer_text(&answer);
        eprintln!("{kind}: peak RSS grew by {} KiB; {text}", grown >> 10);
        if answer.get("error").is_none() || !text.contains("limit of 1024 host resources") {
            failures.push(format!(
                "{kind}: expected a trap naming the limit of 1024 host resources, got {answer}"
            ));
        }
        if grown > HOARD_RSS_BOUND {
            failures.push(format!(
                "{kind}: the host's peak RSS grew by {} MiB, over {} MiB",
                grown >> 20,
                HOARD_RSS_BOUND >> 20
            ));
        }
        served.call(2, "counter", json!({}));
        let next = served.answer(2);
        if answer_text(&next) != "1" {
            failures.push(format!("{kind}: the next call failed: {next}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The number at the start of "made N files, then ...".
fn made(text: &str) -> u64 {
    text.strip_prefix("made ")
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a hoard's answer: {text}"))
}

#[test]
fn tools_holding_descriptors_do_not_stop_another_from_opening_its_mount() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data folder");
    std::fs::write(data.join("x.txt"), "still readable").expect("data file");
    let mount = format!(
        "mounts = [{{ host = {:?}, guest = \"/data\", mode = \"read\" }}]\n",
        data.display().to_string()
    );
    let config = format!("[tools.hoard]\ntimeout = \"100s\"\n{mount}\n[tools.read_file]\n{mount}");
    // A process limit of 600 descriptors, soft and hard, as a small system has: two
    // hoarders that could each take them all, and a third tool that needs one. piton
    // shares the limit out, so each call gets its part and none can starve the rest.
    let mut served = Served::start(
        dir.path(),
        &[
            ("hoard.wasm", guests::HOSTILE_HOARD),
            ("read_file.wasm", plugins::READ_FILE),
        ],
        &config,
        Some(600),
    );
    let hoard = json!({"kind": "files", "count": 5000, "size": 0, "path": "/data/x.txt",
        "hold_ms": 4000});
    served.call(1, "hoard", hoard.clone());
    served.call(2, "hoard", hoard);
    // Both hoarders have opened all they can, and hold them.
    std::thread::sleep(Duration::from_millis(1500));
    served.call(3, "read_file", json!({"path": "/data/x.txt"}));
    let read = served.answer(3);
    assert_eq!(answer_text(&read), "still readable", "{read}");

    let mut total = 0;
    for id in [1, 2] {
        let answer = served.answer(id);
        let text = answer_text(&answer);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let n = made(&text);
        eprintln!("hoarder {id}: {text}");
        assert!(n <= 256, "a call kept {n} descriptors, over 256: {text}");
        total += n;
    }
    assert!(total > 0, "the hoarders opened nothing");
    // The next call works once they are gone.
    served.call(4, "read_file", json!({"path": "/data/x.txt"}));
    assert_eq!(answer_text(&served.answer(4)), "still readable");
}

#[test]
fn a_tool_creating_sockets_is_stopped_at_the_descriptor_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut served = Served::start(
        dir.path(),
        &[("hoard.wasm", guests::HOSTILE_HOARD)],
        "[tools.hoard]\ntimeout = \"100s\"\nnetwork = [{ host = \"127.0.0.1:9\", tcp = true }]\n",
        None,
    );
    served.call(
        1,
        "hoard",
        json!({"kind": "sockets", "count": 1000, "size": 0, "path": "", "hold_ms": 0}),
    );
    let answer = served.answer(1);
    let text = answer_text(&answer);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    // 256, or less where the process's open-file limit is low.
    let n = made(&text);
    assert!((16..=256).contains(&n), "{text}");
    assert!(text.contains("new-socket-limit"), "{text}");
}

/// How much the host's peak RSS may grow while a flood of 500 calls is answered: the
/// calls that run, and the answers and refusals in flight, in a debug build.
const FLOOD_RSS_BOUND: u64 = 96 << 20;

#[test]
fn a_flood_of_calls_past_the_queue_is_refused_as_busy_and_the_host_stays_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Two instances and eight waiting calls: of 500 calls sent at once, at most ten
    // are in flight; each holds its instance for 5 s, so the rest arrive while
    // those are taken and are refused at once.
    let mut served = hoard_beside_counter(
        dir.path(),
        "[runtime]\nmax_instances = 2\nmax_queued = 8\n\
         [tools.hoard]\ntimeout = \"100s\"\nopen_world = false\n",
    );
    let before = served.peak_rss();
    let slow = json!({"kind": "pollables", "count": 0, "size": 0, "path": "", "hold_ms": 5000});
    const FLOOD: u64 = 500;
    for id in 1..=FLOOD {
        served.call(id, "hoard", slow.clone());
    }
    let (mut answered, mut busy, mut other) = (0, 0, Vec::new());
    for id in 1..=FLOOD {
        let answer = served.answer(id);
        let text = answer_text(&answer);
        if answer.get("error").is_some() && text.contains("piton is busy") {
            assert!(
                text.contains("[runtime] max_instances and max_queued")
                    && text.contains("2 calls running and 8 waiting"),
                "{text}"
            );
            busy += 1;
        } else if text == "made 0 pollables" {
            answered += 1;
        } else {
            other.push(answer);
        }
    }
    let grown = served.peak_rss().saturating_sub(before);
    eprintln!(
        "{answered} answered, {busy} busy; peak RSS grew by {} KiB",
        grown >> 10
    );
    assert!(other.is_empty(), "neither an answer nor busy: {other:?}");
    assert!((1..=10).contains(&answered), "{answered} answered");
    assert_eq!(answered + busy, FLOOD);
    assert!(
        grown < FLOOD_RSS_BOUND,
        "peak RSS grew by {} MiB",
        grown >> 20
    );
    // Still serving, and a call gets in once the flood is over.
    served.call(FLOOD + 1, "counter", json!({}));
    assert_eq!(answer_text(&served.answer(FLOOD + 1)), "1");
}

/// A read mount holding a folder of `entries` names of 100 characters, as
/// piton.toml's `mounts` line for `/data`. Each is a hard link to one of a few empty
/// files (a file may have 65 000 links on ext4): making a link is far cheaper than
/// making a file.
fn huge_folder(dir: &Path, entries: usize) -> String {
    const LINKS_PER_FILE: usize = 50_000;
    let data = dir.join("data");
    let files = dir.join("files");
    std::fs::create_dir(&data).expect("data folder");
    std::fs::create_dir(&files).expect("files folder");
    for i in 0..entries {
        let file = files.join((i / LINKS_PER_FILE).to_string());
        if i % LINKS_PER_FILE == 0 {
            std::fs::File::create(&file).expect("a file");
        }
        std::fs::hard_link(&file, data.join(format!("{i:0>100}"))).expect("a link");
    }
    format!(
        "mounts = [{{ host = {:?}, guest = \"/data\", mode = \"read\" }}]\n",
        data.display().to_string()
    )
}

/// Every open listing holds at most a small part of its folder on the host: 16
/// listings (a call's most) of a folder of 240 000 names stay within the bound that
/// holds for every handle. wasmtime-wasi reads the whole folder when a listing
/// opens: here about 36 MiB a listing.
#[test]
fn listing_a_huge_folder_16_times_at_once_holds_little_on_the_host() {
    const ENTRIES: usize = 240_000;
    let dir = tempfile::tempdir().expect("temp dir");
    let mount = huge_folder(dir.path(), ENTRIES);
    let mut served = hoard_beside_counter(
        dir.path(),
        &format!("[tools.hoard]\ntimeout = \"100s\"\n{mount}"),
    );
    let before = served.peak_rss();
    served.call(
        1,
        "hoard",
        json!({"kind": "listings", "count": 16, "size": 0, "path": "/data", "hold_ms": 300}),
    );
    let answer = served.answer(1);
    let grown = served.peak_rss().saturating_sub(before);
    let text = answer_text(&answer);
    eprintln!("16 listings: peak RSS grew by {} KiB; {text}", grown >> 10);
    // Every name is listed, however the listing is read.
    assert_eq!(
        text,
        format!("made 16 listings, the first lists {ENTRIES}"),
        "{answer}"
    );
    assert!(
        grown < HOARD_RSS_BOUND,
        "the host's peak RSS grew by {} MiB, over {} MiB",
        grown >> 20,
        HOARD_RSS_BOUND >> 20
    );
    // A 17th listing is still refused.
    served.call(
        2,
        "hoard",
        json!({"kind": "listings", "count": 17, "size": 0, "path": "/data", "hold_ms": 0}),
    );
    let text = answer_text(&served.answer(2));
    assert!(
        text.starts_with("made 16 listings") && text.ends_with("insufficient-memory"),
        "{text}"
    );
    served.call(3, "counter", json!({}));
    assert_eq!(answer_text(&served.answer(3)), "1");
}

/// Opening a named pipe waits for a writer, for ever: the thread that opens it would
/// be lost, and piton could not end. Only files and folders are opened; a pipe (or
/// socket or device) in a mount is refused at once.
#[test]
fn a_named_pipe_in_a_mount_is_refused_rather_than_waited_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data folder");
    let fifo = data.join("pipe");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let mount = format!(
        "mounts = [{{ host = {:?}, guest = \"/data\", mode = \"read\" }}]\n",
        data.display().to_string()
    );
    let mut served = hoard_beside_counter(
        dir.path(),
        &format!("[tools.hoard]\ntimeout = \"10s\"\n{mount}"),
    );
    let mut failures = Vec::new();
    served.call(
        1,
        "hoard",
        json!({"kind": "files", "count": 1, "size": 0, "path": "/data/pipe", "hold_ms": 0}),
    );
    let answer = served.answer(1);
    let text = answer_text(&answer);
    if answer["result"]["isError"] != true || !text.starts_with("made 0 files, then files #0") {
        failures.push(format!(
            "expected the open to fail in the guest, got {answer}"
        ));
    }
    served.call(2, "counter", json!({}));
    let next = served.answer(2);
    if answer_text(&next) != "1" {
        failures.push(format!("the next call failed: {next}"));
    }
    let status = served.finish();
    if status.is_none_or(|s| !s.success()) {
        failures.push(format!(
            "piton did not end normally once stdin closed: {status:?}"
        ));
    }
    // Lets an open that waits go, so the process can end (old code).
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(&fifo);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `get-random-bytes` returns its bytes as one list, made on the host before it is
/// copied in: a request is capped (1 MiB), so a guest cannot make the host allocate
/// 64 MiB (wasmtime-wasi's cap) per call. A request over it traps, naming the cap
/// (that the host allocates nothing is `wasm::sandbox`'s unit test).
#[test]
fn a_huge_random_request_traps_before_the_host_allocates_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut served = hoard_beside_counter(dir.path(), "[tools.hoard]\ntimeout = \"100s\"\n");
    let random =
        |size: u32| json!({"kind": "random", "count": 1, "size": size, "path": "", "hold_ms": 0});
    // Up to the cap, a request is answered.
    served.call(1, "hoard", random(1 << 20));
    assert_eq!(answer_text(&served.answer(1)), "made 1 random");
    served.call(2, "hoard", random(64 << 20));
    let answer = served.answer(2);
    let text = answer_text(&answer);
    assert!(answer.get("error").is_some(), "a trap: {answer}");
    assert!(text.contains("exceeds limit 1048576"), "{text}");
    served.call(3, "counter", json!({}));
    assert_eq!(answer_text(&served.answer(3)), "1");
}
