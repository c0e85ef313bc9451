//! Each bad answer a registry or URL can give is refused with an error naming the
//! reference and the reason, and leaves nothing in the plugins folder.

use std::collections::BTreeMap;

use piton_tests::plugins;

use super::{
    Answer, BadServer, LAYER_TYPE, MANIFEST_TYPE, digest, files_in, manifest, piton_in,
    registry_routes,
};
use crate::support::stderr;

/// `piton add REF ARGS` into an empty plugins folder: it must fail with exit
/// `code`, say `reason` after naming `reference`, and leave the folder empty.
fn refused(reference: &str, args: &[&str], code: i32, reason: &str) {
    let folder = tempfile::tempdir().expect("temp dir");
    refused_in(folder.path(), reference, args, code, reason);
    assert!(
        files_in(folder.path()).is_empty(),
        "{:?}",
        files_in(folder.path())
    );
}

/// [`refused`] into `folder`, which keeps what it held.
fn refused_in(folder: &std::path::Path, reference: &str, args: &[&str], code: i32, reason: &str) {
    let mut all = vec!["add", reference];
    all.extend(args);
    let out = piton_in(folder, &all);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{text}");
    assert!(text.contains(&format!("error: {reference}: ")), "{text}");
    assert!(text.contains(reason), "{reason} in {text}");
}

fn word_count() -> Vec<u8> {
    std::fs::read(plugins::WORD_COUNT).expect("word_count.wasm reads")
}

/// A registry serving word_count as `bad/x:1` under `manifest`, with `layer` as the
/// answer for its layer.
fn registry(manifest: Vec<u8>, layer: Answer) -> BadServer {
    let wasm_digest = digest(&word_count());
    BadServer::start(move |_| registry_routes("bad/x", "1", &manifest, &wasm_digest, layer))
}

fn layer_answer() -> Answer {
    Answer::ok("application/octet-stream", word_count())
}

#[test]
fn a_good_answer_from_the_test_server_is_taken() {
    // The baseline the cases below depart from: this server, answering well, works.
    let wasm = word_count();
    let server = registry(
        manifest(MANIFEST_TYPE, LAYER_TYPE, &digest(&wasm), wasm.len()),
        layer_answer(),
    );
    let folder = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://{}/bad/x:1", server.addr);
    let out = piton_in(folder.path(), &["add", &reference]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(files_in(folder.path()), ["piton.lock", "x.wasm"]);
}

#[test]
fn a_manifest_of_another_media_type_is_refused() {
    let wasm = word_count();
    let docker = "application/vnd.docker.distribution.manifest.v2+json";
    let server = registry(
        manifest(docker, LAYER_TYPE, &digest(&wasm), wasm.len()),
        layer_answer(),
    );
    refused(
        &format!("oci://{}/bad/x:1", server.addr),
        &[],
        1,
        &format!("the manifest's media type is {docker}"),
    );
    // A container image's tar layer is not a component either.
    let tar = "application/vnd.oci.image.layer.v1.tar";
    let server = registry(
        manifest(MANIFEST_TYPE, tar, &digest(&wasm), wasm.len()),
        layer_answer(),
    );
    refused(&format!("oci://{}/bad/x:1", server.addr), &[], 1, tar);
}

#[test]
fn a_layer_over_the_size_limit_is_refused_before_it_is_read() {
    let wasm = word_count();
    let server = registry(
        manifest(MANIFEST_TYPE, LAYER_TYPE, &digest(&wasm), wasm.len()),
        layer_answer(),
    );
    let folder = tempfile::tempdir().expect("temp dir");
    let toml = folder.path().join("piton.toml");
    std::fs::write(&toml, "[supply]\nmax_size = \"64KiB\"\n").expect("write piton.toml");
    refused_in(
        folder.path(),
        &format!("oci://{}/bad/x:1", server.addr),
        &[],
        1,
        "over the limit of 64 KiB; raise [supply] max_size",
    );
    assert_eq!(files_in(folder.path()), ["piton.toml"]);
}

#[test]
fn a_layer_longer_than_its_manifest_says_is_refused() {
    let wasm = word_count();
    // The manifest says 1000 bytes; the registry sends them all.
    let server = registry(
        manifest(MANIFEST_TYPE, LAYER_TYPE, &digest(&wasm), 1000),
        layer_answer(),
    );
    refused(
        &format!("oci://{}/bad/x:1", server.addr),
        &[],
        1,
        "sent more than the 1000 bytes the manifest gives the component layer",
    );
}

#[test]
fn a_layer_whose_bytes_are_not_its_digest_is_refused() {
    let wasm = word_count();
    let mut other = wasm.clone();
    let last = other.len() - 1;
    other[last] ^= 1;
    let server = registry(
        manifest(MANIFEST_TYPE, LAYER_TYPE, &digest(&wasm), wasm.len()),
        Answer::ok("application/octet-stream", other.clone()),
    );
    refused(
        &format!("oci://{}/bad/x:1", server.addr),
        &[],
        1,
        &format!(
            "the component layer has digest {}, but {} was expected",
            digest(&other),
            digest(&wasm)
        ),
    );
}

#[test]
fn a_manifest_whose_bytes_are_not_the_digest_asked_for_is_refused() {
    let wasm = word_count();
    let served = manifest(MANIFEST_TYPE, LAYER_TYPE, &digest(&wasm), wasm.len());
    let asked = digest(b"another manifest");
    let server = BadServer::start(|_| {
        BTreeMap::from([
            (
                "GET /v2/".to_owned(),
                Answer::ok("application/json", b"{}".to_vec()),
            ),
            (
                format!("GET /v2/bad/x/manifests/{asked}"),
                Answer::ok(MANIFEST_TYPE, served.clone()),
            ),
        ])
    });
    refused(
        &format!("oci://{}/bad/x@{asked}", server.addr),
        &[],
        1,
        &format!(
            "the manifest has digest {}, but {asked} was expected",
            digest(&served)
        ),
    );
}

#[test]
fn a_tag_that_moves_during_the_pull_is_refused() {
    // The tag resolves to the first manifest; asked by that digest, the registry
    // gives the one the tag names now.
    let wasm = word_count();
    let first = manifest(MANIFEST_TYPE, LAYER_TYPE, &digest(&wasm), wasm.len());
    let now = manifest(MANIFEST_TYPE, LAYER_TYPE, &digest(b"v2"), 2);
    let (first_digest, now_digest) = (digest(&first), digest(&now));
    let server = BadServer::start(|_| {
        BTreeMap::from([
            (
                "GET /v2/".to_owned(),
                Answer::ok("application/json", b"{}".to_vec()),
            ),
            (
                "HEAD /v2/bad/x/manifests/1".to_owned(),
                Answer::ok(MANIFEST_TYPE, first.clone())
                    .header("Docker-Content-Digest", &first_digest),
            ),
            (
                format!("GET /v2/bad/x/manifests/{first_digest}"),
                Answer::ok(MANIFEST_TYPE, now.clone()),
            ),
        ])
    });
    refused(
        &format!("oci://{}/bad/x:1", server.addr),
        &[],
        1,
        &format!(
            "the tag 1 resolved to {first_digest}, but the manifest the registry gave for that \
             digest is {now_digest}: the tag moved during the pull"
        ),
    );
}

#[test]
fn a_redirect_to_another_host_is_refused() {
    let wasm = word_count();
    let wasm_digest = digest(&wasm);
    let manifest = manifest(MANIFEST_TYPE, LAYER_TYPE, &wasm_digest, wasm.len());
    // The same server under another name: a host the reference did not name.
    let server = BadServer::start(|addr| {
        let elsewhere = format!(
            "http://localhost:{}/v2/bad/x/blobs/{wasm_digest}",
            addr.port()
        );
        let redirect = Answer::redirect(307, &elsewhere);
        registry_routes("bad/x", "1", &manifest, &wasm_digest, redirect)
    });
    refused(
        &format!("oci://{}/bad/x:1", server.addr),
        &[],
        1,
        &format!(
            "refused a redirect from http://{}/v2/bad/x/blobs/{wasm_digest} to \
             http://localhost:{}/v2/bad/x/blobs/{wasm_digest}: it leads to another host",
            server.addr,
            server.addr.port()
        ),
    );
    // A URL's too.
    let server = BadServer::start(|addr| {
        let elsewhere = format!("http://localhost:{}/x.wasm", addr.port());
        BTreeMap::from([(
            "GET /dl/x.wasm".to_owned(),
            Answer::redirect(302, &elsewhere),
        )])
    });
    let hex = wasm_digest.trim_start_matches("sha256:");
    refused(
        &format!("http://{}/dl/x.wasm", server.addr),
        &["--sha256", hex],
        1,
        "it leads to another host",
    );
}

#[test]
fn plain_http_off_loopback_is_refused_before_any_request() {
    let hex = "0".repeat(64);
    for reference in ["http://example.com/x.wasm", "http://10.0.0.1:8080/x.wasm"] {
        refused(
            reference,
            &["--sha256", &hex],
            2,
            "which is not a loopback host",
        );
    }
    refused("https://example.com/x.wasm", &[], 2, "add --sha256 HEX");
}

#[test]
fn a_url_whose_bytes_are_not_the_sha256_given_is_refused() {
    let wasm = word_count();
    let server = BadServer::start(|_| {
        BTreeMap::from([(
            "GET /x.wasm".to_owned(),
            Answer::ok("application/wasm", wasm.clone()),
        )])
    });
    let reference = format!("http://{}/x.wasm", server.addr);
    let wrong = "ab".repeat(32);
    refused(
        &reference,
        &["--sha256", &wrong],
        1,
        &format!(
            "the component has digest {}, but sha256:{wrong} (--sha256) was expected",
            digest(&wasm)
        ),
    );
    // The right one is taken.
    let folder = tempfile::tempdir().expect("temp dir");
    let right = digest(&wasm);
    let out = piton_in(
        folder.path(),
        &[
            "add",
            &reference,
            "--sha256",
            right.trim_start_matches("sha256:"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(files_in(folder.path()), ["piton.lock", "x.wasm"]);
}

#[test]
fn bytes_that_are_not_a_piton_tool_are_not_added() {
    let source = tempfile::tempdir().expect("temp dir");
    let file = source.path().join("junk.wasm");
    std::fs::write(&file, b"\0asm not really").expect("write");
    refused(
        file.to_str().expect("utf-8"),
        &[],
        1,
        "it does not load as a piton tool",
    );
}

#[test]
fn a_manifest_that_is_not_the_digest_its_registry_gives_is_refused() {
    // No HEAD (405): the tag is read with one GET, whose digest header lies.
    let wasm = word_count();
    let served = manifest(MANIFEST_TYPE, LAYER_TYPE, &digest(&wasm), wasm.len());
    let said = digest(b"another manifest");
    let server = BadServer::start(|_| {
        BTreeMap::from([
            (
                "GET /v2/".to_owned(),
                Answer::ok("application/json", b"{}".to_vec()),
            ),
            ("HEAD /v2/bad/x/manifests/1".to_owned(), Answer::status(405)),
            (
                "GET /v2/bad/x/manifests/1".to_owned(),
                Answer::ok(MANIFEST_TYPE, served.clone()).header("Docker-Content-Digest", &said),
            ),
        ])
    });
    refused(
        &format!("oci://{}/bad/x:1", server.addr),
        &[],
        1,
        &format!(
            "the manifest has digest {}, but {said} (its Docker-Content-Digest) was expected",
            digest(&served)
        ),
    );
}
