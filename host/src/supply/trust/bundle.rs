//! Sigstore bundles (`FILE.wasm.sigstore.json`) over a file's bytes: made by
//! [`sign_blob`] as `cosign sign-blob --bundle` makes them with a key.
//!
//! A key-based bundle is checked here: its `messageDigest` must be the file's SHA-256
//! and its signature over the file must verify with one of the keys. Its transparency
//! log entries and timestamps, if any, are not checked: a key's signature needs no
//! time (and `cosign sign-blob --key --tlog-upload=false`, like `piton sign`, makes
//! bundles with neither, which sigstore-verify does not take).
//!
//! A keyless bundle is checked by the Sigstore project's own verifier
//! (sigstore-verify).
//!
//! A keyless bundle is checked against the trusted root: the certificate chains to
//! one of its certificate authorities and has the code-signing usage, and it was valid
//! at the signing time, which must be vouched for by the root's transparency log (a
//! signed entry timestamp, whose log entry must describe this very signature) or by
//! its timestamp authority: a bundle with neither is refused, as there is then no
//! time to hold the short-lived certificate against. A log entry's Merkle inclusion
//! proof and checkpoint are checked when the bundle has them. Certificate
//! transparency (SCTs) is not checked.

use sigstore_verify::crypto::parse_certificate_info;
use sigstore_verify::types::bundle::{SignatureContent, VerificationMaterialContent};
use sigstore_verify::types::{Bundle, HashAlgorithm};
use sigstore_verify::{VerificationPolicy, Verifier};

use super::digest::Digest;
use super::keys::{KeyError, PrivateKey};
use super::policy::{Identity, NamedKey, Rule, TrustedRootFile};
use super::signer::Signer;

/// The most bytes of bundle JSON read: real ones are a few KiB.
pub const MAX_BUNDLE: usize = 1 << 20;

/// A Sigstore bundle (v0.3 JSON) of `key`'s signature over `bytes`, as `cosign
/// sign-blob --bundle` writes with a key and no transparency log upload: the
/// `messageSignature` (ECDSA P-256 with SHA-256 in ASN.1 DER, or Ed25519) over the
/// file, its SHA-256, and the key's hint.
pub fn sign_blob(bytes: &[u8], key: &PrivateKey) -> Result<String, KeyError> {
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let signature = key.sign(bytes)?;
    let bundle = serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "publicKey": { "hint": key.public_key().fingerprint().hint() },
        },
        "messageSignature": {
            "messageDigest": { "algorithm": "SHA2_256", "digest": b64(&Digest::of(bytes).0) },
            "signature": b64(&signature),
        },
    });
    Ok(format!("{bundle:#}\n"))
}

/// Checks `json` as a bundle over `bytes` under `rule`: the signer, or what was found
/// instead (the signer it names and why it does not count).
pub(super) fn verify_bundle(
    rule: &Rule<'_>,
    root: Option<&TrustedRootFile>,
    bytes: &[u8],
    json: &[u8],
) -> Result<Signer, String> {
    if json.len() > MAX_BUNDLE {
        return Err(format!(
            "a bundle of {} bytes, over the {MAX_BUNDLE} read",
            json.len()
        ));
    }
    let text = std::str::from_utf8(json).map_err(|_| "a bundle that is not UTF-8".to_owned())?;
    let bundle =
        Bundle::from_json(text).map_err(|e| format!("a bundle that cannot be read: {e}"))?;
    match &bundle.verification_material.content {
        VerificationMaterialContent::PublicKey(hint) => by_key(rule, bytes, &bundle, &hint.hint),
        _ => keyless(rule, root, bytes, &bundle),
    }
}

fn by_key(rule: &Rule<'_>, bytes: &[u8], bundle: &Bundle, hint: &str) -> Result<Signer, String> {
    let named = rule
        .keys
        .iter()
        .find(|k| k.key.fingerprint().hint() == hint);
    let found = match named {
        Some(k) => format!("key {k}"),
        None => hint_name(hint),
    };
    let SignatureContent::MessageSignature(message) = &bundle.content else {
        return Err(format!(
            "{found} over a DSSE envelope, which piton does not read"
        ));
    };
    if let Some(digest) = &message.message_digest {
        let same = digest.algorithm == HashAlgorithm::Sha2256
            && digest.digest.as_bytes() == Digest::of(bytes).0;
        if !same {
            let theirs = match digest.algorithm {
                HashAlgorithm::Sha2256 => {
                    format!("sha256:{}", hex::encode(digest.digest.as_bytes()))
                }
                other => other.to_string(),
            };
            return Err(format!("{found}, over another digest ({theirs})"));
        }
    }
    let signature = message.signature.as_bytes();
    // A bundle whose hint names none of the keys is still tried with each: cosign
    // does not require the hint.
    match named {
        Some(k) if k.key.verifies(bytes, signature) => Ok(key_signer(k)),
        Some(_) => Err(format!("{found}, whose signature does not verify")),
        None => match rule.keys.iter().find(|k| k.key.verifies(bytes, signature)) {
            Some(k) => Ok(key_signer(k)),
            None => Err(format!("signed by {found}")),
        },
    }
}

fn key_signer(key: &NamedKey) -> Signer {
    Signer::Key {
        name: key.name.clone(),
        fingerprint: key.key.fingerprint(),
    }
}

/// A key known only by a bundle's hint, in the form fingerprints are shown.
fn hint_name(hint: &str) -> String {
    use base64::Engine as _;
    match base64::engine::general_purpose::STANDARD.decode(hint) {
        Ok(bytes) if bytes.len() == 32 => format!("key SHA256:{}", hex::encode(bytes)),
        _ => "a key piton does not know (no hint in the bundle)".to_owned(),
    }
}

fn keyless(
    rule: &Rule<'_>,
    root: Option<&TrustedRootFile>,
    bytes: &[u8],
    bundle: &Bundle,
) -> Result<Signer, String> {
    let cert = bundle
        .signing_certificate()
        .ok_or_else(|| "a bundle with neither a key hint nor a certificate".to_owned())?;
    let info = parse_certificate_info(cert)
        .map_err(|e| format!("a bundle whose certificate cannot be read: {e}"))?;
    let found = Identity {
        issuer: info.issuer.clone().unwrap_or_else(|| "(none)".into()),
        subject: info
            .identity
            .as_ref()
            .map_or_else(|| "(none)".into(), |s| s.to_string()),
    };
    let Some(root) = root else {
        return Err(format!(
            "a keyless signature by {found}, and piton.toml's [trust] has no trusted_root to check it with"
        ));
    };
    let mut policy = VerificationPolicy::any_identity().skip_sct();
    if !bundle.has_inclusion_proof() {
        policy = policy.skip_tlog_unsafe();
    }
    let verifier =
        Verifier::new(&root.root).map_err(|e| format!("{}: {e}", root.path.display()))?;
    verifier.verify(bytes, bundle, &policy).map_err(|e| {
        format!(
            "a keyless signature by {found} that does not verify against {}: {e}",
            root.path.display()
        )
    })?;
    if rule.identities.iter().any(|want| **want == found) {
        Ok(Signer::Identity(found))
    } else {
        Err(format!("signed by {found}"))
    }
}
