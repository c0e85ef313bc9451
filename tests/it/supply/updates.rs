//! `piton update` of what was added from a registry or a URL: an OCI tag resolved
//! again against a real registry (a new version's permission diff; a new manifest
//! with the same component bytes recorded, its signature checked again), a URL moved
//! with `--sha256`, and an OCI source pinned by its digest left as it is.

use std::collections::BTreeMap;

use piton_host::supply::lock::{Lock, LockEntry};
use piton_tests::guests;

use super::signed::{Signed, bundle_of, said};
use super::{Answer, BadServer, Registry, digest, piton_in};
use crate::support::{piton, run};

/// `piton publish FILE REF`, signed with `key` if given; gives the manifest digest.
fn publish(file: &str, reference: &str, key: Option<&std::path::Path>) -> String {
    let mut command = piton();
    command.args(["publish", file, reference]);
    if let Some(key) = key {
        command.arg("--key").arg(key);
    }
    let out = run(&mut command);
    assert!(out.status.success(), "{}", said(&out));
    said(&out)
        .lines()
        .find_map(|line| line.trim().strip_prefix("manifest: "))
        .expect("the manifest digest")
        .to_owned()
}

fn entry(folder: &std::path::Path, name: &str) -> LockEntry {
    let lock = Lock::load(&folder.join("piton.lock")).expect("the lock reads");
    lock.components[name].clone()
}

fn sha256_of(file: &str) -> String {
    digest(&std::fs::read(file).expect("reads"))
}

#[test]
fn a_tag_published_again_shows_the_new_versions_diff() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let tagged = format!("oci://{}/tools/lookup:1", registry.addr);
    let first = publish(guests::LOOKUP_V1, &tagged, None);
    let folder = tempfile::tempdir().expect("temp dir");
    let out = piton_in(folder.path(), &["add", &tagged]);
    assert!(out.status.success(), "{}", said(&out));
    let out = piton_in(folder.path(), &["update"]);
    assert_eq!(
        said(&out),
        format!("lookup: up to date ({})\n", sha256_of(guests::LOOKUP_V1))
    );

    // v2 to the same tag: it imports the network and drops read_only.
    let second = publish(guests::LOOKUP_V2_NET, &tagged, None);
    let out = piton_in(folder.path(), &["update", "--yes"]);
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for line in [
        format!("lookup: a new version from {tagged}"),
        "! weaker    tool lookup: read_only true → false".to_owned(),
        "! weaker    network: now imports wasi:http/outgoing-handler".to_owned(),
        "which --yes does not take without --allow-weaker".to_owned(),
    ] {
        assert!(text.contains(&line), "{line:?} in:\n{text}");
    }
    assert_eq!(entry(folder.path(), "lookup").resolved, Some(first));
    let out = piton_in(folder.path(), &["update", "--yes", "--allow-weaker"]);
    assert!(out.status.success(), "{}", said(&out));
    let now = entry(folder.path(), "lookup");
    assert_eq!(now.resolved, Some(second));
    assert_eq!(now.digest, sha256_of(guests::LOOKUP_V2_NET));
}

#[test]
fn the_same_bytes_under_a_new_manifest_are_recorded_once_their_signature_verifies() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let signed = Signed::new(&["alice"]);
    let alice = signed.path("alice.key");
    let tagged = format!("oci://{}/tools/lookup:1", registry.addr);
    let first = publish(guests::LOOKUP_V1, &tagged, Some(&alice));
    assert!(signed.add(&tagged).status.success());
    let bytes = sha256_of(guests::LOOKUP_V1);

    // The same component pushed again, unsigned: a new manifest (its `created`
    // differs), the same layer. Under require = "signed" it is not recorded.
    let unsigned = publish(guests::LOOKUP_V1, &tagged, None);
    assert_ne!(unsigned, first);
    let out = piton_in(&signed.plugins(), &["update"]);
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("not signed"), "{text}");
    assert!(text.contains("the file in place is kept"), "{text}");
    assert_eq!(
        entry(&signed.plugins(), "lookup").resolved,
        Some(first.clone())
    );

    // Pushed again and signed: recorded, without a question (nothing it may do
    // changed), the bytes as they were.
    let third = publish(guests::LOOKUP_V1, &tagged, Some(&alice));
    let out = piton_in(&signed.plugins(), &["update"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(
        said(&out),
        format!(
            "lookup: the same bytes ({bytes}) under a new manifest, {third} (was {first}): \
             recorded\n"
        )
    );
    let now = entry(&signed.plugins(), "lookup");
    assert_eq!((now.resolved, now.digest), (Some(third), bytes));
    assert!(
        now.signer
            .is_some_and(|s| s.starts_with("key alice SHA256:"))
    );
}

#[test]
fn an_oci_source_pinned_by_its_digest_is_left_as_it_is() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let tagged = format!("oci://{}/tools/lookup:1", registry.addr);
    let manifest = publish(guests::LOOKUP_V1, &tagged, None);
    let pinned = format!("oci://{}/tools/lookup@{manifest}", registry.addr);
    let folder = tempfile::tempdir().expect("temp dir");
    assert!(piton_in(folder.path(), &["add", &pinned]).status.success());
    publish(guests::LOOKUP_V3_SCHEMA, &tagged, None);
    let out = piton_in(folder.path(), &["update"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(
        said(&out),
        format!(
            "lookup: pinned ({}): {pinned} names its manifest digest: `piton add REF --name \
             lookup` with a tag or another digest moves it\n",
            sha256_of(guests::LOOKUP_V1)
        )
    );
}

#[test]
fn a_url_moves_to_a_new_version_with_its_sha256() {
    let v1 = std::fs::read(guests::LOOKUP_V1).expect("reads");
    let server = BadServer::start(|_| {
        BTreeMap::from([(
            "GET /lookup.wasm".to_owned(),
            Answer::ok("application/wasm", v1.clone()),
        )])
    });
    let url = format!("http://{}/lookup.wasm", server.addr);
    let hex = |file: &str| sha256_of(file).trim_start_matches("sha256:").to_owned();
    let folder = tempfile::tempdir().expect("temp dir");
    let out = piton_in(
        folder.path(),
        &["add", &url, "--sha256", &hex(guests::LOOKUP_V1)],
    );
    assert!(out.status.success(), "{}", said(&out));
    let v3 = std::fs::read(guests::LOOKUP_V3_SCHEMA).expect("reads");
    server.set("GET /lookup.wasm", Answer::ok("application/wasm", v3));

    // Without a new --sha256 the URL's bytes are fixed: nothing is fetched.
    let out = piton_in(folder.path(), &["update"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("lookup: pinned (sha256:")
            && said(&out).contains("`piton update lookup --sha256 HEX` with the new one"),
        "{}",
        said(&out)
    );
    // The wrong one is refused, the file kept.
    let wrong = hex(guests::LOOKUP_V2_NET);
    let out = piton_in(folder.path(), &["update", "lookup", "--sha256", &wrong]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("(--sha256) was expected"),
        "{}",
        said(&out)
    );
    assert_eq!(
        entry(folder.path(), "lookup").digest,
        sha256_of(guests::LOOKUP_V1)
    );
    // The new one: its diff (a schema change), taken by --yes.
    let new = hex(guests::LOOKUP_V3_SCHEMA);
    let out = piton_in(
        folder.path(),
        &["update", "lookup", "--sha256", &new, "--yes"],
    );
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("schema    tool lookup: input + lang"),
        "{text}"
    );
    assert_eq!(
        entry(folder.path(), "lookup").digest,
        sha256_of(guests::LOOKUP_V3_SCHEMA)
    );
}

#[test]
fn an_update_that_would_lose_the_recorded_signer_is_asked_about() {
    // pinned, with alice's key: an unsigned version is taken, but not silently in
    // place of one alice signed.
    let signed = Signed::new(&["alice"]);
    signed.trust_as("pinned", &["alice"]);
    let source = signed.source("lookup", guests::LOOKUP_V1, Some("alice"));
    let out = signed.add(source.to_str().expect("UTF-8"));
    assert!(out.status.success(), "{}", said(&out));
    let was = entry(&signed.plugins(), "lookup").signer.expect("signed");
    assert!(was.starts_with("key alice SHA256:"), "{was}");

    // A new version (its schema changed: nothing weaker), unsigned.
    std::fs::copy(guests::LOOKUP_V3_SCHEMA, &source).expect("copy");
    std::fs::remove_file(bundle_of(&source)).expect("no bundle");
    let out = piton_in(&signed.plugins(), &["update", "--yes"]);
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("signer: {was} → none")), "{text}");
    assert!(text.contains("--allow-weaker"), "{text}");
    let now = entry(&signed.plugins(), "lookup");
    assert_eq!(now.digest, sha256_of(guests::LOOKUP_V1), "kept: {text}");
    assert_eq!(now.signer.as_deref(), Some(was.as_str()));

    let out = piton_in(&signed.plugins(), &["update", "--yes", "--allow-weaker"]);
    assert!(out.status.success(), "{}", said(&out));
    let now = entry(&signed.plugins(), "lookup");
    assert_eq!(
        (now.digest, now.signer),
        (sha256_of(guests::LOOKUP_V3_SCHEMA), None)
    );
}

#[test]
fn a_new_manifest_that_would_lose_the_recorded_signer_is_not_recorded_unasked() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let signed = Signed::new(&["alice"]);
    signed.trust_as("pinned", &["alice"]);
    let alice = signed.path("alice.key");
    let tagged = format!("oci://{}/tools/lookup:1", registry.addr);
    let first = publish(guests::LOOKUP_V1, &tagged, Some(&alice));
    assert!(signed.add(&tagged).status.success());
    let was = entry(&signed.plugins(), "lookup").signer.expect("signed");

    // The same bytes pushed again, unsigned: under pinned that verifies, but the
    // signer piton.lock records would be lost.
    let unsigned = publish(guests::LOOKUP_V1, &tagged, None);
    for args in [&["update"][..], &["update", "--yes"]] {
        let out = piton_in(&signed.plugins(), args);
        let text = said(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        assert!(text.contains(&format!("signer: {was} → none")), "{text}");
        let now = entry(&signed.plugins(), "lookup");
        assert_eq!(now.resolved.as_deref(), Some(first.as_str()), "{text}");
        assert_eq!(now.signer.as_deref(), Some(was.as_str()));
    }
    let out = piton_in(&signed.plugins(), &["update", "--yes", "--allow-weaker"]);
    assert!(out.status.success(), "{}", said(&out));
    let now = entry(&signed.plugins(), "lookup");
    assert_eq!((now.resolved, now.signer), (Some(unsigned), None));
}
