//! More bad answers, from a URL or a registry, each refused with nothing left in the
//! plugins folder: a redirect to the same host on another port, or to plain HTTP off
//! loopback; a body over `[supply] max_size`, with and without a Content-Length; and
//! a signature bundle beside a URL that is over another component's digest.

use std::collections::BTreeMap;

use piton_tests::plugins;

use super::signed::{Signed, bundle_of, said};
use super::{Answer, BadServer, digest, files_in, piton_in, registry_routes};
use super::{LAYER_TYPE, MANIFEST_TYPE, manifest};
use crate::support::stderr;

fn word_count() -> Vec<u8> {
    std::fs::read(plugins::WORD_COUNT).expect("word_count.wasm reads")
}

/// `--sha256 HEX` for `bytes`.
fn hex_of(bytes: &[u8]) -> String {
    digest(bytes).trim_start_matches("sha256:").to_owned()
}

/// `piton add ARGS` into a new plugins folder holding `toml` as piton.toml (if any):
/// it must exit 1 saying `reason`, and leave nothing but piton.toml.
fn refused(args: &[&str], toml: Option<&str>, reason: &str) {
    let folder = tempfile::tempdir().expect("temp dir");
    if let Some(toml) = toml {
        std::fs::write(folder.path().join("piton.toml"), toml).expect("piton.toml");
    }
    let mut all = vec!["add"];
    all.extend(args);
    let out = piton_in(folder.path(), &all);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("error: {}: ", args[0])), "{text}");
    assert!(text.contains(reason), "{reason:?} in {text}");
    let left = files_in(folder.path());
    let expected: &[&str] = if toml.is_some() { &["piton.toml"] } else { &[] };
    assert_eq!(left, expected, "nothing half-written is left");
}

#[test]
fn a_redirect_to_the_same_host_on_another_port_is_refused() {
    let wasm = word_count();
    // The bytes are there, on another port of the same host.
    let elsewhere = BadServer::start(|_| {
        BTreeMap::from([(
            "GET /x.wasm".to_owned(),
            Answer::ok("application/wasm", wasm.clone()),
        )])
    });
    let to = format!("http://127.0.0.1:{}/x.wasm", elsewhere.addr.port());
    let server = BadServer::start(|_| {
        BTreeMap::from([("GET /dl/x.wasm".to_owned(), Answer::redirect(302, &to))])
    });
    let url = format!("http://{}/dl/x.wasm", server.addr);
    refused(
        &[&url, "--sha256", &hex_of(&wasm)],
        None,
        &format!("refused a redirect from {url} to {to}: it leads to another port"),
    );
    // A registry's blob too.
    let wasm_digest = digest(&wasm);
    let blob = format!(
        "http://127.0.0.1:{}/v2/bad/x/blobs/{wasm_digest}",
        elsewhere.addr.port()
    );
    let manifest = manifest(MANIFEST_TYPE, LAYER_TYPE, &wasm_digest, wasm.len());
    let registry = BadServer::start(|_| {
        registry_routes(
            "bad/x",
            "1",
            &manifest,
            &wasm_digest,
            Answer::redirect(307, &blob),
        )
    });
    refused(
        &[&format!("oci://{}/bad/x:1", registry.addr)],
        None,
        "it leads to another port",
    );
}

#[test]
fn a_redirect_to_plain_http_off_loopback_is_refused() {
    let wasm = word_count();
    // Never reached: 192.0.2.0/24 is for documentation.
    let to = "http://192.0.2.1:8080/x.wasm";
    let server = BadServer::start(|_| {
        BTreeMap::from([("GET /x.wasm".to_owned(), Answer::redirect(301, to))])
    });
    let url = format!("http://{}/x.wasm", server.addr);
    refused(
        &[&url, "--sha256", &hex_of(&wasm)],
        None,
        &format!("refused a redirect from {url} to {to}: it leads to plain HTTP"),
    );
}

#[test]
fn a_body_over_the_size_limit_is_refused_with_or_without_its_length() {
    let big = vec![7_u8; 100 << 10];
    let toml = "[supply]\nmax_size = \"64KiB\"\n";
    let server = BadServer::start(|_| {
        BTreeMap::from([
            (
                "GET /said.wasm".to_owned(),
                Answer::ok("application/wasm", big.clone()),
            ),
            (
                "GET /unsaid.wasm".to_owned(),
                Answer::ok("application/wasm", big.clone()).without_length(),
            ),
        ])
    });
    // Said ahead (Content-Length), it is refused before a byte is read; unsaid, once
    // the bytes read pass the limit.
    for (path, reason) in [
        (
            "said.wasm",
            "the component is 100 KiB, over the limit of 64 KiB",
        ),
        (
            "unsaid.wasm",
            "over the limit of 64 KiB; raise [supply] max_size",
        ),
    ] {
        let url = format!("http://{}/{path}", server.addr);
        refused(&[&url, "--sha256", &hex_of(&big)], Some(toml), reason);
    }
}

#[test]
fn a_url_whose_bundle_is_over_another_digest_is_refused() {
    let signed = Signed::new(&["alice"]);
    // alice's signature, but of checkerboard; served beside word_count.
    let other = signed.source("other", plugins::CHECKERBOARD, Some("alice"));
    let bundle = std::fs::read(bundle_of(&other)).expect("the bundle reads");
    let wasm = word_count();
    let server = BadServer::start(|_| {
        BTreeMap::from([
            (
                "GET /wc.wasm".to_owned(),
                Answer::ok("application/wasm", wasm.clone()),
            ),
            (
                "GET /wc.wasm.sigstore.json".to_owned(),
                Answer::ok("application/json", bundle.clone()),
            ),
        ])
    });
    let url = format!("http://{}/wc.wasm", server.addr);
    // Refused under the default level too: a signature there must verify.
    for require in ["signed", "pinned"] {
        signed.trust_as(require, &["alice"]);
        let out = piton_in(
            &signed.plugins(),
            &["add", &url, "--sha256", &hex_of(&wasm)],
        );
        let text = said(&out);
        assert_eq!(out.status.code(), Some(1), "{require}: {text}");
        assert!(text.contains(&format!("error: {url}: ")), "{text}");
        let checkerboard = digest(&std::fs::read(plugins::CHECKERBOARD).expect("reads"));
        assert!(text.contains("key alice (SHA256:"), "{text}");
        assert!(
            text.contains(&format!("over another digest ({checkerboard})")),
            "{text}"
        );
        assert_eq!(files_in(&signed.plugins()), ["piton.toml"], "{require}");
    }
}
