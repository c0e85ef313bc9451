//! cosign's signatures on OCI images, as `cosign sign --key` stores them: a
//! "simple signing" payload naming the image's repository and manifest digest, signed
//! with the key, stored as the one layer of a manifest tagged `sha256-HEX.sig` in the
//! same repository, the signature in the layer's `dev.cosignproject.cosign/signature`
//! annotation. Pure functions: the registry client pushes and pulls what they make
//! and read.
//!
//! Keyless signatures in this form (a certificate in `dev.sigstore.cosign/certificate`)
//! are not read.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::digest::Digest;
use super::keys::{KeyError, PrivateKey};
use super::policy::Rule;
use super::signer::Signer;

/// The payload's `type`.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The media type of the payload layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The most payload bytes read: real ones are a few hundred.
pub const MAX_PAYLOAD: u64 = 64 << 10;
/// The most manifest bytes read.
pub const MAX_MANIFEST: usize = 1 << 20;

const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// One signature: the payload's bytes and the base64 signature over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleSignature {
    /// The simple signing JSON, exactly as signed.
    pub payload: Vec<u8>,
    /// The base64 signature over `payload`.
    pub signature: String,
}

#[derive(Serialize, Deserialize)]
struct Payload {
    critical: Critical,
    optional: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
struct Critical {
    identity: PayloadIdentity,
    image: PayloadImage,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct PayloadIdentity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Serialize, Deserialize)]
struct PayloadImage {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// The payload cosign signs for the manifest `digest` in `repository`
/// (`registry.example/team/tool`, no tag), byte for byte as cosign writes it.
pub fn payload(repository: &str, digest: &Digest) -> Vec<u8> {
    let payload = Payload {
        critical: Critical {
            identity: PayloadIdentity {
                docker_reference: repository.to_owned(),
            },
            image: PayloadImage {
                docker_manifest_digest: digest.to_string(),
            },
            kind: PAYLOAD_TYPE.to_owned(),
        },
        optional: None,
    };
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// `key`'s signature of the manifest `digest` in `repository`.
pub fn sign_manifest(
    repository: &str,
    digest: &Digest,
    key: &PrivateKey,
) -> Result<SimpleSignature, KeyError> {
    let payload = payload(repository, digest);
    let signature = base64::engine::general_purpose::STANDARD.encode(key.sign(&payload)?);
    Ok(SimpleSignature { payload, signature })
}

/// The tag cosign stores the signatures of the manifest `digest` under.
pub fn signature_tag(digest: &Digest) -> String {
    format!("sha256-{}.sig", digest.hex())
}

/// What is wrong with a signature manifest or layer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// Not the JSON of an OCI image manifest: why.
    #[error("the signature manifest is not an OCI image manifest: {0}")]
    NotAManifest(String),
    /// A payload layer larger than [`MAX_PAYLOAD`]: its stated size.
    #[error("a signature payload of {0} bytes, over the {MAX_PAYLOAD} read")]
    TooLarge(u64),
    /// A payload whose bytes are not the layer's digest or size.
    #[error("a signature payload whose bytes do not match its digest {0}")]
    DigestMismatch(Digest),
}

/// A signature layer read from the manifest, its payload still to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureLayer {
    /// The payload blob's digest.
    pub digest: Digest,
    /// Its size, at most [`MAX_PAYLOAD`].
    pub size: u64,
    /// The base64 signature.
    pub signature: String,
}

impl SignatureLayer {
    /// The signature, given the payload blob fetched by [`Self::digest`].
    pub fn with_payload(&self, payload: Vec<u8>) -> Result<SimpleSignature, ManifestError> {
        if payload.len() as u64 != self.size || Digest::of(&payload) != self.digest {
            return Err(ManifestError::DigestMismatch(self.digest));
        }
        Ok(SimpleSignature {
            payload,
            signature: self.signature.clone(),
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    schema_version: u32,
    #[serde(default)]
    media_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: String,
    size: u64,
    digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

/// The signature layers of a `sha256-HEX.sig` manifest; layers of other media types or
/// without a signature are passed over.
pub fn decode_manifest(manifest: &[u8]) -> Result<Vec<SignatureLayer>, ManifestError> {
    if manifest.len() > MAX_MANIFEST {
        return Err(ManifestError::NotAManifest(format!(
            "{} bytes",
            manifest.len()
        )));
    }
    let manifest: Manifest =
        serde_json::from_slice(manifest).map_err(|e| ManifestError::NotAManifest(e.to_string()))?;
    let mut out = Vec::new();
    for layer in manifest.layers {
        let signature = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(SIGNATURE_ANNOTATION));
        let (PAYLOAD_MEDIA_TYPE, Some(signature)) = (layer.media_type.as_str(), signature) else {
            continue;
        };
        if layer.size > MAX_PAYLOAD {
            return Err(ManifestError::TooLarge(layer.size));
        }
        let digest =
            Digest::parse(&layer.digest).map_err(|e| ManifestError::NotAManifest(e.to_string()))?;
        out.push(SignatureLayer {
            digest,
            size: layer.size,
            signature: signature.clone(),
        });
    }
    Ok(out)
}

/// The blobs of a signature image to push under [`signature_tag`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureImage {
    /// The manifest (media type `application/vnd.oci.image.manifest.v1+json`).
    pub manifest: Vec<u8>,
    /// The config blob it names.
    pub config: Vec<u8>,
    /// The payload blobs, one a signature, in the manifest's order.
    pub layers: Vec<Vec<u8>>,
}

/// The image cosign would push for `signatures`.
pub fn encode_manifest(signatures: &[SimpleSignature]) -> SignatureImage {
    let diff_ids: Vec<String> = signatures
        .iter()
        .map(|s| Digest::of(&s.payload).to_string())
        .collect();
    let config = serde_json::json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "config": {},
    })
    .to_string()
    .into_bytes();
    let layers = signatures
        .iter()
        .map(|s| Descriptor {
            media_type: PAYLOAD_MEDIA_TYPE.to_owned(),
            size: s.payload.len() as u64,
            digest: Digest::of(&s.payload).to_string(),
            annotations: Some([(SIGNATURE_ANNOTATION.to_owned(), s.signature.clone())].into()),
        })
        .collect();
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        config: Descriptor {
            media_type: CONFIG_MEDIA_TYPE.to_owned(),
            size: config.len() as u64,
            digest: Digest::of(&config).to_string(),
            annotations: None,
        },
        layers,
    };
    SignatureImage {
        manifest: serde_json::to_vec(&manifest).unwrap_or_default(),
        config,
        layers: signatures.iter().map(|s| s.payload.clone()).collect(),
    }
}

/// Checks `signature` as one over the manifest `digest` in `repository` under
/// `rule`: the signer, or what was found instead.
pub(super) fn verify_simple(
    rule: &Rule<'_>,
    repository: &str,
    digest: &Digest,
    signature: &SimpleSignature,
) -> Result<Signer, String> {
    if signature.payload.len() as u64 > MAX_PAYLOAD {
        return Err(ManifestError::TooLarge(signature.payload.len() as u64).to_string());
    }
    let Ok(sig) = base64::engine::general_purpose::STANDARD.decode(signature.signature.trim())
    else {
        return Err("a signature that is not base64".to_owned());
    };
    let Some(key) = rule
        .keys
        .iter()
        .find(|k| k.key.verifies(&signature.payload, &sig))
    else {
        return Err("a signature by none of the keys".to_owned());
    };
    let found = format!("key {key}");
    let payload: Payload = serde_json::from_slice(&signature.payload)
        .map_err(|e| format!("{found} over a payload that cannot be read: {e}"))?;
    if payload.critical.kind != PAYLOAD_TYPE {
        return Err(format!(
            "{found} over a payload of type {:?}",
            payload.critical.kind
        ));
    }
    if payload.critical.image.docker_manifest_digest != digest.to_string() {
        return Err(format!(
            "{found} over another digest, {}",
            payload.critical.image.docker_manifest_digest
        ));
    }
    if payload.critical.identity.docker_reference != repository {
        return Err(format!(
            "{found} for another repository, {}",
            payload.critical.identity.docker_reference
        ));
    }
    Ok(Signer::Key {
        name: key.name.clone(),
        fingerprint: key.key.fingerprint(),
    })
}
