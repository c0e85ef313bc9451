//! The C SDK's JSON reader (guest-sdk/c/piton_json.c) fuzzed against serde_json, the
//! parser the host checks arguments with: compiled natively by clang with the address
//! and undefined-behaviour sanitizers (tests/c/json_harness.c), it gets random bytes,
//! mutations of valid documents, generated documents and deep nesting, and must accept
//! exactly what serde_json accepts, with the same values, and never crash.
//! `PITON_FUZZ_CASES=N` runs more cases than the default.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::peers::repo_root;

/// A small deterministic generator (xorshift64*), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The harness, built once into the test's temporary folder.
fn harness() -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("piton-json-harness");
    let root = repo_root();
    let clang = std::env::var_os("PITON_CLANG").unwrap_or_else(|| "clang".into());
    let built = Command::new(clang)
        .args([
            "-O1",
            "-g",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-Wall",
            "-Werror",
            "-I",
        ])
        .arg(root.join("guest-sdk/c"))
        .arg(root.join("tests/c/json_harness.c"))
        .arg(root.join("guest-sdk/c/piton_json.c"))
        .arg("-lm")
        .arg("-o")
        .arg(&out)
        .output()
        .expect("clang runs (apt-get install -y clang)");
    assert!(
        built.status.success(),
        "the harness builds (the sanitizers' runtime: apt-get install -y libclang-rt-dev): {}",
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

/// Pieces that make JSON interesting: structure, escapes, numbers, bad UTF-8.
const PIECES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"\"",
    b"\\",
    b" ",
    b"\n",
    b"\t",
    b"\r",
    b"\x0c",
    b"0",
    b"1",
    b"-",
    b"+",
    b".",
    b"e",
    b"E",
    b"00",
    b"-0",
    b"1e400",
    b"1e-400",
    b"9007199254740993",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"true",
    b"false",
    b"null",
    b"tru",
    b"\\u",
    b"\\u0000",
    b"\\ud800",
    b"\\udc00",
    b"\\ud83d\\ude00",
    b"\\uD834\\uDD1E",
    b"\\x",
    b"\\/",
    b"\\b",
    b"\\'",
    b"\x00",
    b"\x1f",
    b"\x7f",
    b"\xc0\x80",
    b"\xc3\xa9",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf0\x9f\x98\x80",
    b"\xf4\x90\x80\x80",
    b"\xf8",
    b"\xff",
    b"\xef\xbb\xbf",
    b"\"a\"",
    b"\"a\":1",
    b"[]",
    b"{}",
    b"[[",
    b"]]",
];

/// A random document, as serde_json writes it.
fn document(rng: &mut Rng, depth: usize) -> Value {
    let kinds = if depth > 4 { 5 } else { 7 };
    match rng.below(kinds) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => {
            let numbers = [
                serde_json::json!(0),
                serde_json::json!(-1),
                serde_json::json!(rng.next() as i64),
                serde_json::json!(rng.next()),
                serde_json::json!((rng.next() as f64) / 1e7),
                serde_json::json!(-1.5e-300),
                serde_json::json!(1.7976931348623157e308),
                serde_json::json!(5e-324),
            ];
            rng.pick(&numbers).clone()
        }
        3 | 4 => {
            let chars = [
                'a', 'é', '😀', '"', '\\', '\n', '\u{0}', '\u{1f}', '\u{ffff}', '/', ' ',
            ];
            let len = rng.below(8);
            Value::String((0..len).map(|_| *rng.pick(&chars)).collect())
        }
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| document(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let keys = ["a", "b", "", "é", "a\u{0}b", "k"];
            Value::Object(
                (0..rng.below(4))
                    .map(|_| (rng.pick(&keys).to_string(), document(rng, depth + 1)))
                    .collect(),
            )
        }
    }
}

/// `bytes` changed in a few random places.
fn mutate(rng: &mut Rng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..=rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(5) {
            0 if at < bytes.len() => bytes[at] ^= 1 << rng.below(8),
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 => bytes.truncate(at),
            3 if at < bytes.len() => {
                let end = (at + rng.below(8)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
            _ => {
                let piece = rng.pick(PIECES);
                bytes.splice(at..at, piece.iter().copied());
            }
        }
    }
    bytes
}

/// Every case: fixed edge cases, deep nesting, generated and mutated documents, and
/// random bytes and pieces.
fn cases(count: usize) -> Vec<Vec<u8>> {
    let mut cases: Vec<Vec<u8>> = [
        "",
        " ",
        "0",
        "-0",
        "01",
        "1.",
        ".5",
        "+1",
        "1e",
        "1E+2",
        "1e400",
        "-1e400",
        "1e-400",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\ud83d\\ude00\"",
        "\"\\u00e9\"",
        "{\"a\":1,\"a\":2}",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "nul",
        "truex",
        "\"a\"x",
        "\u{feff}1",
        "{\"a\" 1}",
        "{1:1}",
        "[\"\t\"]",
        "\"\\\u{7f}\"",
        "  [ ]  ",
        "\"\u{0}\"",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    for depth in [1, 126, 127, 128, 129, 10_000] {
        cases.push([b"[".repeat(depth), b"]".repeat(depth)].concat());
        cases.push([b"{\"a\":".repeat(depth), b"1".to_vec(), b"}".repeat(depth)].concat());
        cases.push(b"[".repeat(depth));
    }
    cases.push(format!("[{}]", "1,".repeat(100_000) + "1").into_bytes());
    cases.push(format!("{}1", "0".repeat(5_000)).into_bytes());
    cases.push(format!("1{}", "0".repeat(400)).into_bytes());
    cases.push(format!("0.{}1", "0".repeat(400)).into_bytes());
    let seed = std::env::var("PITON_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_C0DE_u64);
    let mut rng = Rng(seed);
    while cases.len() < count {
        let valid = serde_json::to_vec(&document(&mut rng, 0)).expect("a document serializes");
        let case = match rng.below(6) {
            0 => valid,
            1 => (0..rng.below(16))
                .map(|_| (rng.next() & 0xff) as u8)
                .collect(),
            2 => (0..rng.below(6))
                .flat_map(|_| rng.pick(PIECES).to_vec())
                .collect(),
            _ => mutate(&mut rng, valid),
        };
        cases.push(case);
    }
    cases
}

/// `value` with every number as an f64, which is what the reader keeps.
fn as_f64(value: &Value) -> Value {
    match value {
        Value::Number(n) => serde_json::json!(n.as_f64().expect("a finite number")),
        Value::Array(items) => Value::Array(items.iter().map(as_f64).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn the_c_json_reader_accepts_what_serde_json_accepts_with_the_same_values() {
    let count = std::env::var("PITON_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30_000);
    let cases = cases(count);
    let mut input = Vec::new();
    for case in &cases {
        let len = u32::try_from(case.len()).expect("a case under 4 GiB");
        input.extend_from_slice(&len.to_le_bytes());
        input.extend_from_slice(case);
    }
    let mut child = Command::new(harness())
        .env("ASAN_OPTIONS", "detect_leaks=1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the harness runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("the harness ends");
    writer
        .join()
        .expect("the writer ends")
        .expect("the harness reads every case");
    assert!(
        out.status.success(),
        "the harness crashed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&[u8]> = out.stdout.split(|&b| b == b'\n').collect();
    assert_eq!(lines.len(), cases.len() + 1, "one line per case");
    let mut accepted = 0;
    for (case, line) in cases.iter().zip(lines) {
        let expected = serde_json::from_slice::<Value>(case).ok();
        let got = (line != b"ERR").then(|| {
            serde_json::from_slice::<Value>(line).unwrap_or_else(|e| {
                panic!(
                    "the harness printed bad JSON for {:?}: {e}: {}",
                    String::from_utf8_lossy(case),
                    String::from_utf8_lossy(line)
                )
            })
        });
        assert_eq!(
            got.as_ref().map(as_f64),
            expected.as_ref().map(as_f64),
            "the reader and serde_json differ on {:?} ({case:?})",
            String::from_utf8_lossy(case)
        );
        accepted += usize::from(got.is_some());
    }
    // Both kinds are well represented.
    assert!(
        accepted > cases.len() / 5 && accepted < cases.len() * 4 / 5,
        "{accepted} of {} accepted",
        cases.len()
    );
}
