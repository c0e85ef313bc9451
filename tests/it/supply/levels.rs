//! What `[trust] require = "pinned"` (the default) and `"any"` each mean. Under
//! `pinned`, `piton add` of a URL needs the digest ahead (`--sha256`); under `any` it
//! records the digest of what it fetched, and says so, and `piton update` fetches
//! the URL again as it does a tag. Under both, a file piton.lock records loads only
//! with its digest, and a file copied by hand loads, marked "not recorded" by `piton
//! list --sources` and the load's log, with the command that records it.

use std::collections::BTreeMap;

use piton_tests::{guests, plugins};

use super::signed::said;
use super::{Answer, BadServer, digest, files_in, piton_in};
use crate::support::{piton, run};

/// A plugins folder whose piton.toml says `require`.
fn folder(require: &str) -> tempfile::TempDir {
    let folder = tempfile::tempdir().expect("temp dir");
    let toml = format!("[trust]\nrequire = {require:?}\n");
    std::fs::write(folder.path().join("piton.toml"), toml).expect("piton.toml");
    folder
}

/// A server with `component` at /lookup.wasm.
fn serving(component: &str) -> BadServer {
    let bytes = std::fs::read(component).expect("reads");
    BadServer::start(|_| {
        BTreeMap::from([(
            "GET /lookup.wasm".to_owned(),
            Answer::ok("application/wasm", bytes.clone()),
        )])
    })
}

#[test]
fn under_pinned_a_url_needs_its_sha256_ahead() {
    let server = serving(guests::LOOKUP_V1);
    let url = format!("http://{}/lookup.wasm", server.addr);
    let folder = folder("pinned");
    let out = piton_in(folder.path(), &["add", &url]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        said(&out).contains("a URL needs the SHA-256 its file must have: add --sha256 HEX"),
        "{}",
        said(&out)
    );
    assert_eq!(files_in(folder.path()), ["piton.toml"]);
}

#[test]
fn under_any_a_url_is_added_by_what_it_served_and_held_to_that() {
    let server = serving(guests::LOOKUP_V1);
    let url = format!("http://{}/lookup.wasm", server.addr);
    let folder = folder("any");
    let out = piton_in(folder.path(), &["add", &url]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    let v1 = digest(&std::fs::read(guests::LOOKUP_V1).expect("reads"));
    assert!(
        text.contains(&format!(
            "  digest:   {v1} (what the URL served: no --sha256 was given, and [trust] \
             require = \"any\" takes it)"
        )),
        "{text}"
    );
    // Held to that digest at every load, as under pinned.
    let file = folder.path().join("lookup.wasm");
    std::fs::copy(guests::LOOKUP_V2_NET, &file).expect("swap");
    let out = piton_in(folder.path(), &["list"]);
    assert!(
        said(&out).contains("lookup.wasm: refused: its sha256 is"),
        "{}",
        said(&out)
    );
    std::fs::copy(guests::LOOKUP_V1, &file).expect("back");

    // `piton update` fetches the URL again, as it does a tag.
    server.set(
        "GET /lookup.wasm",
        Answer::ok(
            "application/wasm",
            std::fs::read(guests::LOOKUP_V3_SCHEMA).expect("reads"),
        ),
    );
    let out = piton_in(folder.path(), &["update", "--yes"]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("schema    tool lookup: input + lang"),
        "{text}"
    );
    assert!(text.contains("lookup: updated"), "{text}");
}

#[test]
fn a_file_copied_by_hand_loads_under_both_marked_not_recorded() {
    for require in ["pinned", "any"] {
        let folder = folder(require);
        let copied = folder.path().join("word_count.wasm");
        std::fs::copy(plugins::WORD_COUNT, &copied).expect("copy");
        let out = run(piton()
            .args(["-v", "call", "word_count", r#"{"text":"a b"}"#, "--plugins"])
            .arg(folder.path()));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
        let record = format!(
            "piton add {} --force --plugins {}",
            copied.display(),
            folder.path().display()
        );
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            log.contains("word_count.wasm: not recorded in piton.lock"),
            "{require}: {log}"
        );
        assert!(log.contains(&record), "{require}: {log}");

        let out = piton_in(folder.path(), &["list", "--sources"]);
        let text = said(&out);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("word_count  word_count.wasm  not recorded"),
            "{text}"
        );
        assert!(text.contains(&record), "{text}");
        let out = piton_in(folder.path(), &["list", "--sources", "--json"]);
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(listed[0]["source"], "not recorded", "{listed}");
        assert_eq!(listed[0]["record"], record.as_str(), "{listed}");

        // The command it gives records it: from then on it is held to its digest.
        let args: Vec<&str> = record.split(' ').skip(1).collect();
        let out = run(piton().args(&args));
        assert!(out.status.success(), "{}", said(&out));
        let out = piton_in(folder.path(), &["list", "--sources", "--json"]);
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(
            listed[0]["source"],
            copied.display().to_string(),
            "{listed}"
        );
        assert!(
            listed[0].get("record").is_none_or(|r| r.is_null()),
            "{listed}"
        );
    }
}
