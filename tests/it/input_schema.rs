//! What an input schema may cost the host: a schema of nested `$ref`s that would
//! take 2^40 steps to check is refused when it loads, naming the tool and the limit,
//! while the other plugins load; one just under the limit gives a capped message
//! for its 2^14 violations; and a slow check runs off the async threads, so that
//! SIGTERM stops `piton call` and `/healthz` and other tools answer under
//! `serve --http` meanwhile.

use std::net::SocketAddr;

use piton_tests::guests;
use serde_json::{Value, json};

use crate::mcp_client::{body_text, http_request, send_once, sse_answer, stateless_call};
use crate::support::{
    Running, listening, piton, plugins_folder, run, serve_http_command, stderr, stdout,
};

/// Logs each call's start, and each check that runs on a blocking thread.
const LOG: &str = "warn,piton_host::serve=debug,piton_host::group=debug";

/// Arguments of `schema_slow` that take long to check: each of the strings is
/// checked against its 2^16 subschemas (1 500 of them stay under the work bound).
fn slow_args() -> Value {
    json!({"list": vec!["x"; 1_500]})
}

#[test]
fn a_schema_of_2_to_the_40_subschemas_is_refused_at_load_naming_the_tool_and_the_limit() {
    let folder = plugins_folder(&[
        ("bomb.wasm", guests::HOSTILE_SCHEMA_BOMB),
        ("counter.wasm", guests::HOSTILE_COUNTER),
    ]);
    let out = run(piton()
        .args(["call", "counter", "{}", "--plugins"])
        .arg(folder.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(stdout(&out).trim(), "1");
    let refusal = err
        .lines()
        .find(|line| line.contains("bomb.wasm"))
        .unwrap_or_else(|| panic!("no load error for bomb.wasm: {err}"));
    assert!(refusal.contains("tool `schema_bomb`"), "{refusal}");
    assert!(
        refusal.contains("expands to more than 100000 subschemas"),
        "{refusal}"
    );
    assert!(refusal.contains("(limit 100000)"), "{refusal}");
    assert!(refusal.len() < 1_000, "{refusal}");
    // `piton check` says so too, as it checks what a load checks.
    let checked = run(piton().arg("check").arg(guests::HOSTILE_SCHEMA_BOMB));
    assert_eq!(checked.status.code(), Some(1), "{}", stdout(&checked));
    assert!(
        stderr(&checked).contains("tool `schema_bomb`: its input schema expands"),
        "{}",
        stderr(&checked)
    );
}

#[test]
fn a_schema_just_under_the_limit_gives_a_capped_message_for_its_2_to_the_14_violations() {
    let folder = plugins_folder(&[("slow.wasm", guests::HOSTILE_SCHEMA_SLOW)]);
    let out = run(piton()
        .args(["call", "schema_slow", r#"{"a": 1}"#, "--plugins"])
        .arg(folder.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err:.2000}");
    assert!(
        err.starts_with("(input error: /a: 1 is not of type \"string\""),
        "{err:.2000}"
    );
    assert!(err.contains("; and more than 992 more)"), "{err:.2000}");
    assert!(
        err.len() < 4 * 1024 + 100,
        "{} bytes: {err:.2000}",
        err.len()
    );
}

#[test]
fn call_stops_on_sigterm_while_a_slow_check_runs() {
    let folder = plugins_folder(&[("slow.wasm", guests::HOSTILE_SCHEMA_SLOW)]);
    let child = piton()
        .args(["call", "schema_slow"])
        .arg(slow_args().to_string())
        .arg("--plugins")
        .arg(folder.path())
        .env("PITON_LOG", LOG)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("piton call starts");
    let mut piton = Running::new(child);
    piton
        .stderr
        .wait_for("checking the arguments on a blocking thread");
    piton.terminate();
    // 143 is the signal's: a check that held the process until it ended gives 0.
    assert_eq!(piton.exit_code(), Some(143), "{}", piton.stderr.text());
}

#[test]
fn a_check_past_the_tools_deadline_is_an_input_error() {
    let folder = plugins_folder(&[("slow.wasm", guests::HOSTILE_SCHEMA_SLOW)]);
    // 10^8 subschema checks take far longer than 10 ms on any machine.
    std::fs::write(
        folder.path().join("piton.toml"),
        "[tools.schema_slow]\ntimeout = \"10ms\"\n",
    )
    .expect("write piton.toml");
    let out = run(piton()
        .args(["call", "schema_slow"])
        .arg(slow_args().to_string())
        .arg("--plugins")
        .arg(folder.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "(input error: checking the arguments against the input schema took \
             longer than the tool's deadline of 10ms; send smaller arguments)"
        ),
        "{err}"
    );
}

/// A sessionless tools/call of `name`: the JSON-RPC message that answers it.
async fn stateless(addr: SocketAddr, id: u64, name: &str, arguments: Value) -> Value {
    let response = send_once(addr, stateless_call(addr, id, name, arguments)).await;
    let body = body_text(response).await;
    sse_answer(&body, id)
        .or_else(|| serde_json::from_str(&body).ok())
        .unwrap_or_else(|| panic!("no answer to {id}: {body:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_answers_healthz_and_other_tools_while_costly_checks_run() {
    let folder = plugins_folder(&[
        ("bomb.wasm", guests::HOSTILE_SCHEMA_BOMB),
        ("slow.wasm", guests::HOSTILE_SCHEMA_SLOW),
        ("counter.wasm", guests::HOSTILE_COUNTER),
    ]);
    let mut command = serve_http_command("127.0.0.1:0", Some(folder.path()), &[]);
    command.env("PITON_LOG", LOG);
    let (piton, addr) = listening(command);
    // More costly calls than the machine has cores: had they run on the async
    // threads, nothing else would be answered while they last.
    let mut costly = Vec::new();
    for id in 0..4 {
        costly.push(tokio::spawn(stateless(
            addr,
            100 + id,
            "schema_slow",
            slow_args(),
        )));
        costly.push(tokio::spawn(stateless(
            addr,
            200 + id,
            "schema_bomb",
            json!({"a": "x"}),
        )));
    }
    for _ in 0..4 {
        piton.stderr.wait_for("tools/call started");
    }
    let health = http_request(addr, "GET", "/healthz", &[], "").await;
    assert_eq!(health.status(), 200);
    let answer = stateless(addr, 1, "counter", json!({})).await;
    assert_eq!(answer["result"]["content"][0]["text"], "1", "{answer}");
    for call in costly {
        let answer = call.await.expect("the client task");
        assert!(
            answer["result"].is_object() || answer["error"].is_object(),
            "{answer}"
        );
    }
}
