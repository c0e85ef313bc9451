//! piton.lock at load and at reload: a file it records with another digest is
//! refused, naming the lock and both digests, and files it does not record load as
//! before; a lock that does not parse stops the load; replicas given one piton.toml
//! and lock serve the recorded bytes or refuse the others.

use piton_tests::plugins;
use serde_json::json;

use super::{digest, piton_in};
use crate::mcp_client::{HttpSession, event_stream, sse_until, tool_names};
use crate::support::{serve_http, serve_http_with, stderr, stdout};

/// A plugins folder with word_count added from a local path (so locked), and the
/// digest recorded.
fn locked_folder() -> (tempfile::TempDir, String) {
    let folder = tempfile::tempdir().expect("temp dir");
    let out = piton_in(folder.path(), &["add", plugins::WORD_COUNT, "--name", "wc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let wasm = std::fs::read(plugins::WORD_COUNT).expect("reads");
    (folder, digest(&wasm))
}

#[test]
fn a_locked_file_with_other_bytes_is_refused_at_start_and_others_load() {
    let (folder, recorded) = locked_folder();
    std::fs::copy(plugins::READ_FILE, folder.path().join("read_file.wasm")).expect("copy");
    // The locked file's bytes replaced by another component's.
    std::fs::copy(plugins::CHECKERBOARD, folder.path().join("wc.wasm")).expect("copy");
    let out = piton_in(folder.path(), &["list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = listed
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["read_file"], "{}", stderr(&out));
    let found = digest(&std::fs::read(plugins::CHECKERBOARD).expect("reads"));
    let text = stderr(&out);
    let lock = folder.path().join("piton.lock");
    assert!(
        text.contains(&format!(
            "wc.wasm: refused: its sha256 is {}, but {} records {recorded} for it",
            found.trim_start_matches("sha256:"),
            lock.display()
        )),
        "{text}"
    );
    // The recorded bytes back: it loads again.
    std::fs::copy(plugins::WORD_COUNT, folder.path().join("wc.wasm")).expect("copy");
    let out = piton_in(folder.path(), &["call", "word_count", r#"{"text":"a b"}"#]);
    assert_eq!(stdout(&out).trim(), "2", "{}", stderr(&out));
}

#[test]
fn a_lock_that_does_not_parse_stops_the_load_naming_it() {
    let (folder, _) = locked_folder();
    let lock = folder.path().join("piton.lock");
    std::fs::write(&lock, "version = 1\n[components.wc]\nfile = \"wc.wasm\"\n").expect("write");
    let out = piton_in(folder.path(), &["list"]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!("error: {}: it does not parse", lock.display())),
        "{text}"
    );
    assert!(
        text.contains("delete it and `piton add` each component again"),
        "{text}"
    );
    assert!(stdout(&out).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_does_not_load_other_bytes_for_a_locked_file() {
    let (folder, recorded) = locked_folder();
    let (mut piton, addr) = serve_http(Some(folder.path()));
    let (mut session, _) = HttpSession::start(addr).await;
    let id = session.id.clone().expect("a session");
    let mut events = event_stream(addr, &id).await;
    let answer = session.request(1, "tools/list", json!({})).await;
    assert_eq!(tool_names(&answer), ["word_count"], "{answer}");

    // Other bytes under the locked name: the reload refuses them.
    std::fs::copy(plugins::READ_FILE, folder.path().join("wc.wasm")).expect("copy");
    let changed = sse_until(&mut events, |m| m.get("method").is_some()).await;
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    let answer = session.request(2, "tools/list", json!({})).await;
    assert!(tool_names(&answer).is_empty(), "{answer}");
    let refusal = piton.stderr.wait_for("wc.wasm: refused: its sha256 is");
    assert!(
        refusal.contains(&format!("records {recorded} for it")),
        "{refusal}"
    );

    // The recorded bytes back: served again.
    std::fs::copy(plugins::WORD_COUNT, folder.path().join("wc.wasm")).expect("copy");
    let changed = sse_until(&mut events, |m| m.get("method").is_some()).await;
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    let answer = session.request(3, "tools/list", json!({})).await;
    assert_eq!(tool_names(&answer), ["word_count"], "{answer}");
    piton.terminate();
    assert_eq!(piton.exit_code(), Some(0), "{}", piton.stderr.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_given_one_lock_serve_only_the_bytes_it_records() {
    // One piton.toml and piton.lock, as a deployment gives every replica; two
    // plugins folders, one with the recorded bytes and one with others swapped in.
    let config = tempfile::tempdir().expect("temp dir");
    let toml = config.path().join("piton.toml");
    std::fs::write(&toml, "").expect("piton.toml");
    let toml = toml.to_str().expect("UTF-8");
    let (right, swapped) = (
        tempfile::tempdir().expect("temp dir"),
        tempfile::tempdir().expect("temp dir"),
    );
    let out = piton_in(
        right.path(),
        &["add", plugins::WORD_COUNT, "--name", "wc", "--config", toml],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lock = config.path().join("piton.lock");
    assert!(lock.is_file(), "the lock is beside piton.toml");
    std::fs::copy(plugins::CHECKERBOARD, swapped.path().join("wc.wasm")).expect("copy");
    let recorded = digest(&std::fs::read(plugins::WORD_COUNT).expect("reads"));
    let found = digest(&std::fs::read(plugins::CHECKERBOARD).expect("reads"));

    let flags = ["--config", toml];
    let (mut good, good_addr) = serve_http_with("127.0.0.1:0", Some(right.path()), &flags);
    let (mut bad, bad_addr) = serve_http_with("127.0.0.1:0", Some(swapped.path()), &flags);
    let (mut session, _) = HttpSession::start(good_addr).await;
    let answer = session.request(1, "tools/list", json!({})).await;
    assert_eq!(tool_names(&answer), ["word_count"], "{answer}");
    let (mut session, _) = HttpSession::start(bad_addr).await;
    let answer = session.request(1, "tools/list", json!({})).await;
    assert!(tool_names(&answer).is_empty(), "{answer}");
    // Said at its start, before it listened.
    let said = bad.stderr.text();
    let refusal = said
        .lines()
        .find(|line| line.contains("wc.wasm: refused: its sha256 is"))
        .unwrap_or_else(|| panic!("no refusal in {said}"));
    assert!(
        refusal.contains(&format!(
            "its sha256 is {}, but {} records {recorded} for it",
            found.trim_start_matches("sha256:"),
            lock.display()
        )),
        "{refusal}"
    );
    for replica in [&mut good, &mut bad] {
        replica.terminate();
        assert_eq!(replica.exit_code(), Some(0), "{}", replica.stderr.text());
    }
}
