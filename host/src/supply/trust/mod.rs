//! Signatures on components, verified in process: no `cosign` binary, no network.
//!
//! What is checked, by where the component comes from:
//!
//! - a file (local or `https://`): a Sigstore bundle beside it,
//!   `FILE.wasm.sigstore.json` ([`bundle`]), key-based as `cosign sign-blob --key K
//!   --bundle B` makes it and as [`sign_blob`] (`piton sign`) makes it, or keyless
//!   (a Fulcio certificate, checked against piton.toml's `trusted_root`);
//! - an OCI image: cosign's key-based signatures in the `sha256-HEX.sig` tag
//!   ([`cosign_oci`]).
//!
//! ```
//! use piton_host::supply::trust::{self, Artifact, NamedKey, PrivateKey, Require,
//!     SignatureMaterial, TrustPolicy};
//!
//! let key = PrivateKey::from_pem(&PrivateKey::generate_p256_pem()?)?;
//! let wasm = b"\0asm...";
//! let bundle = trust::sign_blob(wasm, &key)?;
//! let policy = TrustPolicy {
//!     require: Require::Signed,
//!     keys: vec![NamedKey { name: "alice".into(), key: key.public_key().clone() }],
//!     ..TrustPolicy::default()
//! };
//! let signed = [SignatureMaterial::Bundle(bundle.into_bytes())];
//! let verified = trust::verify(&policy, "./tool.wasm", Artifact::File(wasm), &signed)?;
//! assert!(verified.signer.expect("signed").to_string().starts_with("key alice SHA256:"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The crate: sigstore-verify (the Sigstore project's Rust verifier), without its
//! default features, so without aws-lc, TLS or TUF; [`provider`] gives it ring and
//! RustCrypto's p256/p384. The older `sigstore` crate's verification pulls in its
//! Fulcio/OIDC client (reqwest, openidconnect) and openssl or aws-lc; hand-written
//! certificate and bundle checks were the other choice, and the one the issue rules
//! out. It adds about a minute and a half to a clean build (48 s of CPU), most of it
//! the RustCrypto ASN.1 and elliptic-curve crates.

pub mod bundle;
pub mod cosign_oci;
mod digest;
mod keys;
mod policy;
mod provider;
mod signer;

pub use self::bundle::sign_blob;
pub use self::cosign_oci::SimpleSignature;
pub use self::digest::{Digest, DigestError};
pub use self::keys::{Fingerprint, KeyError, PrivateKey, PublicKey};
pub use self::policy::{
    Identity, NamedKey, Require, Rule, SourceRule, TrustPolicy, TrustedRootFile,
};
pub use self::signer::Signer;

/// What was signed.
#[derive(Clone, Copy, Debug)]
pub enum Artifact<'a> {
    /// A component file's bytes (from a folder or a URL).
    File(&'a [u8]),
    /// An OCI image manifest: its repository (`registry.example/team/tool`, without
    /// tag or digest) and digest.
    OciManifest {
        /// The repository, as cosign's payload names it.
        repository: &'a str,
        /// The manifest's digest.
        digest: &'a Digest,
    },
}

/// A signature as fetched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureMaterial {
    /// The JSON of a Sigstore bundle (`FILE.wasm.sigstore.json`).
    Bundle(Vec<u8>),
    /// cosign's signature of an OCI manifest.
    Simple(SimpleSignature),
}

/// What [`verify`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Who signed it; `None` when no signature was needed and none counted.
    pub signer: Option<Signer>,
}

/// A component refused by the trust policy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// No signature, and the policy requires one.
    #[error("{component}: not signed, and piton.toml's [trust] requires a signature by {expected}")]
    Unsigned {
        /// The component's source.
        component: String,
        /// The signers that would count.
        expected: String,
    },
    /// Signatures, none of which verifies as one of the expected signers'.
    #[error("{component}: {}, expected {expected}", found.join("; "))]
    NotVerified {
        /// The component's source.
        component: String,
        /// The signers that would count.
        expected: String,
        /// Each signature: whose it is and why it does not count.
        found: Vec<String>,
    },
}

/// Checks `signatures` on `artifact` from `source` against `policy`.
///
/// Under `require = "signed"` one of them must verify as a signature of a key or an
/// identity the policy names for this source. Under `pinned` or `any` none is needed;
/// but when there are some, and the policy names keys or identities for this source,
/// one of them must verify: a component whose signature does not verify is refused.
pub fn verify(
    policy: &TrustPolicy,
    source: &str,
    artifact: Artifact<'_>,
    signatures: &[SignatureMaterial],
) -> Result<Verified, VerifyError> {
    provider::install();
    let rule = policy.rule_for(source);
    let expected = || match rule.require {
        Require::Signed => rule.expected(),
        _ => format!("{} (or no signature)", rule.expected()),
    };
    if signatures.is_empty() {
        return match rule.require {
            Require::Signed => Err(VerifyError::Unsigned {
                component: source.to_owned(),
                expected: rule.expected(),
            }),
            _ => Ok(Verified { signer: None }),
        };
    }
    if rule.require != Require::Signed && !rule.has_signers() {
        return Ok(Verified { signer: None });
    }
    let mut found = Vec::new();
    for signature in signatures {
        let checked = match (signature, artifact) {
            (SignatureMaterial::Bundle(json), Artifact::File(bytes)) => {
                bundle::verify_bundle(&rule, policy.trusted_root.as_ref(), bytes, json)
            }
            (SignatureMaterial::Simple(simple), Artifact::OciManifest { repository, digest }) => {
                cosign_oci::verify_simple(&rule, repository, digest, simple)
            }
            (SignatureMaterial::Bundle(_), Artifact::OciManifest { .. }) => {
                Err("a Sigstore bundle, which piton does not read for an OCI image".to_owned())
            }
            (SignatureMaterial::Simple(_), Artifact::File(_)) => {
                Err("an OCI image signature, for a file".to_owned())
            }
        };
        match checked {
            Ok(signer) => {
                return Ok(Verified {
                    signer: Some(signer),
                });
            }
            Err(why) => found.push(why),
        }
    }
    Err(VerifyError::NotVerified {
        component: source.to_owned(),
        expected: expected(),
        found,
    })
}

#[cfg(test)]
mod keyless_tests;
#[cfg(test)]
mod tests;
