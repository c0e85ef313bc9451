//! Instances made ahead of calls: after a call, piton makes the next instance in the
//! background, so the next call does not wait for one. Each call must still run in an
//! instance nobody used, with its own grants and its own deadline. (A call may ask
//! `hints-for` in an instance of its own first, so the counts are at least, not exact.)

use std::time::{Duration, Instant};

use piton_host::grants::Grants;
use piton_host::wasm::MadeAhead;
use piton_host::{Limits, Registry};
use piton_tests::guests;
use serde_json::json;

use crate::support::*;

/// A registry of the one component at `path` under `grants` and `limits`, and the
/// counts of its instances made ahead.
async fn one(path: &str, grants: Grants, limits: Limits) -> (Registry, MadeAhead) {
    let tool = with_settings(load(path).await, grants, limits);
    // Instances are made ahead of optimised code only.
    runtime().optimised().await;
    let ahead = tool.made_ahead();
    let mut registry = Registry::new();
    registry.add(tool).expect("one tool");
    (registry, ahead)
}

/// Waits until at least `n` instances were made ahead (they are made in the
/// background after a call).
async fn made(ahead: &MadeAhead, n: u64) {
    let since = Instant::now();
    while ahead.made() < n {
        assert!(
            since.elapsed() < ANSWER,
            "no instance made ahead: {ahead:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn an_instance_made_ahead_holds_nothing_of_the_call_before() {
    let (registry, ahead) = one(
        guests::HOSTILE_COUNTER,
        Grants::default(),
        Limits::default(),
    )
    .await;
    for round in 1..=3 {
        assert_eq!(call_ok(&registry, "counter", json!({})).await, ["1"]);
        made(&ahead, round).await;
    }
    assert!(ahead.taken() >= 2, "{ahead:?}");
}

#[tokio::test]
async fn an_instance_made_ahead_gets_the_calls_own_grants() {
    let grants = Grants {
        env: vec![("GREETING".into(), "hello".into())],
        ..Grants::default()
    };
    let (registry, ahead) = one(guests::HOSTILE_READ_ENV, grants, Limits::default()).await;
    let first = call_ok(&registry, "read_env", json!({})).await;
    made(&ahead, 1).await;
    let second = call_ok(&registry, "read_env", json!({})).await;
    assert!(ahead.taken() >= 1, "{ahead:?}");
    assert_eq!(first, second);
    let seen: serde_json::Value = serde_json::from_str(&second[0]).expect("JSON");
    assert_eq!(seen["env"], json!([["GREETING", "hello"]]), "{seen}");
}

#[tokio::test]
async fn an_instance_made_ahead_runs_to_the_calls_own_deadline() {
    let limits = Limits {
        timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let (counter, ahead) = one(guests::HOSTILE_COUNTER, Grants::default(), limits).await;
    assert_eq!(call_ok(&counter, "counter", json!({})).await, ["1"]);
    made(&ahead, 1).await;
    // Made more than its deadline ago: the call still has its whole deadline.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(call_ok(&counter, "counter", json!({})).await, ["1"]);
    assert!(ahead.taken() >= 1, "{ahead:?}");

    // And an endless loop in one is stopped at its deadline.
    let (spin, ahead) = one(guests::HOSTILE_SPIN, Grants::default(), limits).await;
    for round in 1..=2 {
        let message = call_stops(&spin, "spin", json!({})).await;
        assert!(
            message.contains("tool `spin` exceeded its deadline of 300ms"),
            "{message}"
        );
        made(&ahead, round).await;
    }
    assert!(ahead.taken() >= 1, "{ahead:?}");
}

/// A component whose instantiation asks the host nothing (JavaScript's, as Rust's
/// above) is made ahead; one whose start code asks it something never is: a C tool's
/// (the preview1 adapter takes its stdin, stdout and stderr streams, handles in a
/// store a call's sandbox would replace) and a Go tool's (its runtime reads its
/// folders and environment; see
/// lang::go::a_go_tool_sees_its_grants_on_every_call_though_its_runtime_reads_them_at_start).
#[tokio::test]
async fn only_components_that_ask_the_host_nothing_when_instantiated_are_made_ahead() {
    use piton_host::Tool as _;
    let cases = [
        (
            "plugins/text-js",
            "word_count",
            json!({"text": "a b"}),
            true,
        ),
        (
            "plugins/tally-c",
            "tally",
            json!({"path": "/data/notes.txt"}),
            false,
        ),
        (
            "tests/lang/go/probe",
            "go_probe",
            json!({"do": "done"}),
            false,
        ),
    ];
    for (source, name, args, ahead_expected) in cases {
        let path = crate::lang::built(source);
        let tools = runtime()
            .load(piton_host::wasm::LoadFrom::File(path), None)
            .await
            .unwrap_or_else(|e| panic!("{source} loads: {e}"));
        let tool = tools
            .into_iter()
            .find(|t| t.spec().name == name)
            .expect("the tool");
        let ahead = tool.made_ahead();
        let mut registry = Registry::new();
        registry.add(tool).expect("one tool");
        // Whatever they answer, calls are what make the next instances ahead.
        for _ in 0..3 {
            let _ = registry.call(name, args.clone()).await;
        }
        if ahead_expected {
            made(&ahead, 1).await;
        } else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(ahead.taken(), 0, "{source}: {ahead:?}");
        }
    }
}
