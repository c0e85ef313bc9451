//! What operators see of real calls: `/healthz`, `/readyz` and `/metrics` on `piton
//! serve --http` (each metric with the counts the calls caused, a denial, a trap and
//! a timeout among them), and the audit log (each field of each record, secrets in
//! none), from `serve --http`, `piton call` and a registry with an approver.

use std::path::Path;
use std::time::Instant;

use piton_host::loader::Loader;
use piton_host::observe::Observer;
use piton_host::{AuditSettings, AuditTo, Decision, Limits, ToolError};
use piton_tests::{guests, plugins};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::mcp_client::{HttpSession, body_text, http_request};
use crate::support::{ANSWER, piton, plugins_folder, registry_of, run, serve_http_command};

const HEADER_SECRET: &str = "header-secret-0042";
const ENV_SECRET: &str = "env-secret-0042";

/// The value of the series `name{labels}` in Prometheus text, if there is one.
pub(crate) fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut want: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    want.sort();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, labels) = match series.split_once('{') {
                Some((metric, rest)) => (metric, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            let mut got: Vec<(String, String)> = labels
                .split("\",")
                .filter(|pair| !pair.is_empty())
                .filter_map(|pair| pair.split_once("=\""))
                .map(|(k, v)| (k.to_owned(), v.trim_end_matches('"').to_owned()))
                .collect();
            got.sort();
            (metric == name && got == want).then(|| value.parse().ok())?
        })
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let response = http_request(addr, "GET", path, &[], "").await;
    let status = response.status().as_u16();
    (status, body_text(response).await)
}

/// The audit log's records once it holds `n` lines.
pub(crate) fn records(log: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + ANSWER;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().count() >= n {
            return text
                .lines()
                .map(|line| serde_json::from_str(line).expect("a JSON line"))
                .collect();
        }
        assert!(Instant::now() < deadline, "{n} audit records: {text}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn the_record<'a>(records: &'a [Value], tool: &str, outcome: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["tool"] == tool && r["outcome"] == outcome)
        .unwrap_or_else(|| panic!("no {outcome} record of {tool}: {records:#?}"))
}

fn sha256_of(args: &Value) -> String {
    hex::encode(sha2::Sha256::digest(args.to_string().as_bytes()))
}

/// An RFC 3339 UTC time to the millisecond, such as 2026-12-01T16:21:54.123Z.
fn is_rfc3339_utc(time: &Value) -> bool {
    let Some(time) = time.as_str() else {
        return false;
    };
    let shape = time.bytes().enumerate().all(|(i, b)| match i {
        4 | 7 => b == b'-',
        10 => b == b'T',
        13 | 16 => b == b':',
        19 => b == b'.',
        23 => b == b'Z',
        _ => b.is_ascii_digit(),
    });
    time.len() == 24 && shape
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_and_audit_records_follow_real_calls_over_http() {
    let folder = plugins_folder(&[
        ("word_count.wasm", plugins::WORD_COUNT),
        ("spin.wasm", guests::HOSTILE_SPIN),
        ("panic.wasm", guests::HOSTILE_PANIC),
        ("net_call.wasm", guests::HOSTILE_NET_CALL),
        ("read_env.wasm", guests::HOSTILE_READ_ENV),
        ("fs_add_only.wasm", guests::HOSTILE_FS_ADD_ONLY),
    ]);
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let data = tempfile::tempdir().expect("temp dir");
    std::fs::write(data.path().join("existing.txt"), "original").expect("write");
    let config = format!(
        "[audit]\nto = {log:?}\narguments = true\n\
         [tools.spin]\ntimeout = \"2s\"\n\
         [tools.net_call]\nnetwork = [{{ host = \"127.0.0.1:9\", headers = {{ Authorization = \
         \"Bearer ${{PITON_TEST_SECRET}}\" }} }}]\n\
         [tools.read_env]\nenv = {{ API_TOKEN = \"{ENV_SECRET}\" }}\n\
         [tools.fs_add_only]\nmounts = [{{ host = {data:?}, guest = \"/data\", mode = \"write\" }}]\n",
        data = data.path(),
    );
    std::fs::write(folder.path().join("piton.toml"), config).expect("write piton.toml");
    let mut command = serve_http_command("127.0.0.1:0", Some(folder.path()), &[]);
    command.env("PITON_TEST_SECRET", HEADER_SECRET);
    let (_piton, addr) = crate::support::listening(command);

    assert_eq!(get(addr, "/healthz").await.0, 200);
    assert_eq!(get(addr, "/readyz").await.0, 200);
    let foreign = http_request(addr, "GET", "/metrics", &[("host", "evil.example")], "").await;
    assert_eq!(foreign.status(), 403, "the Host check covers /metrics");

    let (mut session, _) = HttpSession::start(addr).await;
    let mut id = 0;
    let mut call = async |name: &str, arguments: Value| {
        id += 1;
        let params = json!({"name": name, "arguments": arguments});
        session.request(id, "tools/call", params).await
    };
    for text in ["a b c", "d"] {
        let answer = call("word_count", json!({"text": text})).await;
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let answer = call("word_count", json!({})).await;
    assert_eq!(
        answer["result"]["isError"], true,
        "an input error: {answer}"
    );
    let answer = call("panic", json!({})).await;
    assert!(answer["error"].is_object(), "a trap: {answer}");
    let denied = json!({"method": "GET", "url": "http://127.0.0.2:9/", "read_only": false});
    let answer = call("net_call", denied.clone()).await;
    assert_eq!(answer["result"]["isError"], true, "refused: {answer}");
    let answer = call("read_env", json!({})).await;
    assert!(answer.to_string().contains(ENV_SECRET), "granted: {answer}");
    let answer = call("fs_add_only", json!({"attack": "open_write"})).await;
    assert!(answer.to_string().contains("denied"), "refused: {answer}");
    let answer = call("nope", json!({})).await;
    assert!(answer["error"].is_object(), "unknown: {answer}");

    // spin runs to its deadline; meanwhile it is in flight.
    let spinning = tokio::spawn(async move {
        let (mut session, _) = HttpSession::start(addr).await;
        session
            .request(1, "tools/call", json!({"name": "spin", "arguments": {}}))
            .await
    });
    let deadline = Instant::now() + ANSWER;
    loop {
        let (_, text) = get(addr, "/metrics").await;
        if metric(&text, "piton_tool_calls_in_flight", &[("tool", "spin")]) == Some(1.0) {
            break;
        }
        assert!(Instant::now() < deadline, "spin never in flight:\n{text}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let answer = spinning.await.expect("the call");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("deadline"),
        "{answer}"
    );

    let (status, text) = get(addr, "/metrics").await;
    assert_eq!(status, 200);
    let count = |name: &str, labels: &[(&str, &str)]| {
        metric(&text, name, labels).unwrap_or_else(|| panic!("no {name}{labels:?} in\n{text}"))
    };
    for (tool, calls) in [
        ("word_count", 3.0),
        ("panic", 1.0),
        ("spin", 1.0),
        ("net_call", 1.0),
        ("read_env", 1.0),
    ] {
        assert_eq!(
            count("piton_tool_calls_total", &[("tool", tool)]),
            calls,
            "{tool}"
        );
        let latency = &[("tool", tool)];
        assert_eq!(
            count("piton_tool_call_duration_seconds_count", latency),
            calls,
            "{tool}"
        );
        assert_eq!(
            count("piton_tool_calls_in_flight", &[("tool", tool)]),
            0.0,
            "{tool}"
        );
    }
    for (tool, kind, n) in [
        ("word_count", "input", 1.0),
        ("word_count", "trap", 0.0),
        ("panic", "trap", 1.0),
        ("spin", "timeout", 1.0),
        ("spin", "trap", 0.0),
        ("net_call", "failed", 1.0),
        ("read_env", "failed", 0.0),
    ] {
        let labels = &[("tool", tool), ("kind", kind)];
        assert_eq!(count("piton_tool_errors_total", labels), n, "{tool} {kind}");
    }
    for (tool, trap, n) in [
        ("panic", "guest", 1.0),
        ("spin", "deadline", 1.0),
        ("spin", "guest", 0.0),
    ] {
        let labels = &[("tool", tool), ("trap", trap)];
        assert_eq!(count("piton_tool_traps_total", labels), n, "{tool} {trap}");
    }
    for (tool, capability, n) in [
        ("net_call", "net", 1.0),
        ("net_call", "fs", 0.0),
        ("read_env", "net", 0.0),
    ] {
        let labels = &[("tool", tool), ("capability", capability)];
        assert_eq!(
            count("piton_tool_denials_total", labels),
            n,
            "{tool} {capability}"
        );
    }
    assert_eq!(count("piton_unknown_tool_calls_total", &[]), 1.0);
    let compiled = count("piton_compile_cache_hits_total", &[])
        + count("piton_compile_cache_misses_total", &[]);
    assert_eq!(compiled, 6.0, "one lookup per component file");
    assert_eq!(count("piton_audit_records_dropped_total", &[]), 0.0);
    assert!(
        !text.contains("tool=\"nope\""),
        "only tools of the registry are labels"
    );

    let records = records(&log, 9);
    let whole = std::fs::read_to_string(&log).expect("the log");
    for secret in [HEADER_SECRET, ENV_SECRET] {
        assert!(
            !whole.contains(secret),
            "{secret} in the audit log:\n{whole}"
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&log)
            .expect("the log")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    for record in &records {
        assert!(is_rfc3339_utc(&record["time"]), "{record}");
        assert!(
            record["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
            "{record}"
        );
        assert!(record["approval"] == "none", "no approver is set: {record}");
    }
    let ok = the_record(&records, "word_count", "ok");
    let args = json!({"text": "a b c"});
    assert_eq!(ok["arguments"], args, "{ok}");
    assert_eq!(ok["arguments_sha256"], sha256_of(&args), "{ok}");
    assert!(
        ok["source"]
            .as_str()
            .is_some_and(|s| s.ends_with("word_count.wasm")),
        "{ok}"
    );
    assert_eq!(ok["hints"]["read_only"], true, "{ok}");
    assert_eq!(
        ok["granted"],
        json!({"mounts": [], "network": [], "env": []}),
        "{ok}"
    );
    assert_eq!(ok["denials"], json!([]), "{ok}");
    assert!(ok.get("message").is_none(), "{ok}");

    let input = the_record(&records, "word_count", "input");
    assert!(
        input["message"]
            .as_str()
            .unwrap_or("")
            .contains("input error"),
        "{input}"
    );
    let trap = the_record(&records, "panic", "trap");
    assert!(
        trap["message"]
            .as_str()
            .unwrap_or("")
            .contains("panicked on purpose"),
        "{trap}"
    );
    let timeout = the_record(&records, "spin", "timeout");
    assert!(
        timeout["message"]
            .as_str()
            .unwrap_or("")
            .contains("deadline of 2s"),
        "{timeout}"
    );

    let refused = the_record(&records, "net_call", "failed");
    assert_eq!(refused["hints"]["open_world"], true, "{refused}");
    assert_eq!(
        refused["granted"]["network"],
        json!([{"host": "127.0.0.1:9", "headers": ["Authorization"], "tcp": false}]),
        "{refused}"
    );
    let denials = refused["denials"].as_array().expect("denials");
    assert_eq!(denials.len(), 1, "{refused}");
    assert_eq!(denials[0]["capability"], "net", "{refused}");
    assert_eq!(denials[0]["target"], "127.0.0.2:9", "{refused}");
    assert!(
        denials[0]["why"].as_str().is_some_and(|w| !w.is_empty()),
        "{refused}"
    );
    assert_eq!(refused["arguments"], denied, "{refused}");

    let fs = the_record(&records, "fs_add_only", "ok");
    let mounts = &fs["granted"]["mounts"];
    assert_eq!(mounts[0]["guest"], "/data", "{fs}");
    assert_eq!(mounts[0]["access"], "add_only", "{fs}");
    let denial = &fs["denials"][0];
    assert_eq!(denial["capability"], "fs", "{fs}");
    assert_eq!(denial["target"], "existing.txt", "{fs}");
    assert!(
        denial["why"].as_str().unwrap_or("").contains("existed"),
        "{fs}"
    );
    let env = the_record(&records, "read_env", "ok");
    assert_eq!(env["granted"]["env"], json!(["API_TOKEN"]), "{env}");
    let unknown = the_record(&records, "nope", "unknown_tool");
    assert_eq!(unknown["source"], Value::Null, "{unknown}");
    assert_eq!(unknown["hints"], Value::Null, "{unknown}");
}

#[test]
fn piton_call_writes_one_record_with_only_the_arguments_hash_by_default() {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("calls.jsonl");
    std::fs::write(
        folder.path().join("piton.toml"),
        format!("[audit]\nto = {log:?}\n"),
    )
    .expect("write piton.toml");
    let out = run(piton()
        .args(["call", "word_count", r#"{"text":"one two"}"#, "--plugins"])
        .arg(folder.path()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).expect("the log");
    assert_eq!(text.lines().count(), 1, "{text}");
    let record: Value = serde_json::from_str(text.trim_end()).expect("JSON");
    assert_eq!(record["outcome"], "ok");
    assert_eq!(
        record["arguments_sha256"],
        sha256_of(&json!({"text": "one two"}))
    );
    assert!(record.get("arguments").is_none(), "not opted in: {record}");
    assert!(!text.contains("one two"), "{text}");
}

#[test]
fn a_bad_audit_table_names_the_key_and_the_fix() {
    let folder = plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    std::fs::write(
        folder.path().join("piton.toml"),
        "[audit]\nto = \"/nonexistent/dir/a.log\"\n",
    )
    .expect("write piton.toml");
    let out = run(piton()
        .args(["call", "word_count", r#"{"text":"x"}"#, "--plugins"])
        .arg(folder.path()));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("piton.toml: audit.to: cannot open the audit log"),
        "{stderr}"
    );
    std::fs::write(
        folder.path().join("piton.toml"),
        "[audit]\nfile = \"a.log\"\n",
    )
    .expect("write piton.toml");
    let out = run(piton()
        .args(["call", "word_count", r#"{"text":"x"}"#, "--plugins"])
        .arg(folder.path()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown field `file`"), "{stderr}");
}

#[tokio::test]
async fn the_approvers_decision_is_in_the_record() {
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let settings = AuditSettings {
        to: Some(AuditTo::File(log.clone())),
        arguments: false,
    };
    let observer = Observer::new(&settings, &Default::default(), std::sync::Arc::default())
        .expect("an observer");
    let mut registry = registry_of(&[plugins::WORD_COUNT], Limits::default()).await;
    registry.set_observer(observer.clone());
    registry.set_approver(|request: &piton_host::ApprovalRequest<'_>| {
        if request.args["text"] == "no" {
            Decision::Deny("the operator said no".into())
        } else {
            Decision::Allow
        }
    });
    for text in ["yes", "no"] {
        let answer = registry.call("word_count", json!({"text": text})).await;
        assert!(answer.is_ok(), "no trap: {answer:?}");
    }
    observer.flush();
    let records = records(&log, 2);
    assert_eq!(records[0]["approval"], "allow", "{records:?}");
    assert_eq!(records[0]["outcome"], "ok", "{records:?}");
    assert_eq!(
        records[1]["approval"],
        json!({"deny": "the operator said no"}),
        "{records:?}"
    );
    assert_eq!(records[1]["outcome"], "not_approved", "{records:?}");
    let text = observer.metrics_text();
    let labels = &[("tool", "word_count"), ("kind", "not_approved")];
    assert_eq!(
        metric(&text, "piton_tool_errors_total", labels),
        Some(1.0),
        "{text}"
    );
}

#[test]
fn serve_on_stdio_writes_records_to_stderr_for_lean_calls_and_traps() {
    let folder = plugins_folder(&[
        ("word_count.wasm", plugins::WORD_COUNT),
        ("panic.wasm", guests::HOSTILE_PANIC),
    ]);
    std::fs::write(
        folder.path().join("piton.toml"),
        "[audit]\nto = \"stderr\"\n",
    )
    .expect("write piton.toml");
    let mut piton = crate::mcp_client::StdioPiton::start(folder.path());
    let params = json!({"name": "word_count", "arguments": {"text": "a b"}});
    let answer = piton.request(1, "tools/call", params);
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");
    let answer = piton.request(2, "tools/call", json!({"name": "panic", "arguments": {}}));
    assert!(answer["error"].is_object(), "{answer}");
    let deadline = Instant::now() + ANSWER;
    let records: Vec<Value> = loop {
        let text = piton.running.stderr.text();
        let records: Vec<Value> = text
            .lines()
            .filter(|line| line.starts_with("{\"time\":"))
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        if records.len() >= 2 {
            break records;
        }
        assert!(Instant::now() < deadline, "two records on stderr:\n{text}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    the_record(&records, "word_count", "ok");
    the_record(&records, "panic", "trap");
}

#[tokio::test]
async fn a_trap_made_an_error_result_is_a_trap_and_a_granted_secret_in_a_message_is_not_logged() {
    let folder = plugins_folder(&[
        ("panic.wasm", guests::HOSTILE_PANIC),
        ("read_env.wasm", guests::HOSTILE_READ_ENV),
    ]);
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let file = folder.path().join("piton.toml");
    std::fs::write(
        &file,
        format!(
            "[audit]\nto = {log:?}\n[tools.panic]\non_trap = \"error\"\n\
             [tools.read_env]\nenv = {{ API_TOKEN = \"{ENV_SECRET}\" }}\n"
        ),
    )
    .expect("write piton.toml");
    let loader = Loader::from_flags(Some(folder.path().into()), Some(file)).expect("a loader");
    let registry = loader.load().await.expect("loaded").registry;
    let observer = loader.observer().expect("an observer");

    let answer = registry.call("panic", json!({})).await;
    assert!(
        matches!(&answer, Ok(Err(ToolError::Failed(m))) if m.contains("panicked on purpose")),
        "on_trap = \"error\": an error result, not a trap: {answer:?}"
    );
    let answer = registry.call("read_env", json!({"fail": true})).await;
    assert!(
        matches!(&answer, Ok(Err(ToolError::Failed(m))) if m.contains(ENV_SECRET)),
        "the tool repeats its secret: {answer:?}"
    );

    observer.flush();
    let records = records(&log, 2);
    let trap = the_record(&records, "panic", "trap");
    assert!(
        trap["message"]
            .as_str()
            .is_some_and(|m| m.contains("panicked on purpose")),
        "{trap}"
    );
    let failed = the_record(&records, "read_env", "failed");
    assert!(
        failed["message"]
            .as_str()
            .is_some_and(|m| m.contains("API_TOKEN") && m.contains("[secret]")),
        "{failed}"
    );
    let whole = std::fs::read_to_string(&log).expect("the log");
    assert!(
        !whole.contains(ENV_SECRET),
        "the secret is logged:\n{whole}"
    );

    let text = observer.metrics_text();
    for (kind, n) in [("trap", 1.0), ("failed", 0.0)] {
        let labels = &[("tool", "panic"), ("kind", kind)];
        assert_eq!(
            metric(&text, "piton_tool_errors_total", labels),
            Some(n),
            "{kind}:\n{text}"
        );
    }
    let labels = &[("tool", "panic"), ("trap", "guest")];
    assert_eq!(
        metric(&text, "piton_tool_traps_total", labels),
        Some(1.0),
        "{text}"
    );
}
