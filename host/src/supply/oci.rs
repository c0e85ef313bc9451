//! OCI registries: pulling a Wasm component artifact and publishing one (pushes
//! through `oci_client`), logged in as the registry asks (see
//! [`crate::supply::handshake`]) with the account [`crate::supply::login`] finds
//! for it, if any.
//!
//! A pull resolves a tag to a manifest digest once (HEAD), then fetches the
//! manifest by that digest and checks the bytes against it, so a tag that moves
//! meanwhile cannot mix two versions. Manifest and layer are fetched by piton's own
//! bounded client (see `supply::http`): read a chunk at a time under a limit,
//! hashed as they arrive, redirects only on the same host.

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, RegistryOperation};

use crate::supply::artifact::{self, MANIFEST_ACCEPT, MANIFEST_MEDIA_TYPE, MAX_MANIFEST};
use crate::supply::fetched::{FetchLimits, FetchProblem, Fetched};
use crate::supply::handshake::{Access, Operation, handshake};
use crate::supply::http::{Http, header};
use crate::supply::login::{Found, Login, login_for};
use crate::supply::reference::OciRef;

/// What `piton publish` pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    /// The manifest's digest (`sha256:HEX`): pull by it to get exactly these bytes.
    pub manifest: String,
    /// The component layer's digest.
    pub layer: String,
    /// The component's size in bytes.
    pub size: u64,
}

/// The `oci_client` client for `registry`: plain HTTP to a loopback registry only,
/// rustls with ring (installed as the process's default provider, which the
/// client's reqwest needs).
pub(crate) fn client(registry: &OciRef) -> Result<Client, FetchProblem> {
    // Err: a provider is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = if registry.is_loopback() {
        ClientProtocol::Http
    } else {
        ClientProtocol::Https
    };
    Client::try_from(ClientConfig {
        protocol,
        connect_timeout: Some(std::time::Duration::from_secs(30)),
        read_timeout: Some(std::time::Duration::from_secs(60)),
        ..ClientConfig::default()
    })
    .map_err(|e| FetchProblem::Client(e.to_string()))
}

/// The headers of a pull: what the registry asks for (see
/// [`crate::supply::handshake`]: nothing, the login [`login_for`] finds as HTTP
/// Basic auth, or a token); and what was found, for [`refused_login`].
pub(crate) async fn pull_headers(oci: &OciRef) -> Result<(HeaderMap, Found), FetchProblem> {
    let found = login_for(&oci.registry)?;
    let access = handshake(oci, &found, Operation::Pull)
        .await
        .map_err(|e| refused_login(e, oci, &found))?;
    Ok((access.headers()?, found))
}

/// `problem`, or, when it is the registry of `oci` answering 401 or 403, that it
/// asks for a login or refused the one `found`.
pub(crate) fn refused_login(problem: FetchProblem, oci: &OciRef, found: &Found) -> FetchProblem {
    match problem {
        FetchProblem::Status { status, .. } if status == 401 || status == 403 => {
            login_problem(oci, status, found)
        }
        other => other,
    }
}

fn login_problem(oci: &OciRef, status: u16, found: &Found) -> FetchProblem {
    FetchProblem::Login {
        registry: oci.registry.clone(),
        status,
        login: found.login.as_ref().map(Login::who),
        helper: found.helper.clone(),
        unused: found.unused.clone().map(Box::new),
    }
}

/// Pulls the component `oci` names into `temp`.
pub(crate) async fn pull(
    oci: &OciRef,
    temp: tempfile::NamedTempFile,
    limits: FetchLimits,
) -> Result<Fetched, FetchProblem> {
    let (auth, found) = pull_headers(oci).await?;
    pull_with(oci, &auth, temp, limits)
        .await
        .map_err(|e| refused_login(e, oci, &found))
}

/// [`pull`], past the token handshake: `auth` are the headers it gave.
async fn pull_with(
    oci: &OciRef,
    auth: &HeaderMap,
    temp: tempfile::NamedTempFile,
    limits: FetchLimits,
) -> Result<Fetched, FetchProblem> {
    let http = Http::new()?;
    let base = format!("{}/v2/{}", oci.base_url(), oci.repository);
    let mut accept = auth.clone();
    accept.insert(ACCEPT, HeaderValue::from_static(MANIFEST_ACCEPT));
    let (digest, by_tag) = match (&oci.digest, &oci.tag) {
        (Some(digest), _) => (digest.clone(), None),
        (None, Some(tag)) => {
            let url = format!("{base}/manifests/{tag}");
            // A registry that does not answer HEAD (405) is read with one GET.
            let head = match http.send(&url, accept.clone(), true).await {
                Ok(head) => header(head.headers(), "docker-content-digest").map(str::to_owned),
                Err(FetchProblem::Status { status: 405, .. }) => None,
                Err(e) => return Err(e),
            };
            match head.as_deref() {
                Some(digest) => {
                    let digest = crate::supply::reference::parse_digest(digest).map_err(|e| {
                        FetchProblem::Registry(format!("its Docker-Content-Digest: {e}"))
                    })?;
                    (digest, Some(tag.clone()))
                }
                // No digest given: one GET by tag, whose bytes are then the manifest.
                None => {
                    let (bytes, content_type) = get_manifest(&http, &url, accept.clone()).await?;
                    let digest = artifact::digest_of(&bytes);
                    return pull_layer(
                        &http,
                        &base,
                        auth,
                        &bytes,
                        content_type,
                        digest,
                        temp,
                        limits,
                    )
                    .await;
                }
            }
        }
        (None, None) => {
            return Err(FetchProblem::Manifest(
                "name a tag or a digest to pull".to_owned(),
            ));
        }
    };
    let url = format!("{base}/manifests/{digest}");
    let (bytes, content_type) = get_manifest(&http, &url, accept).await?;
    let found = artifact::digest_of(&bytes);
    if found != digest {
        return Err(match by_tag {
            Some(tag) => FetchProblem::TagMoved {
                tag,
                resolved: digest,
                found,
            },
            None => FetchProblem::Digest {
                what: "the manifest",
                expected: digest,
                found,
            },
        });
    }
    pull_layer(
        &http,
        &base,
        auth,
        &bytes,
        content_type,
        digest,
        temp,
        limits,
    )
    .await
}

/// The manifest at `url`: its bytes (at most [`MAX_MANIFEST`]) and Content-Type. A
/// Docker-Content-Digest the registry gives with it must be the bytes' digest.
pub(crate) async fn get_manifest(
    http: &Http,
    url: &str,
    headers: HeaderMap,
) -> Result<(Vec<u8>, Option<String>), FetchProblem> {
    let response = http.send(url, headers, false).await?;
    let content_type = header(response.headers(), CONTENT_TYPE.as_str()).map(str::to_owned);
    let said = header(response.headers(), "docker-content-digest").map(str::to_ascii_lowercase);
    let bytes = Http::small_body(response, MAX_MANIFEST, "the manifest").await?;
    let found = artifact::digest_of(&bytes);
    match said {
        Some(said) if said != found => Err(FetchProblem::Digest {
            what: "the manifest",
            expected: format!("{said} (its Docker-Content-Digest)"),
            found,
        }),
        _ => Ok((bytes, content_type)),
    }
}

/// The component layer of `manifest` (whose digest is `digest`) into `temp`.
#[allow(clippy::too_many_arguments)]
async fn pull_layer(
    http: &Http,
    base: &str,
    auth: &HeaderMap,
    manifest: &[u8],
    content_type: Option<String>,
    digest: String,
    mut temp: tempfile::NamedTempFile,
    limits: FetchLimits,
) -> Result<Fetched, FetchProblem> {
    let layer = artifact::component_layer(manifest, content_type.as_deref())?;
    let declared = u64::try_from(layer.size).unwrap_or(0);
    if declared > limits.max_size {
        return Err(FetchProblem::TooLarge {
            what: "the component layer",
            size: declared,
            limit: limits.max_size,
        });
    }
    let url = format!("{base}/blobs/{}", layer.digest);
    let response = http.send(&url, auth.clone(), false).await?;
    // No more than the manifest says: a longer answer stops there.
    let written = Http::to_file(response, temp.as_file_mut(), declared)
        .await
        .map_err(|e| match e {
            FetchProblem::TooLarge { size, .. } => FetchProblem::Manifest(format!(
                "the registry sent more than the {declared} bytes the manifest gives the \
                 component layer ({size} and more); nothing was kept"
            )),
            other => other,
        })?;
    let found = format!("sha256:{}", written.sha256);
    if found != layer.digest.to_ascii_lowercase() {
        return Err(FetchProblem::Digest {
            what: "the component layer",
            expected: layer.digest,
            found,
        });
    }
    Ok(Fetched {
        temp,
        sha256: written.sha256,
        size: written.size,
        resolved: Some(digest),
    })
}

/// Pushes the component `wasm` to `oci` in the CNCF Wasm layout (see
/// [`artifact`]), made at `created` (RFC 3339), its layer titled `title` (the file
/// name); gives the manifest's digest.
pub async fn publish(
    oci: &OciRef,
    wasm: Vec<u8>,
    created: &str,
    title: Option<&str>,
) -> Result<Published, FetchProblem> {
    let (client, reference, found) = pusher(oci).await?;
    let failed = |what, e| failed(what, e, oci, &found);
    let config = artifact::config_json(&wasm, created, None);
    let manifest = artifact::manifest_json(&wasm, &config, created, title);
    let layer = artifact::digest_of(&wasm);
    let size = wasm.len() as u64;
    client
        .push_blob(&reference, wasm, &layer)
        .await
        .map_err(|e| failed("pushing the component", e))?;
    let config_digest = artifact::digest_of(&config);
    client
        .push_blob(&reference, config, &config_digest)
        .await
        .map_err(|e| failed("pushing the config", e))?;
    let digest = artifact::digest_of(&manifest);
    client
        .push_manifest_raw(
            &reference,
            manifest,
            HeaderValue::from_static(MANIFEST_MEDIA_TYPE),
        )
        .await
        .map_err(|e| failed("pushing the manifest", e))?;
    Ok(Published {
        manifest: digest,
        layer,
        size,
    })
}

/// What a push or handshake with `oci`'s registry failed at, and why: a refused
/// login (401, 403) as [`FetchProblem::Login`].
fn failed(
    what: &str,
    e: oci_client::errors::OciDistributionError,
    oci: &OciRef,
    found: &Found,
) -> FetchProblem {
    use oci_client::errors::{OciDistributionError as E, OciErrorCode};
    let status = match &e {
        E::UnauthorizedError { .. } | E::AuthenticationFailure(_) => Some(401),
        E::ServerError { code, .. } if *code == 401 || *code == 403 => Some(*code),
        E::RegistryError { envelope, .. } => {
            let code = |wanted: &OciErrorCode| envelope.errors.iter().any(|e| &e.code == wanted);
            if code(&OciErrorCode::Unauthorized) {
                Some(401)
            } else if code(&OciErrorCode::Denied) {
                Some(403)
            } else {
                None
            }
        }
        _ => None,
    };
    match status {
        Some(status) => login_problem(oci, status, found),
        None => FetchProblem::Registry(format!("{what} failed: {e}")),
    }
}

/// A client for pushes to `oci`'s repository, past the handshake (see
/// [`crate::supply::handshake`]): given the token piton asked for, or, for a
/// registry that asks for HTTP Basic auth, the login [`login_for`] finds for it.
async fn pusher(oci: &OciRef) -> Result<(Client, oci_client::Reference, Found), FetchProblem> {
    let found = login_for(&oci.registry)?;
    let access = handshake(oci, &found, Operation::Push)
        .await
        .map_err(|e| refused_login(e, oci, &found))?;
    let client = client(oci)?;
    let reference = oci.to_client();
    // A token goes to the registry only (oci_client sends credentials to no other
    // host). A Basic login makes oci_client ask `/v2/` once more: a registry that
    // then names a token service would get the login sent there, but it is the
    // registry the login is for, which a Basic challenge hands it to anyway.
    let auth = match (&access, &found.login) {
        (Access::Bearer(token), _) => RegistryAuth::Bearer(token.clone()),
        (Access::Basic(_), Some(login)) => login.auth(),
        (Access::Anonymous | Access::Basic(_), _) => RegistryAuth::Anonymous,
    };
    client
        .auth(&reference, &auth, RegistryOperation::Push)
        .await
        .map_err(|e| failed("the token handshake", e, oci, &found))?;
    Ok((client, reference, found))
}

/// Pushes `image` (cosign's signature image: a config, payload layers, a manifest)
/// to the tag `oci` names.
pub(crate) async fn push_image(
    oci: &OciRef,
    image: crate::supply::trust::cosign_oci::SignatureImage,
) -> Result<(), FetchProblem> {
    let (client, reference, found) = pusher(oci).await?;
    let failed = |what, e| failed(what, e, oci, &found);
    for blob in std::iter::once(image.config).chain(image.layers) {
        let digest = artifact::digest_of(&blob);
        client
            .push_blob(&reference, blob, &digest)
            .await
            .map_err(|e| failed("pushing a signature", e))?;
    }
    client
        .push_manifest_raw(
            &reference,
            image.manifest,
            HeaderValue::from_static("application/vnd.oci.image.manifest.v1+json"),
        )
        .await
        .map_err(|e| failed("pushing the signature manifest", e))?;
    Ok(())
}
