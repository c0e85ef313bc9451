//! A component's signatures, from where its source keeps them, and the check of
//! them against piton.toml's `[trust]` that `piton add` and `piton update` make
//! before a component goes into the plugins folder:
//!
//! - a local file: the Sigstore bundle `FILE.wasm.sigstore.json` beside it (or the
//!   file `--signature` names);
//! - a URL: the bundle at `URL.sigstore.json` (or the URL or file `--signature`
//!   names); none there (404) is no signature;
//! - an OCI image: cosign's signatures in the `sha256-HEX.sig` tag of its repository,
//!   each payload checked against the digest its manifest gives.
//!
//! Every read is bounded; a signature that cannot be had is an error that names it,
//! and none at all is left to the policy (refused only under `require = "signed"`).

use std::path::{Path, PathBuf};

use reqwest::header::{ACCEPT, HeaderValue};

use super::fetched::{FetchError, FetchProblem, Fetched};
use super::http::Http;
use super::oci::{get_manifest, pull_headers, refused_login};
use super::reference::{OciRef, Reference};
use super::trust::cosign_oci;
use super::trust::{
    self, Artifact, Digest, PrivateKey, SignatureMaterial, SimpleSignature, TrustPolicy,
    VerifyError,
};

/// The most bytes of a bundle read.
const MAX_BUNDLE: u64 = 1 << 20;
/// The most signatures of an OCI image read.
const MAX_SIGNATURES: usize = 16;

/// The bundle beside a file or URL: `X.sigstore.json`.
pub fn bundle_beside(path: &str) -> String {
    format!("{path}.sigstore.json")
}

/// Why a component was not trusted: its signatures could not be had, or the policy
/// refused them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// A signature that should be there could not be read.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The policy refused the component.
    #[error("{0}; nothing was changed (piton.toml [trust], see docs/trust.md)")]
    Refused(#[from] VerifyError),
}

/// Checks `fetched`, from `reference` (written `given`), against `policy`, with the
/// signatures its source keeps (`signature`: `--signature`). Gives the signer, as
/// piton.lock records it.
pub async fn check(
    policy: &TrustPolicy,
    reference: &Reference,
    given: &str,
    fetched: &Fetched,
    signature: Option<&str>,
) -> Result<Option<String>, TrustError> {
    let fail = |problem| FetchError {
        reference: given.to_owned(),
        problem,
    };
    let verified = match reference {
        Reference::Oci(oci) => {
            let digest = fetched
                .resolved
                .as_deref()
                .ok_or_else(|| fail(FetchProblem::Manifest("no manifest digest".into())))
                .and_then(|d| {
                    Digest::parse(d).map_err(|e| fail(FetchProblem::Manifest(e.to_string())))
                })?;
            let signatures = pull_signatures(oci, &digest).await.map_err(fail)?;
            let materials: Vec<SignatureMaterial> = signatures
                .into_iter()
                .map(SignatureMaterial::Simple)
                .collect();
            let repository = format!("{}/{}", oci.registry, oci.repository);
            let artifact = Artifact::OciManifest {
                repository: &repository,
                digest: &digest,
            };
            trust::verify(policy, given, artifact, &materials)?
        }
        Reference::Url { url, .. } => {
            let bundle = match signature {
                Some(given) => Some(read_bundle(given).await.map_err(fail)?),
                None => get_if_there(&bundle_beside(url)).await.map_err(fail)?,
            };
            verify_file(policy, given, fetched, bundle)?
        }
        Reference::Path(path) => {
            let bundle = match signature {
                Some(given) => Some(read_bundle(given).await.map_err(fail)?),
                None => {
                    let beside = PathBuf::from(bundle_beside(&path.to_string_lossy()));
                    match beside.try_exists() {
                        Ok(true) => Some(read_file(&beside).map_err(fail)?),
                        _ => None,
                    }
                }
            };
            verify_file(policy, given, fetched, bundle)?
        }
    };
    Ok(verified.signer.map(|signer| signer.to_string()))
}

/// [`trust::verify`] of a fetched file with its bundle, if any. The bundle is checked
/// over the bytes read back from the temporary file, which must be the ones the
/// fetch hashed: a file changed since is refused, not verified as it is now.
fn verify_file(
    policy: &TrustPolicy,
    given: &str,
    fetched: &Fetched,
    bundle: Option<Vec<u8>>,
) -> Result<trust::Verified, TrustError> {
    let materials: Vec<SignatureMaterial> =
        bundle.into_iter().map(SignatureMaterial::Bundle).collect();
    if materials.is_empty() {
        return Ok(trust::verify(
            policy,
            given,
            Artifact::File(&[]),
            &materials,
        )?);
    }
    let fail = |problem| FetchError {
        reference: given.to_owned(),
        problem,
    };
    let bytes = std::fs::read(fetched.temp.path()).map_err(|e| fail(FetchProblem::Read(e)))?;
    let read = Digest::of(&bytes).to_string();
    if read != fetched.digest() {
        return Err(fail(FetchProblem::Digest {
            what: "the fetched file, read back to check its signature,",
            expected: fetched.digest(),
            found: read,
        })
        .into());
    }
    Ok(trust::verify(
        policy,
        given,
        Artifact::File(&bytes),
        &materials,
    )?)
}

/// A bundle `--signature` names: a URL, or a file.
async fn read_bundle(given: &str) -> Result<Vec<u8>, FetchProblem> {
    if given.starts_with("https://") || given.starts_with("http://") {
        let http = Http::new()?;
        let response = http.send(given, Default::default(), false).await?;
        Http::small_body(response, MAX_BUNDLE, "the signature bundle").await
    } else {
        read_file(Path::new(given))
    }
}

/// The bundle at `url`, or `None` when there is none (404).
async fn get_if_there(url: &str) -> Result<Option<Vec<u8>>, FetchProblem> {
    let http = Http::new()?;
    match http.send(url, Default::default(), false).await {
        Ok(response) => Ok(Some(
            Http::small_body(response, MAX_BUNDLE, "the signature bundle").await?,
        )),
        Err(FetchProblem::Status { status: 404, .. }) => Ok(None),
        Err(other) => Err(other),
    }
}

/// A bundle file, at most [`MAX_BUNDLE`] bytes.
fn read_file(path: &Path) -> Result<Vec<u8>, FetchProblem> {
    use std::io::Read as _;
    let unreadable = |e: std::io::Error| {
        FetchProblem::Read(std::io::Error::new(
            e.kind(),
            format!("the signature bundle {}: {e}", path.display()),
        ))
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(MAX_BUNDLE + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_BUNDLE {
        return Err(FetchProblem::TooLarge {
            what: "the signature bundle",
            size: bytes.len() as u64,
            limit: MAX_BUNDLE,
        });
    }
    Ok(bytes)
}

/// cosign's signatures of the manifest `digest` in `oci`'s repository: none when
/// its `sha256-HEX.sig` tag is not there.
pub(crate) async fn pull_signatures(
    oci: &OciRef,
    digest: &Digest,
) -> Result<Vec<SimpleSignature>, FetchProblem> {
    let (auth, found) = pull_headers(oci).await?;
    signatures_with(oci, digest, &auth)
        .await
        .map_err(|e| refused_login(e, oci, &found))
}

/// [`pull_signatures`], past the token handshake: `auth` are the headers it gave.
async fn signatures_with(
    oci: &OciRef,
    digest: &Digest,
    auth: &reqwest::header::HeaderMap,
) -> Result<Vec<SimpleSignature>, FetchProblem> {
    let http = Http::new()?;
    let base = format!("{}/v2/{}", oci.base_url(), oci.repository);
    let mut accept = auth.clone();
    accept.insert(
        ACCEPT,
        HeaderValue::from_static("application/vnd.oci.image.manifest.v1+json"),
    );
    let url = format!("{base}/manifests/{}", cosign_oci::signature_tag(digest));
    let manifest = match get_manifest(&http, &url, accept).await {
        Ok((bytes, _)) => bytes,
        Err(FetchProblem::Status { status: 404, .. }) => return Ok(Vec::new()),
        Err(other) => return Err(other),
    };
    let layers = cosign_oci::decode_manifest(&manifest)
        .map_err(|e| FetchProblem::Manifest(e.to_string()))?;
    let mut signatures = Vec::new();
    for layer in layers.into_iter().take(MAX_SIGNATURES) {
        let url = format!("{base}/blobs/{}", layer.digest);
        let response = http.send(&url, auth.clone(), false).await?;
        let payload =
            Http::small_body(response, cosign_oci::MAX_PAYLOAD, "a signature payload").await?;
        let signature = layer
            .with_payload(payload)
            .map_err(|e| FetchProblem::Manifest(e.to_string()))?;
        signatures.push(signature);
    }
    Ok(signatures)
}

/// Signs the manifest `digest` in `oci`'s repository with `key` and pushes the
/// signature as cosign does (the `sha256-HEX.sig` tag), beside any already there.
pub(crate) async fn push_signature(
    oci: &OciRef,
    digest: &Digest,
    key: &PrivateKey,
) -> Result<(), FetchProblem> {
    let repository = format!("{}/{}", oci.registry, oci.repository);
    let signature = cosign_oci::sign_manifest(&repository, digest, key)
        .map_err(|e| FetchProblem::Client(e.to_string()))?;
    let mut signatures = pull_signatures(oci, digest).await?;
    signatures.retain(|s| s.payload != signature.payload || s.signature != signature.signature);
    signatures.push(signature);
    let image = cosign_oci::encode_manifest(&signatures);
    let tag = OciRef {
        tag: Some(cosign_oci::signature_tag(digest)),
        digest: None,
        ..oci.clone()
    };
    super::oci::push_image(&tag, image).await
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::supply::trust::{NamedKey, Require, sign_blob};

    fn alice() -> (PrivateKey, TrustPolicy) {
        let key =
            PrivateKey::from_pem(&PrivateKey::generate_p256_pem().expect("key")).expect("key");
        let policy = TrustPolicy {
            require: Require::Pinned,
            keys: vec![NamedKey {
                name: "alice".into(),
                key: key.public_key().clone(),
            }],
            ..TrustPolicy::default()
        };
        (key, policy)
    }

    /// A fetch whose temporary file holds `bytes`, said to hash to `said`'s digest.
    fn fetched(bytes: &[u8], said: &[u8]) -> Fetched {
        let mut temp = tempfile::NamedTempFile::new().expect("temp file");
        temp.write_all(bytes).expect("write");
        Fetched {
            temp,
            sha256: Digest::of(said).hex(),
            size: said.len() as u64,
            resolved: None,
        }
    }

    #[test]
    fn a_bundle_verified_over_other_bytes_than_those_fetched_is_refused() {
        let (key, policy) = alice();
        // The temporary file was changed after the fetch hashed it: the bundle
        // signs what is there now, not what was fetched.
        let swapped = b"\0asm swapped in";
        let bundle = sign_blob(swapped, &key).expect("signs").into_bytes();
        let result = verify_file(
            &policy,
            "./x.wasm",
            &fetched(swapped, b"\0asm fetched"),
            Some(bundle),
        );
        let Err(error) = result else {
            panic!("verified over bytes that are not the fetched ones");
        };
        let text = error.to_string();
        assert!(text.contains(&Digest::of(swapped).to_string()), "{text}");
        assert!(
            text.contains(&Digest::of(b"\0asm fetched").to_string()),
            "{text}"
        );
    }

    #[test]
    fn a_fetched_file_that_cannot_be_read_back_is_an_error_not_empty_bytes() {
        let (key, policy) = alice();
        let bytes = b"\0asm fetched";
        let bundle = sign_blob(bytes, &key).expect("signs").into_bytes();
        let fetched = fetched(bytes, bytes);
        std::fs::remove_file(fetched.temp.path()).expect("removed");
        let result = verify_file(&policy, "./x.wasm", &fetched, Some(bundle));
        let Err(error) = result else {
            panic!("verified a file that is gone");
        };
        let text = error.to_string();
        assert!(text.contains("cannot read"), "{text}");
    }
}
