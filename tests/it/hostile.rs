//! Hostile guests: each is denied, and the host lives on to serve the next call.

use std::time::Duration;

use piton_host::{Args, Hints, Limits, ToolError};
use piton_tests::guests;
use serde_json::json;

use crate::support::*;

fn quick(timeout_ms: u64) -> Limits {
    Limits {
        timeout: Duration::from_millis(timeout_ms),
        ..Limits::default()
    }
}

#[tokio::test]
async fn reading_etc_passwd_is_denied() {
    let registry = registry_of(&[guests::HOSTILE_READ_PASSWD], Limits::default()).await;
    let ToolError::Failed(message) = call_error(&registry, "read_passwd", json!({})).await else {
        panic!("expected a failure");
    };
    assert!(!message.contains("root:"), "{message}");
    assert!(message.contains("/etc/passwd"), "{message}");
    assert_host_alive().await;
}

#[tokio::test]
async fn connecting_to_a_local_listener_is_denied() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let registry = registry_of(&[guests::HOSTILE_CONNECT], Limits::default()).await;
    let ToolError::Failed(message) = call_error(&registry, "connect", json!({"port": port})).await
    else {
        panic!("expected a failure");
    };
    assert!(message.contains("connect:"), "{message}");
    assert!(
        !message.contains("resolved localhost"),
        "name lookup must be denied: {message}"
    );
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener must see no connection: {accepted:?}"
    );
    assert_host_alive().await;
}

#[tokio::test]
async fn an_endless_loop_is_stopped_at_its_deadline() {
    let registry = registry_of(&[guests::HOSTILE_SPIN], quick(200)).await;
    let message = call_stops(&registry, "spin", json!({})).await;
    assert!(
        message.contains("tool `spin` exceeded its deadline of 200ms"),
        "{message}"
    );
    assert_host_alive().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_endless_loops_do_not_starve_other_calls() {
    let registry = std::sync::Arc::new(
        registry_of(
            &[guests::HOSTILE_SPIN, guests::HOSTILE_COUNTER],
            quick(3000),
        )
        .await,
    );
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let registry = registry.clone();
            tokio::spawn(async move { registry.call("spin", json!({})).await })
        })
        .collect();
    // Let both spinners occupy the two worker threads.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(call_ok(&registry, "counter", json!({})).await, ["1"]);
    assert!(
        spinners.iter().all(|s| !s.is_finished()),
        "the other call must finish while both loops still run"
    );
    for spinner in spinners {
        let result = spinner.await.unwrap();
        assert!(
            matches!(result, Err(piton_host::CallError::Trap { .. })),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn allocating_a_gibibyte_hits_the_memory_limit() {
    let registry = registry_of(&[guests::HOSTILE_ALLOC], Limits::default()).await;
    let message = call_stops(&registry, "alloc", json!({})).await;
    assert!(
        message.contains("tool `alloc` exceeded its memory limit of 64 MiB"),
        "{message}"
    );
    assert_host_alive().await;
}

#[tokio::test]
async fn a_guest_past_its_stack_traps_and_says_so() {
    let registry = registry_of(&[guests::HOSTILE_DEEP], Limits::default()).await;
    // 128 KiB of its 256 KiB stack (piton's Rust guests' stack size) answers.
    assert_eq!(
        call_ok(&registry, "deep", json!({"kib": 128})).await,
        ["128"]
    );
    // 512 KiB would have fit Rust's default of 1 MiB; here it runs off the stack,
    // which traps (the stack lies first in memory), and the message says why.
    let message = call_stops(&registry, "deep", json!({"kib": 512})).await;
    assert!(message.contains("tool `deep` trapped"), "{message}");
    assert!(
        message.contains("most likely it ran out of stack"),
        "{message}"
    );
    // The next call runs in a fresh instance, as before.
    assert_eq!(call_ok(&registry, "deep", json!({"kib": 1})).await, ["1"]);
    assert_host_alive().await;
}

#[tokio::test]
async fn a_panic_traps_with_its_message() {
    let registry = registry_of(&[guests::HOSTILE_PANIC], Limits::default()).await;
    let message = call_stops(&registry, "panic", json!({})).await;
    assert!(message.contains("tool `panic` trapped"), "{message}");
    assert!(
        message.contains("the guest panicked on purpose"),
        "{message}"
    );
    assert_host_alive().await;
}

#[tokio::test]
async fn flooding_stdout_is_captured_and_bounded() {
    let registry = registry_of(&[guests::HOSTILE_FLOOD_STDOUT], Limits::default()).await;
    assert_eq!(
        call_ok(&registry, "flood_stdout", json!({})).await,
        ["flooded"]
    );
    assert_host_alive().await;
}

#[tokio::test]
async fn a_hundred_mebibytes_of_text_cannot_be_returned() {
    let registry = registry_of(&[guests::HOSTILE_BIG_OUTPUT], Limits::default()).await;
    let message = call_stops(&registry, "big_output", json!({})).await;
    assert!(message.contains("memory limit of 64 MiB"), "{message}");
    // Within the memory limit but over the output limit.
    let message = call_stops(&registry, "big_output", json!({"mib": 20})).await;
    assert!(
        message.contains("over its output limit of 16 MiB"),
        "{message}"
    );
    assert_host_alive().await;
}

#[tokio::test]
async fn a_trap_inside_hints_for_stops_the_run() {
    let registry = registry_of(&[guests::HOSTILE_HINTS_TRAP], Limits::default()).await;
    let message = call_stops(&registry, "hints_trap", json!({})).await;
    assert!(
        message.contains("hints-for panicked on purpose"),
        "{message}"
    );
    assert_host_alive().await;
}

#[tokio::test]
async fn wider_hints_for_answers_are_clamped_to_the_tool_hints() {
    let registry = registry_of(&[guests::HOSTILE_HINTS_WIDER], Limits::default()).await;
    let tool_hints = registry.get("hints_wider").unwrap().hints();
    assert_eq!(
        tool_hints,
        Hints::worst().destructive(false).open_world(false)
    );
    let call_hints = registry
        .hints_for("hints_wider", &Args::new())
        .await
        .unwrap();
    assert_eq!(call_hints, tool_hints);
    assert_eq!(
        call_ok(&registry, "hints_wider", json!({})).await,
        ["hello"]
    );
}

#[tokio::test]
async fn nothing_survives_between_calls() {
    let registry = registry_of(&[guests::HOSTILE_COUNTER], Limits::default()).await;
    for _ in 0..3 {
        assert_eq!(call_ok(&registry, "counter", json!({})).await, ["1"]);
    }
}

#[tokio::test]
async fn the_guest_sees_no_environment_arguments_or_stdin() {
    let registry = registry_of(&[guests::HOSTILE_READ_ENV], Limits::default()).await;
    let seen: serde_json::Value =
        serde_json::from_str(&call_ok(&registry, "read_env", json!({})).await[0]).unwrap();
    assert_eq!(seen["env"], json!([]), "{seen}");
    assert_eq!(seen["args"], json!([]), "{seen}");
    assert_eq!(seen["stdin"], json!(""), "{seen}");
}
