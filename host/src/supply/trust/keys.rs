//! Signing keys: a public key as cosign writes it (`cosign.pub`, a PEM "PUBLIC KEY":
//! ECDSA P-256, P-384 or Ed25519) and a private key as a PKCS#8 PEM "PRIVATE KEY"
//! (ECDSA P-256 or Ed25519), each known by its fingerprint.
//!
//! cosign's own private key file (`cosign.key`, "ENCRYPTED SIGSTORE PRIVATE KEY") is
//! encrypted with a password in a scheme of cosign's; piton does not read it. One key
//! serves both: make it with OpenSSL and give it to cosign with `cosign
//! import-key-pair --key key.pem`.

use std::fmt;

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use rustls_pki_types::pem::PemObject as _;
use sha2::{Digest as _, Sha256};
use sigstore_verify::crypto::{KeyAlgorithm, VerificationKey};
use sigstore_verify::types::{DerPublicKey, SignatureBytes};

/// A key that cannot be used, and what to do instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// No PEM section of the kind needed: the kind.
    #[error(
        "is not a PEM {0}; write one such as the `cosign.pub` that `cosign generate-key-pair` makes"
    )]
    NotPem(&'static str),
    /// A key of an algorithm piton does not sign or verify with: what it is.
    #[error("is a {0} key; use an ECDSA P-256 (cosign's default) or Ed25519 key")]
    Algorithm(String),
    /// Not a key at all: what the parser said.
    #[error("is not a usable key: {0}")]
    Invalid(String),
    /// cosign's own password-encrypted private key.
    #[error(
        "is cosign's encrypted private key, which piton does not read; make a PKCS#8 key \
         with `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem` \
         (give it to cosign with `cosign import-key-pair --key key.pem`)"
    )]
    CosignEncrypted,
}

/// A public key that signatures are checked with.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    der: DerPublicKey,
}

impl PublicKey {
    /// A PEM "PUBLIC KEY" (SubjectPublicKeyInfo), as `cosign.pub` holds.
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        let spki = rustls_pki_types::SubjectPublicKeyInfoDer::from_pem_slice(text.as_bytes())
            .map_err(|_| KeyError::NotPem("PUBLIC KEY"))?;
        Self::from_der(spki.as_ref())
    }

    /// A DER SubjectPublicKeyInfo.
    pub fn from_der(der: &[u8]) -> Result<Self, KeyError> {
        let der = DerPublicKey::new(der.to_vec());
        match KeyAlgorithm::from_spki(&der).map_err(|e| KeyError::Invalid(e.to_string()))? {
            KeyAlgorithm::EcdsaP256 | KeyAlgorithm::EcdsaP384 | KeyAlgorithm::Ed25519 => {}
            other => return Err(KeyError::Algorithm(format!("{other:?}"))),
        }
        VerificationKey::from_spki(&der).map_err(|e| KeyError::Invalid(e.to_string()))?;
        Ok(Self { der })
    }

    /// The key as DER SubjectPublicKeyInfo.
    pub fn der(&self) -> &DerPublicKey {
        &self.der
    }

    /// The key as PEM, as `cosign.pub` holds it.
    pub fn to_pem(&self) -> String {
        pem("PUBLIC KEY", self.der.as_bytes())
    }

    /// `SHA256:` and the hex SHA-256 of the key's DER: how messages and piton.lock
    /// name it.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint(Sha256::digest(self.der.as_bytes()).into())
    }

    /// Whether `signature` over `message` (its bytes, not a digest) is this key's.
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        super::provider::install();
        VerificationKey::from_spki(&self.der).is_ok_and(|key| {
            key.verify(message, &SignatureBytes::new(signature.to_vec()))
                .is_ok()
        })
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

/// A key's name in messages: `SHA256:` and 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SHA256:{}", hex::encode(self.0))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Fingerprint {
    /// The hint a Sigstore bundle gives for its key: base64 of the SHA-256 of the
    /// key's DER, as cosign writes it.
    pub(crate) fn hint(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }
}

/// A private key that `piton sign` signs with.
pub struct PrivateKey {
    pair: Pair,
    public: PublicKey,
}

enum Pair {
    P256(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl PrivateKey {
    /// A PEM "PRIVATE KEY" (unencrypted PKCS#8) of ECDSA P-256 or Ed25519.
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        if text.contains("ENCRYPTED SIGSTORE PRIVATE KEY")
            || text.contains("ENCRYPTED COSIGN PRIVATE KEY")
        {
            return Err(KeyError::CosignEncrypted);
        }
        let pkcs8 = rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(text.as_bytes())
            .map_err(|_| KeyError::NotPem("PRIVATE KEY (PKCS#8)"))?;
        Self::from_pkcs8(pkcs8.secret_pkcs8_der())
    }

    /// A DER PKCS#8 private key of ECDSA P-256 or Ed25519.
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, KeyError> {
        let pair = if let Ok(pair) =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, der, &SystemRandom::new())
        {
            Pair::P256(pair)
        } else if let Ok(pair) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der) {
            Pair::Ed25519(pair)
        } else {
            return Err(KeyError::Invalid(
                "not an ECDSA P-256 or Ed25519 PKCS#8 private key".into(),
            ));
        };
        let public = match &pair {
            Pair::P256(pair) => spki(P256_SPKI_PREFIX, pair.public_key().as_ref()),
            Pair::Ed25519(pair) => spki(ED25519_SPKI_PREFIX, pair.public_key().as_ref()),
        };
        Ok(Self {
            pair,
            public: PublicKey::from_der(&public)?,
        })
    }

    /// A new ECDSA P-256 key, as PKCS#8 PEM (what `piton keygen` writes).
    pub fn generate_p256_pem() -> Result<String, KeyError> {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new())
                .map_err(|_| KeyError::Invalid("the system's random source failed".into()))?;
        Ok(pem("PRIVATE KEY", pkcs8.as_ref()))
    }

    /// A new Ed25519 key, as PKCS#8 PEM.
    pub fn generate_ed25519_pem() -> Result<String, KeyError> {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
            .map_err(|_| KeyError::Invalid("the system's random source failed".into()))?;
        Ok(pem("PRIVATE KEY", pkcs8.as_ref()))
    }

    /// The public half.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// A signature over `message`: ECDSA with SHA-256 (ASN.1 DER), or Ed25519.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<Vec<u8>, KeyError> {
        match &self.pair {
            Pair::P256(pair) => pair
                .sign(&SystemRandom::new(), message)
                .map(|sig| sig.as_ref().to_vec())
                .map_err(|_| KeyError::Invalid("signing failed".into())),
            Pair::Ed25519(pair) => Ok(pair.sign(message).as_ref().to_vec()),
        }
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrivateKey({})", self.public.fingerprint())
    }
}

/// The DER of a SubjectPublicKeyInfo up to its key bits: id-ecPublicKey, prime256v1.
const P256_SPKI_PREFIX: &[u8] = &[
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];
/// The same for id-Ed25519.
const ED25519_SPKI_PREFIX: &[u8] = &[
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

fn spki(prefix: &[u8], key: &[u8]) -> Vec<u8> {
    [prefix, key].concat()
}

/// `der` as a PEM section of `label`, lines of 64.
pub(crate) fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cosign's public key of the Sigstore conformance suite's managed-key bundle.
    const CONFORMANCE_KEY: &str =
        include_str!("../../../../tests/fixtures/sigstore/managed-key/key.pub");

    #[test]
    fn a_generated_key_signs_what_its_public_half_verifies() {
        for pem in [
            PrivateKey::generate_p256_pem().expect("key"),
            PrivateKey::generate_ed25519_pem().expect("key"),
        ] {
            let key = PrivateKey::from_pem(&pem).expect("reads back");
            let public = PublicKey::from_pem(&key.public_key().to_pem()).expect("reads back");
            assert_eq!(&public, key.public_key());
            let sig = key.sign(b"bytes").expect("signs");
            assert!(public.verifies(b"bytes", &sig));
            assert!(!public.verifies(b"other bytes", &sig));
        }
    }

    #[test]
    fn cosigns_public_key_reads_and_its_fingerprint_is_the_hint_cosign_wrote() {
        let key = PublicKey::from_pem(CONFORMANCE_KEY).expect("cosign.pub");
        // The hint in the suite's bundle.sigstore.json.
        assert_eq!(
            key.fingerprint().hint(),
            "TLMsSDfG3ajPsWge+z/vX5T/zluXnmvbkTkwLIV68Tk="
        );
        assert!(key.fingerprint().to_string().starts_with("SHA256:4cb32c48"));
    }

    #[test]
    fn what_is_not_a_usable_key_is_an_error_saying_so() {
        assert_eq!(
            PublicKey::from_pem("hello"),
            Err(KeyError::NotPem("PUBLIC KEY"))
        );
        let garbage = pem("PUBLIC KEY", b"\x30\x03\x02\x01\x00");
        assert!(matches!(
            PublicKey::from_pem(&garbage),
            Err(KeyError::Invalid(_))
        ));
        assert!(matches!(
            PrivateKey::from_pem(
                "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nabc\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"
            ),
            Err(KeyError::CosignEncrypted)
        ));
        assert!(matches!(
            PrivateKey::from_pem(&pem("PRIVATE KEY", b"\x30\x00")),
            Err(KeyError::Invalid(_))
        ));
        assert!(matches!(
            PrivateKey::from_pem(CONFORMANCE_KEY),
            Err(KeyError::NotPem(_))
        ));
    }
}
