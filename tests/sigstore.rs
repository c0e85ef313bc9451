//! A Sigstore of the tests' own, for keyless signatures: a certificate authority
//! issuing Fulcio-like certificates (an email subject, the OIDC issuer in Fulcio's
//! extensions, code-signing usage) and a transparency log that signs each entry's
//! time, as Rekor does. It writes the `trusted_root.json` naming both and the
//! Sigstore bundles `cosign sign-blob --bundle` would write after a keyless login,
//! so that piton's unit tests and its end-to-end tests check the same material.
//!
//! ```
//! use piton_tests::sigstore::{FakeSigstore, NOON};
//!
//! let sigstore = FakeSigstore::new();
//! let leaf = sigstore.leaf("https://issuer.example", "alice@example.com");
//! let bundle = sigstore.bundle(&leaf, b"component bytes", NOON);
//! assert!(String::from_utf8(bundle).expect("JSON").contains("hashedrekord"));
//! assert!(sigstore.trusted_root().contains("certificateAuthorities"));
//! ```

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType, date_time_ymd,
};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};
use sha2::{Digest as _, Sha256};

/// 2025-01-01T12:00:00Z, in seconds: a time within every leaf's day of validity.
pub const NOON: i64 = 1_735_732_800;

/// A certificate authority and a transparency log, as Fulcio and Rekor are.
pub struct FakeSigstore {
    ca: Issuer<'static, KeyPair>,
    ca_der: Vec<u8>,
    log: EcdsaKeyPair,
    log_spki: Vec<u8>,
}

/// A leaf certificate and its key.
pub struct Leaf {
    der: Vec<u8>,
    key: EcdsaKeyPair,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = b64(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn ring_key(key: &KeyPair) -> EcdsaKeyPair {
    EcdsaKeyPair::from_pkcs8(
        &ECDSA_P256_SHA256_ASN1_SIGNING,
        &key.serialize_der(),
        &SystemRandom::new(),
    )
    .expect("a P-256 key")
}

impl Default for FakeSigstore {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeSigstore {
    /// A new CA (valid 2020 to 2040) and log, with keys of their own.
    pub fn new() -> Self {
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
    pub fn trusted_root(&self) -> String {
        let log_id = b64(&sha256(&self.log_spki));
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
    pub fn leaf(&self, issuer: &str, subject: &str) -> Leaf {
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![SanType::Rfc822Name(subject.try_into().expect("email"))];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.not_before = date_time_ymd(2025, 1, 1);
        params.not_after = date_time_ymd(2025, 1, 2);
        // The OIDC issuer, in Fulcio's extension: raw (.1.1) and as a UTF8String (.1.8).
        let mut utf8 = vec![0x0c, u8::try_from(issuer.len()).expect("a short issuer")];
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

    /// A bundle of `leaf`'s signature over `bytes`, logged at `time` (seconds since
    /// the epoch; [`NOON`] is within the leaf's validity).
    pub fn bundle(&self, leaf: &Leaf, bytes: &[u8], time: i64) -> Vec<u8> {
        let rng = SystemRandom::new();
        let signature = leaf.key.sign(&rng, bytes).expect("signs");
        let digest = sha256(bytes);
        let cert_pem = pem("CERTIFICATE", &leaf.der);
        let body = serde_json::json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hex::encode(digest)}},
                "signature": {
                    "content": b64(signature.as_ref()),
                    "publicKey": {"content": b64(cert_pem.as_bytes())},
                },
            },
        })
        .to_string();
        let log_id = sha256(&self.log_spki);
        // What the log signs (RFC 8785 canonical JSON: keys in order).
        let promise = format!(
            r#"{{"body":"{}","integratedTime":{time},"logID":"{}","logIndex":7}}"#,
            b64(body.as_bytes()),
            hex::encode(log_id)
        );
        let set = self.log.sign(&rng, promise.as_bytes()).expect("signs");
        serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {
                "certificate": {"rawBytes": b64(&leaf.der)},
                "tlogEntries": [{
                    "logIndex": "7",
                    "logId": {"keyId": b64(&log_id)},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": time.to_string(),
                    "inclusionPromise": {"signedEntryTimestamp": b64(set.as_ref())},
                    "canonicalizedBody": b64(body.as_bytes()),
                }],
            },
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": b64(&digest)},
                "signature": b64(signature.as_ref()),
            },
        })
        .to_string()
        .into_bytes()
    }
}
