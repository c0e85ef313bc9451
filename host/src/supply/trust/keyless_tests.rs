//! Keyless signatures: a Sigstore of the test's own (a CA issuing Fulcio-like
//! certificates, and a transparency log signing entry timestamps) and cosign's own
//! keyless bundle against Sigstore's public-good root.

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType, date_time_ymd,
};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};

use super::*;

const ISSUER: &str = "https://issuer.example";
const SUBJECT: &str = "alice@example.com";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn ring_key(key: &KeyPair) -> EcdsaKeyPair {
    EcdsaKeyPair::from_pkcs8(
        &ECDSA_P256_SHA256_ASN1_SIGNING,
        &key.serialize_der(),
        &SystemRandom::new(),
    )
    .expect("a P-256 key")
}

/// A certificate authority and a transparency log, as Fulcio and Rekor are.
pub(super) struct FakeSigstore {
    ca: Issuer<'static, KeyPair>,
    ca_der: Vec<u8>,
    log: EcdsaKeyPair,
    log_spki: Vec<u8>,
}

/// A leaf certificate and its key.
pub(super) struct Leaf {
    der: Vec<u8>,
    key: EcdsaKeyPair,
}

impl FakeSigstore {
    pub(super) fn new() -> Self {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params
            .distinguished_name
            .push(DnType::CommonName, "test sigstore");
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2040, 1, 1);
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("key");
        let ca_der = params.self_signed(&key).expect("CA").der().to_vec();
        let log = ring_key(&KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("key"));
        // The log key's SubjectPublicKeyInfo: the P-256 prefix, then its point.
        let mut log_spki = vec![
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
            0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
        ];
        log_spki.extend_from_slice(log.public_key().as_ref());
        Self {
            ca: Issuer::new(params, key),
            ca_der,
            log,
            log_spki,
        }
    }

    /// The trusted_root.json naming this CA and log.
    pub(super) fn trusted_root(&self) -> String {
        let log_id = b64(&Digest::of(&self.log_spki).0);
        serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [{
                "baseUrl": "https://log.example",
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": b64(&self.log_spki),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": "2020-01-01T00:00:00Z"},
                },
                "logId": {"keyId": log_id},
            }],
            "certificateAuthorities": [{
                "subject": {"organization": "test", "commonName": "test sigstore"},
                "uri": "https://ca.example",
                "certChain": {"certificates": [{"rawBytes": b64(&self.ca_der)}]},
                "validFor": {"start": "2020-01-01T00:00:00Z"},
            }],
            "ctlogs": [],
            "timestampAuthorities": [],
        })
        .to_string()
    }

    /// A Fulcio-like certificate for `subject` (an email) from `issuer`, valid on
    /// 2025-01-01 only.
    pub(super) fn leaf(&self, issuer: &str, subject: &str) -> Leaf {
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![SanType::Rfc822Name(subject.try_into().expect("email"))];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.not_before = date_time_ymd(2025, 1, 1);
        params.not_after = date_time_ymd(2025, 1, 2);
        // The OIDC issuer, in Fulcio's extension: raw (.1.1) and as a UTF8String (.1.8).
        let mut utf8 = vec![0x0c, issuer.len() as u8];
        utf8.extend_from_slice(issuer.as_bytes());
        params.custom_extensions = vec![
            CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, 1], issuer.into()),
            CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, 8], utf8),
        ];
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("key");
        let der = params
            .signed_by(&key, &self.ca)
            .expect("leaf")
            .der()
            .to_vec();
        Leaf {
            der,
            key: ring_key(&key),
        }
    }

    /// A bundle of `leaf`'s signature over `bytes`, logged at `time` (seconds).
    pub(super) fn bundle(&self, leaf: &Leaf, bytes: &[u8], time: i64) -> Vec<u8> {
        let rng = SystemRandom::new();
        let signature = leaf.key.sign(&rng, bytes).expect("signs");
        let digest = Digest::of(bytes);
        let cert_pem = super::keys::pem("CERTIFICATE", &leaf.der);
        let body = serde_json::json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": digest.hex()}},
                "signature": {
                    "content": b64(signature.as_ref()),
                    "publicKey": {"content": b64(cert_pem.as_bytes())},
                },
            },
        })
        .to_string();
        let log_id = Digest::of(&self.log_spki);
        // What the log signs (RFC 8785 canonical JSON: keys in order).
        let promise = format!(
            r#"{{"body":"{}","integratedTime":{time},"logID":"{}","logIndex":7}}"#,
            b64(body.as_bytes()),
            log_id.hex()
        );
        let set = self.log.sign(&rng, promise.as_bytes()).expect("signs");
        serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {
                "certificate": {"rawBytes": b64(&leaf.der)},
                "tlogEntries": [{
                    "logIndex": "7",
                    "logId": {"keyId": b64(&log_id.0)},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": time.to_string(),
                    "inclusionPromise": {"signedEntryTimestamp": b64(set.as_ref())},
                    "canonicalizedBody": b64(body.as_bytes()),
                }],
            },
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": b64(&digest.0)},
                "signature": b64(signature.as_ref()),
            },
        })
        .to_string()
        .into_bytes()
    }
}

/// 2025-01-01T12:00:00Z, when the leaves are valid.
const NOON: i64 = 1_735_732_800;

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
