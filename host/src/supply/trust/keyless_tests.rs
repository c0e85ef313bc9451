//! Keyless signatures: a Sigstore of the test's own (a CA issuing Fulcio-like
//! certificates, and a transparency log signing entry timestamps; see
//! `piton_tests::sigstore`, which the end-to-end tests use too) and cosign's own
//! keyless bundle against Sigstore's public-good root.

use piton_tests::sigstore::{FakeSigstore, NOON};

use super::*;

const ISSUER: &str = "https://issuer.example";
const SUBJECT: &str = "alice@example.com";

fn policy(sigstore: &FakeSigstore, identities: Vec<Identity>) -> TrustPolicy {
    let root = TrustedRootFile::parse("trusted_root.json".into(), sigstore.trusted_root())
        .expect("a trusted root");
    TrustPolicy {
        require: Require::Signed,
        identities,
        trusted_root: Some(root),
        ..TrustPolicy::default()
    }
}

fn alice() -> Identity {
    Identity {
        issuer: ISSUER.into(),
        subject: SUBJECT.into(),
    }
}

fn check(policy: &TrustPolicy, bytes: &[u8], bundle: Vec<u8>) -> Result<Verified, VerifyError> {
    verify(
        policy,
        "./a.wasm",
        Artifact::File(bytes),
        &[SignatureMaterial::Bundle(bundle)],
    )
}

#[test]
fn a_keyless_signature_by_a_trusted_identity_verifies() {
    let sigstore = FakeSigstore::new();
    let bundle = sigstore.bundle(&sigstore.leaf(ISSUER, SUBJECT), b"wasm", NOON);
    let verified = check(&policy(&sigstore, vec![alice()]), b"wasm", bundle).expect("verifies");
    assert_eq!(
        verified.signer.expect("signer").to_string(),
        "identity alice@example.com (issuer https://issuer.example)"
    );
}

#[test]
fn another_subject_or_issuer_is_refused_naming_both() {
    let sigstore = FakeSigstore::new();
    for (issuer, subject) in [
        (ISSUER, "mallory@example.com"),
        ("https://evil.example", SUBJECT),
    ] {
        let bundle = sigstore.bundle(&sigstore.leaf(issuer, subject), b"wasm", NOON);
        let err = check(&policy(&sigstore, vec![alice()]), b"wasm", bundle).expect_err("identity");
        assert_eq!(
            err.to_string(),
            format!(
                "./a.wasm: signed by {subject} (issuer {issuer}), expected alice@example.com \
                 (issuer https://issuer.example)"
            )
        );
    }
}

#[test]
fn a_certificate_expired_at_the_signing_time_is_refused() {
    let sigstore = FakeSigstore::new();
    let leaf = sigstore.leaf(ISSUER, SUBJECT);
    for time in [NOON + 2 * 86_400, NOON - 2 * 86_400] {
        let err = check(
            &policy(&sigstore, vec![alice()]),
            b"wasm",
            sigstore.bundle(&leaf, b"wasm", time),
        )
        .expect_err("outside the validity");
        assert!(
            err.to_string()
                .contains("does not verify against trusted_root.json"),
            "{err}"
        );
    }
}

#[test]
fn a_root_without_the_ca_is_refused() {
    let (signer, other) = (FakeSigstore::new(), FakeSigstore::new());
    let bundle = signer.bundle(&signer.leaf(ISSUER, SUBJECT), b"wasm", NOON);
    let err = check(&policy(&other, vec![alice()]), b"wasm", bundle).expect_err("untrusted CA");
    assert!(
        err.to_string()
            .contains("a keyless signature by alice@example.com"),
        "{err}"
    );
}

#[test]
fn a_keyless_signature_over_another_file_or_without_a_log_entry_is_refused() {
    let sigstore = FakeSigstore::new();
    let leaf = sigstore.leaf(ISSUER, SUBJECT);
    let policy = policy(&sigstore, vec![alice()]);
    assert!(check(&policy, b"new wasm", sigstore.bundle(&leaf, b"wasm", NOON)).is_err());
    // No signed time to hold the certificate against: refused, not checked at "now".
    let mut bundle: serde_json::Value =
        serde_json::from_slice(&sigstore.bundle(&leaf, b"wasm", NOON)).expect("json");
    bundle["verificationMaterial"]["tlogEntries"] = serde_json::json!([]);
    let err = check(&policy, b"wasm", bundle.to_string().into_bytes()).expect_err("no time");
    assert!(err.to_string().contains("does not verify"), "{err}");
    // A log promise the log did not sign.
    let mut bundle: serde_json::Value =
        serde_json::from_slice(&sigstore.bundle(&leaf, b"wasm", NOON)).expect("json");
    bundle["verificationMaterial"]["tlogEntries"][0]["integratedTime"] =
        (NOON + 60).to_string().into();
    assert!(check(&policy, b"wasm", bundle.to_string().into_bytes()).is_err());
}

#[test]
fn without_a_trusted_root_a_keyless_signature_cannot_count() {
    let sigstore = FakeSigstore::new();
    let bundle = sigstore.bundle(&sigstore.leaf(ISSUER, SUBJECT), b"wasm", NOON);
    let policy = TrustPolicy {
        trusted_root: None,
        ..policy(&sigstore, vec![alice()])
    };
    let err = check(&policy, b"wasm", bundle).expect_err("no root");
    assert!(err.to_string().contains("has no trusted_root"), "{err}");
}

#[test]
fn cosigns_keyless_bundle_verifies_against_sigstores_public_root() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/sigstore/cosign-v3-blob"
    );
    let bundle = std::fs::read(format!("{dir}/cosign-v3-blob.sigstore.json")).expect("fixture");
    let blob = std::fs::read(format!("{dir}/cosign-v3-blob.txt")).expect("fixture");
    let root = TrustedRootFile::parse(
        "public-good.json".into(),
        sigstore_verify::trust_root::SIGSTORE_PRODUCTION_TRUSTED_ROOT.to_owned(),
    )
    .expect("root");
    let signer = Identity {
        issuer: "https://github.com/login/oauth".into(),
        subject: "w.vollprecht@gmail.com".into(),
    };
    let policy = TrustPolicy {
        require: Require::Signed,
        identities: vec![signer.clone()],
        trusted_root: Some(root),
        ..TrustPolicy::default()
    };
    let verified = check(&policy, &blob, bundle.clone()).expect("cosign's bundle verifies");
    assert_eq!(verified.signer, Some(Signer::Identity(signer)));
    assert!(check(&policy, b"another blob", bundle).is_err());
}
