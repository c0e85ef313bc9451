//! A cold start: a component the compile cache lacks is compiled at load by the
//! baseline compiler (Winch), its specs read and its calls answered on that code,
//! while Cranelift compiles it in the background; then its tools move to the
//! optimised code, which the cache keeps. Each test holds the optimised compiles back
//! until it lets them go, so what it sees before is an order of events, not a race.

use std::path::Path;

use piton_host::loader::Loader;
use piton_host::plugins::PluginsAt;
use piton_host::serve::Served;
use piton_host::wasm::{Compiles, LoadFrom, RuntimeConfig, WasmRuntime, WasmTool};
use piton_host::{Limits, Registry};
use piton_tests::{guests, plugins};
use serde_json::json;

use crate::mcp_client::{Client, tool_names};
use crate::pins::{entries, sha256_of};
use crate::support::*;

/// A runtime of its own whose compile cache, in `cache`, starts empty.
fn cold_runtime(cache: &Path) -> WasmRuntime {
    WasmRuntime::new(RuntimeConfig {
        cache_dir: Some(cache.to_path_buf()),
        ..RuntimeConfig::default()
    })
    .expect("the runtime starts")
}

async fn load_on(runtime: &WasmRuntime, path: &str) -> Vec<WasmTool> {
    runtime
        .load(LoadFrom::File(path.into()), None)
        .await
        .unwrap_or_else(|e| panic!("{path} loads: {e}"))
}

/// Optimised compiles asked for and done, and baseline compiles done.
pub(crate) fn counts(runtime: &WasmRuntime) -> (u32, u32, u32) {
    let Compiles {
        asked,
        done,
        baseline,
    } = runtime.compiles();
    (asked, done, baseline)
}

fn registry(tools: impl IntoIterator<Item = WasmTool>) -> Registry {
    let mut registry = Registry::new();
    for tool in tools {
        registry.add(tool).expect("a tool of its own name");
    }
    registry
}

#[tokio::test]
async fn a_tool_answers_on_baseline_code_then_on_its_optimised_code_which_is_cached() {
    let cache = tempfile::tempdir().expect("dir");
    let runtime = cold_runtime(cache.path());
    let held = runtime.hold_optimising();
    let tool = only(load_on(&runtime, plugins::WORD_COUNT).await);
    assert!(!tool.optimised(), "no optimised compile has run yet");
    assert_eq!(counts(&runtime), (1, 0, 1));
    assert!(
        entries(cache.path()).is_empty(),
        "baseline code is not cached"
    );
    let registry = registry([tool]);
    assert_eq!(
        call_ok(&registry, "word_count", json!({"text": "a b c"})).await,
        ["3"]
    );

    drop(held);
    runtime.optimised().await;
    assert_eq!(counts(&runtime), (1, 1, 1));
    let cached = entries(cache.path());
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert!(
        cached[0].starts_with(&sha256_of(plugins::WORD_COUNT)),
        "{cached:?}"
    );
    assert_eq!(
        call_ok(&registry, "word_count", json!({"text": "a b c d"})).await,
        ["4"]
    );

    // The next load takes it from the cache: optimised at once, nothing compiled.
    let again = only(load_on(&runtime, plugins::WORD_COUNT).await);
    assert!(again.optimised());
    assert_eq!(runtime.compiles().asked, 1);
}

#[tokio::test]
async fn a_toolbox_and_a_plugin_answer_the_same_before_and_after_their_optimised_compile() {
    let cache = tempfile::tempdir().expect("dir");
    let runtime = cold_runtime(cache.path());
    let held = runtime.hold_optimising();
    let mut tools = load_on(&runtime, guests::TOOLBOX_NOTES).await;
    tools.extend(load_on(&runtime, guests::HOSTILE_COUNTER).await);
    assert!(tools.iter().all(|tool| !tool.optimised()));
    let registry = registry(tools);
    assert_eq!(registry.names(), ["count", "counter", "wipe"]);
    let before = (
        // Nothing granted: the toolbox's own error, the same on either code.
        format!("{:?}", registry.call("count", json!({})).await),
        call_ok(&registry, "counter", json!({})).await,
        registry
            .hints_for(
                "wipe",
                json!({"dry_run": true}).as_object().expect("an object"),
            )
            .await
            .expect("asks"),
    );
    drop(held);
    runtime.optimised().await;
    assert_eq!(counts(&runtime), (2, 2, 2));
    let after = (
        // Nothing granted: the toolbox's own error, the same on either code.
        format!("{:?}", registry.call("count", json!({})).await),
        call_ok(&registry, "counter", json!({})).await,
        registry
            .hints_for(
                "wipe",
                json!({"dry_run": true}).as_object().expect("an object"),
            )
            .await
            .expect("asks"),
    );
    assert_eq!(before, after);
    // A fresh instance each call, on either code.
    assert_eq!(before.1, ["1"]);
}

#[tokio::test]
async fn a_deadline_stops_a_guest_running_baseline_code() {
    let cache = tempfile::tempdir().expect("dir");
    let runtime = cold_runtime(cache.path());
    let _held = runtime.hold_optimising();
    let tool = only(load_on(&runtime, guests::HOSTILE_SPIN).await);
    assert!(!tool.optimised());
    let limits = Limits {
        timeout: std::time::Duration::from_millis(200),
        ..Limits::default()
    };
    let registry = registry([with_settings(tool, Default::default(), limits)]);
    let stopped = call_stops(&registry, "spin", json!({})).await;
    assert!(stopped.contains("deadline"), "{stopped}");
}

#[tokio::test]
async fn the_optimised_code_is_compiled_from_the_bytes_checked_at_load() {
    // The file is replaced after its load: what is compiled and cached is what was
    // hashed and read, never the file as it is later.
    let cache = tempfile::tempdir().expect("dir");
    let runtime = cold_runtime(cache.path());
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let file = folder.path().join("word_count.wasm");
    let held = runtime.hold_optimising();
    let tool = only(
        runtime
            .load(LoadFrom::File(file.clone()), None)
            .await
            .expect("loads"),
    );
    std::fs::copy(guests::HOSTILE_COUNTER, &file).expect("replace the file");
    drop(held);
    runtime.optimised().await;
    assert!(tool.optimised());
    let registry = registry([tool]);
    assert_eq!(
        call_ok(&registry, "word_count", json!({"text": "x y"})).await,
        ["2"]
    );
    let cached = entries(cache.path());
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert!(
        cached[0].starts_with(&sha256_of(plugins::WORD_COUNT)),
        "{cached:?}"
    );
}

#[tokio::test]
async fn tools_list_is_answered_before_any_optimised_compile_has_finished() {
    let cache = tempfile::tempdir().expect("dir");
    let runtime = cold_runtime(cache.path());
    let folder = plugins_folder(&[
        ("word_count.wasm", plugins::WORD_COUNT),
        ("counter.wasm", guests::HOSTILE_COUNTER),
        ("notes.wasm", guests::TOOLBOX_NOTES),
    ]);
    let held = runtime.hold_optimising();
    let loader = Loader::new(runtime.clone(), PluginsAt::Folder(folder.path().into()));
    let loaded = loader.load().await.expect("the folder loads");
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut client = Client::over(Served::new(loaded.registry));
    client.initialize().await;
    let listed = client.request(1, "tools/list", json!({})).await;
    assert_eq!(
        tool_names(&listed),
        ["count", "counter", "wipe", "word_count"]
    );
    // Answered, and called, while all three compiles wait.
    assert_eq!(counts(&runtime), (3, 0, 3));
    let answer = client
        .call(2, "word_count", json!({"text": "one two"}))
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");

    drop(held);
    runtime.optimised().await;
    assert_eq!(counts(&runtime), (3, 3, 3));
    let answer = client
        .call(3, "word_count", json!({"text": "one two three"}))
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");
    assert_eq!(
        tool_names(&client.request(4, "tools/list", json!({})).await),
        tool_names(&listed),
        "the same tools, the same specs"
    );
    assert_eq!(
        client.request(5, "tools/list", json!({})).await["result"],
        listed["result"]
    );
    assert_eq!(entries(cache.path()).len(), 3);
    client.close().await;
}

#[tokio::test]
async fn a_component_loaded_again_before_its_optimised_compile_shares_that_compile() {
    let cache = tempfile::tempdir().expect("dir");
    let runtime = cold_runtime(cache.path());
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let held = runtime.hold_optimising();
    let loader = Loader::new(runtime.clone(), PluginsAt::Folder(folder.path().into()));
    let first = loader.load().await.expect("loads");
    let second = loader.load().await.expect("loads again");
    assert_eq!(counts(&runtime), (1, 0, 1));
    drop(held);
    runtime.optimised().await;
    for loaded in [first, second] {
        assert_eq!(
            call_ok(&loaded.registry, "word_count", json!({"text": "a"})).await,
            ["1"]
        );
    }
    assert_eq!(counts(&runtime), (1, 1, 1));
}

/// Baseline code is held by the same sandbox as optimised code: the same memory
/// limit, stack, filesystem, network and environment (one linker and one pool
/// configuration serve both engines; Winch emits its own bounds checks).
#[tokio::test]
async fn the_sandbox_holds_guests_running_baseline_code() {
    let cache = tempfile::tempdir().expect("dir");
    let runtime = cold_runtime(cache.path());
    let _held = runtime.hold_optimising();
    let mut tools = Vec::new();
    for path in [
        guests::HOSTILE_ALLOC,
        guests::HOSTILE_DEEP,
        guests::HOSTILE_READ_PASSWD,
        guests::HOSTILE_READ_ENV,
        guests::HOSTILE_CONNECT,
    ] {
        let tool = only(load_on(&runtime, path).await);
        assert!(!tool.optimised(), "{path} runs baseline code");
        tools.push(with_settings(tool, Default::default(), Limits::default()));
    }
    let registry = registry(tools);

    let message = call_stops(&registry, "alloc", json!({})).await;
    assert!(
        message.contains("tool `alloc` exceeded its memory limit of 64 MiB"),
        "{message}"
    );
    let message = call_stops(&registry, "deep", json!({"kib": 512})).await;
    assert!(message.contains("tool `deep` trapped"), "{message}");
    assert_eq!(call_ok(&registry, "deep", json!({"kib": 1})).await, ["1"]);

    let piton_host::ToolError::Failed(message) =
        call_error(&registry, "read_passwd", json!({})).await
    else {
        panic!("reading /etc/passwd fails");
    };
    assert!(!message.contains("root:"), "{message}");

    let seen: serde_json::Value =
        serde_json::from_str(&call_ok(&registry, "read_env", json!({})).await[0]).expect("json");
    assert_eq!(seen["env"], json!([]), "{seen}");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let piton_host::ToolError::Failed(message) =
        call_error(&registry, "connect", json!({"port": port})).await
    else {
        panic!("connecting fails");
    };
    assert!(message.contains("connect:"), "{message}");
    listener.set_nonblocking(true).expect("nonblocking");
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener sees no connection: {accepted:?}"
    );
    assert_eq!(counts(&runtime).1, 0, "still no optimised code");
}
