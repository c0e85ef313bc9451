//! The Go runtime under piton's fresh instance per call: a Go tool that allocates
//! about 2.4 MiB of garbage a call and collects it twice (with the call's arguments and
//! the answer being built still live) and answers a string of up to 128 KiB, called
//! 2000 times, answers every call exactly; so do calls whose arguments are
//! large (cabi_realloc's allocations, pinned until the call reads them), and a call
//! whose answer is larger than its memory limit allows traps instead of answering.

use piton_host::{Limits, Registry};
use serde_json::json;

use super::built;
use crate::support::*;

/// What the probe's churn answers: `size` bytes made from `seed`, then `|` and the echo.
fn expected(seed: u64, size: usize, echo: &str) -> String {
    let mut text: String = (0..size as u64)
        .map(|i| char::from(b'a' + ((seed * 31 + i * 7) % 26) as u8))
        .collect();
    text.push('|');
    text.push_str(echo);
    text
}

async fn probe(limits: Limits) -> Registry {
    let path = built("tests/lang/go/probe");
    registry_of(&[path.to_str().expect("a UTF-8 path")], limits).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_tool_that_churns_memory_answers_thousands_of_calls_exactly() {
    let registry = std::sync::Arc::new(probe(Limits::default()).await);
    // Two at a time, as a served registry would take them.
    let mut tasks = Vec::new();
    for lane in 0..2u64 {
        let registry = registry.clone();
        tasks.push(tokio::spawn(async move {
            for call in 0..1000u64 {
                let seed = lane * 1000 + call;
                // Sizes from 1 KiB to 128 KiB, and an echo that grows with them.
                let size = 1024 << (call % 8);
                let echo = format!("call {seed} ").repeat((call % 32) as usize + 1);
                let args = json!({"do": "churn", "seed": seed, "size": size, "echo": echo});
                let answer = call_ok(&registry, "go_probe", args).await;
                assert_eq!(answer.len(), 1, "call {seed}");
                assert!(
                    answer[0] == expected(seed, size, &echo),
                    "call {seed}: {} bytes differ from the expected {}",
                    answer[0].len(),
                    size + 1 + echo.len()
                );
            }
        }));
    }
    for task in tasks {
        task.await.expect("every call answered");
    }
}

#[tokio::test]
async fn a_go_tool_reads_large_arguments_and_answers_large_results() {
    let registry = probe(Limits::default()).await;
    // 4 MiB of arguments in, 8 MiB of answer out.
    let echo = "0123456789abcdef".repeat(1 << 18);
    let args = json!({"do": "churn", "seed": 7, "size": 8 << 20, "echo": echo});
    let answer = call_ok(&registry, "go_probe", args).await;
    assert!(
        answer[0] == expected(7, 8 << 20, &echo),
        "the large answer differs"
    );
}

#[tokio::test]
async fn a_go_answer_larger_than_the_memory_limit_traps_and_the_next_call_answers() {
    let registry = probe(Limits {
        memory: 16 << 20,
        ..Limits::default()
    })
    .await;
    let stopped = call_stops(
        &registry,
        "go_probe",
        json!({"do": "churn", "seed": 1, "size": 64 << 20}),
    )
    .await;
    assert!(stopped.contains("trapped"), "{stopped}");
    let answer = call_ok(
        &registry,
        "go_probe",
        json!({"do": "churn", "seed": 2, "size": 1000}),
    )
    .await;
    assert!(answer[0] == expected(2, 1000, ""));
}
