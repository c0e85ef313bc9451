//! The cryptography sigstore-verify calls through its `CryptoProvider` trait, given by
//! ring (hashes, and signatures over a message: what certificate chains, log promises
//! and Ed25519 need) and by RustCrypto's p256 and p384 (ECDSA over a digest already
//! computed, which ring does not offer, and which a bundle's `messageSignature` over a
//! file's SHA-256 needs). Nothing here implements a primitive: each function hands
//! bytes to one of those crates and maps its answer.

use std::sync::Once;

use p256::ecdsa::signature::hazmat::PrehashVerifier;
use ring::digest;
use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use sigstore_verify::crypto::provider::{CryptoProvider, HashContext};
use sigstore_verify::crypto::{Error, Result, SigningScheme};
use sigstore_verify::types::HashAlgorithm;

/// The provider, installed once for the process before the first verification.
pub(super) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err: another provider came first (an embedding program's own); it serves.
        let _ = sigstore_verify::crypto::provider::install_default_provider(&RING);
    });
}

static RING: RingProvider = RingProvider;

#[derive(Debug)]
struct RingProvider;

struct RingHash(digest::Context);

impl HashContext for RingHash {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn finalize(self: Box<Self>) -> Vec<u8> {
        self.0.finish().as_ref().to_vec()
    }
}

fn ring_hash(algorithm: HashAlgorithm) -> Result<&'static digest::Algorithm> {
    match algorithm {
        HashAlgorithm::Sha2256 => Ok(&digest::SHA256),
        HashAlgorithm::Sha2384 => Ok(&digest::SHA384),
        HashAlgorithm::Sha2512 => Ok(&digest::SHA512),
        other => Err(Error::UnsupportedAlgorithm(format!(
            "cannot compute {other} digests"
        ))),
    }
}

fn verification(scheme: SigningScheme) -> Result<&'static dyn VerificationAlgorithm> {
    Ok(match scheme {
        SigningScheme::EcdsaP256Sha256 => &signature::ECDSA_P256_SHA256_ASN1,
        SigningScheme::EcdsaP256Sha384 => &signature::ECDSA_P256_SHA384_ASN1,
        SigningScheme::EcdsaP384Sha256 => &signature::ECDSA_P384_SHA256_ASN1,
        SigningScheme::EcdsaP384Sha384 => &signature::ECDSA_P384_SHA384_ASN1,
        SigningScheme::Ed25519 => &signature::ED25519,
        SigningScheme::RsaPssSha256 => &signature::RSA_PSS_2048_8192_SHA256,
        SigningScheme::RsaPssSha384 => &signature::RSA_PSS_2048_8192_SHA384,
        SigningScheme::RsaPssSha512 => &signature::RSA_PSS_2048_8192_SHA512,
        SigningScheme::RsaPkcs1Sha256 => &signature::RSA_PKCS1_2048_8192_SHA256,
        SigningScheme::RsaPkcs1Sha384 => &signature::RSA_PKCS1_2048_8192_SHA384,
        SigningScheme::RsaPkcs1Sha512 => &signature::RSA_PKCS1_2048_8192_SHA512,
        other => return Err(unsupported(other)),
    })
}

fn unsupported(scheme: SigningScheme) -> Error {
    Error::UnsupportedAlgorithm(format!("{} signatures are not supported", scheme.name()))
}

fn invalid(scheme: SigningScheme) -> Error {
    Error::Verification(format!("{} signature invalid", scheme.name()))
}

impl CryptoProvider for RingProvider {
    fn hash(&self, algorithm: HashAlgorithm) -> Result<Box<dyn HashContext>> {
        Ok(Box::new(RingHash(digest::Context::new(ring_hash(
            algorithm,
        )?))))
    }

    fn sha256(&self, data: &[u8]) -> [u8; 32] {
        let mut out = [0; 32];
        out.copy_from_slice(digest::digest(&digest::SHA256, data).as_ref());
        out
    }

    fn sha384(&self, data: &[u8]) -> [u8; 48] {
        let mut out = [0; 48];
        out.copy_from_slice(digest::digest(&digest::SHA384, data).as_ref());
        out
    }

    fn sha512(&self, data: &[u8]) -> [u8; 64] {
        let mut out = [0; 64];
        out.copy_from_slice(digest::digest(&digest::SHA512, data).as_ref());
        out
    }

    fn verify_raw(
        &self,
        scheme: SigningScheme,
        spki_pubkey_bytes: &[u8],
        data: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        UnparsedPublicKey::new(verification(scheme)?, spki_pubkey_bytes)
            .verify(data, signature)
            .map_err(|_| invalid(scheme))
    }

    fn verify_prehashed(
        &self,
        scheme: SigningScheme,
        spki_pubkey_bytes: &[u8],
        digest: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        match scheme {
            SigningScheme::EcdsaP256Sha256 | SigningScheme::EcdsaP256Sha384 => {
                let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(spki_pubkey_bytes)
                    .map_err(|_| invalid(scheme))?;
                let signature =
                    p256::ecdsa::Signature::from_der(signature).map_err(|_| invalid(scheme))?;
                key.verify_prehash(digest, &signature)
                    .map_err(|_| invalid(scheme))
            }
            SigningScheme::EcdsaP384Sha256 | SigningScheme::EcdsaP384Sha384 => {
                let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(spki_pubkey_bytes)
                    .map_err(|_| invalid(scheme))?;
                let signature =
                    p384::ecdsa::Signature::from_der(signature).map_err(|_| invalid(scheme))?;
                key.verify_prehash(digest, &signature)
                    .map_err(|_| invalid(scheme))
            }
            other => Err(unsupported(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};

    fn p256_pair() -> EcdsaKeyPair {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).expect("key");
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .expect("key")
    }

    #[test]
    fn ecdsa_over_a_digest_verifies_what_ring_signed_over_the_message_and_nothing_else() {
        let pair = p256_pair();
        let message = b"a component";
        let sig = pair.sign(&SystemRandom::new(), message).expect("signs");
        let public = pair.public_key().as_ref();
        let scheme = SigningScheme::EcdsaP256Sha256;
        let digest = RING.sha256(message);
        assert!(
            RING.verify_prehashed(scheme, public, &digest, sig.as_ref())
                .is_ok()
        );
        assert!(
            RING.verify_raw(scheme, public, message, sig.as_ref())
                .is_ok()
        );
        let other = RING.sha256(b"another component");
        assert!(
            RING.verify_prehashed(scheme, public, &other, sig.as_ref())
                .is_err()
        );
        assert!(RING.verify_raw(scheme, public, b"x", sig.as_ref()).is_err());
    }

    #[test]
    fn hostile_keys_and_signatures_are_errors_not_panics() {
        for scheme in [
            SigningScheme::EcdsaP256Sha256,
            SigningScheme::EcdsaP384Sha384,
            SigningScheme::Ed25519,
            SigningScheme::RsaPkcs1Sha256,
            SigningScheme::MlDsa44,
        ] {
            for (key, sig) in [(&[][..], &[][..]), (&[4; 65][..], &[0x30, 0x99][..])] {
                assert!(RING.verify_raw(scheme, key, b"m", sig).is_err());
                assert!(RING.verify_prehashed(scheme, key, &[0; 32], sig).is_err());
            }
        }
        assert!(RING.hash(HashAlgorithm::Sha2256).is_ok());
    }
}
