//! What `piton add REF` names, parsed once: a component in an OCI registry
//! (`oci://HOST[:PORT]/REPO:TAG`, `oci://HOST[:PORT]/REPO@sha256:HEX`), a file at an
//! `https://` URL (with the SHA-256 it must have), or a local file. Each mistake is
//! an error naming the reference and how to write it.
//!
//! Registries and URLs on a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`) are
//! reached over plain HTTP; every other host only over HTTPS.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::config::pins::{PinError, Sha256};
use crate::supply::trust::Require;

/// A parsed `REF`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    /// A component in an OCI registry.
    Oci(OciRef),
    /// A component at a URL, and the SHA-256 its bytes must have.
    Url {
        /// The URL, `https://…` (or `http://` to a loopback host).
        url: String,
        /// The host (and port) it names, for messages.
        host: String,
        /// What `--sha256` gave; `None` only where the trust policy takes what the
        /// URL serves (`require = "any"`, see [`Reference::parse_under`]).
        sha256: Option<Sha256>,
    },
    /// A component file on this machine.
    Path(PathBuf),
}

/// `oci://HOST[:PORT]/REPO[:TAG][@sha256:HEX]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciRef {
    /// `HOST[:PORT]`, as written.
    pub registry: String,
    /// The repository: lower-case path components.
    pub repository: String,
    /// The tag, if one is named.
    pub tag: Option<String>,
    /// The manifest digest (`sha256:HEX`), if one is named: it wins over the tag.
    pub digest: Option<String>,
}

/// A `REF` that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{reference}: {problem}")]
pub struct RefError {
    /// The reference as written.
    pub reference: String,
    /// What is wrong and how to fix it.
    pub problem: RefProblem,
}

/// What is wrong with a reference.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefProblem {
    /// An `https://` URL without `--sha256`.
    #[error(
        "a URL needs the SHA-256 its file must have: add --sha256 HEX (as `sha256sum FILE` \
         prints it for the file you trust)"
    )]
    UrlNeedsSha256,
    /// `http://` to a host that is not loopback.
    #[error(
        "plain HTTP to {0}, which is not a loopback host: anyone on the way could change \
         the bytes; use https://"
    )]
    PlainHttp(String),
    /// A scheme piton does not fetch from.
    #[error(
        "piton fetches oci://HOST/REPO:TAG, oci://HOST/REPO@sha256:HEX, https://…/FILE.wasm \
         or a local path, not {0}://"
    )]
    Scheme(String),
    /// `oci://` without `HOST/REPO`.
    #[error("write oci://HOST[:PORT]/REPO:TAG (such as oci://ghcr.io/me/tool:1.0)")]
    OciShape,
    /// A repository name the OCI distribution spec does not allow.
    #[error(
        "repository {0:?} is not a valid OCI repository name: lower-case letters, digits \
         and `.`, `_`, `-` between them, in `/`-separated parts"
    )]
    Repository(String),
    /// A tag the OCI distribution spec does not allow.
    #[error(
        "tag {0:?} is not a valid tag: up to 128 letters, digits, `_`, `.` or `-`, not starting with `.` or `-`"
    )]
    Tag(String),
    /// Neither a tag nor a digest.
    #[error("name a tag (oci://…/REPO:1.0) or a digest (oci://…/REPO@sha256:HEX)")]
    NoTagOrDigest,
    /// A digest that is not `sha256:` and 64 hex digits.
    #[error("the digest {0:?} is not sha256: and 64 hexadecimal digits")]
    Digest(String),
    /// A host that is not a host name or address.
    #[error("{0:?} is not a host name or address, with an optional :PORT")]
    Host(String),
    /// `--sha256` that is not a digest.
    #[error("--sha256: {0}")]
    Sha256(PinError),
}

impl Reference {
    /// Parses `text`, with `sha256` as `--sha256` gave it (required for a URL; for
    /// the other kinds it is checked by [`crate::supply::fetch`] on the bytes).
    pub fn parse(text: &str, sha256: Option<&str>) -> Result<Self, RefError> {
        Self::parse_under(text, sha256, Require::Pinned)
    }

    /// [`Reference::parse`] for a source whose trust policy says `require`: under
    /// `any`, a URL may come without `--sha256` (the digest of what it serves is
    /// then recorded); under `pinned` and `signed` it needs one.
    pub fn parse_under(
        text: &str,
        sha256: Option<&str>,
        require: Require,
    ) -> Result<Self, RefError> {
        let fail = |problem| RefError {
            reference: text.to_owned(),
            problem,
        };
        let sha256 = sha256
            .map(Sha256::parse)
            .transpose()
            .map_err(|e| fail(RefProblem::Sha256(e)))?;
        let Some((scheme, rest)) = text.split_once("://") else {
            return Ok(Self::Path(PathBuf::from(text)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "oci" => parse_oci(rest).map(Self::Oci).map_err(fail),
            scheme @ ("https" | "http") => {
                let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
                let host = host.rsplit('@').next().unwrap_or_default().to_owned();
                check_host(&host).map_err(fail)?;
                if scheme == "http" && !is_loopback(&host) {
                    return Err(fail(RefProblem::PlainHttp(host)));
                }
                if sha256.is_none() && require != Require::Any {
                    return Err(fail(RefProblem::UrlNeedsSha256));
                }
                Ok(Self::Url {
                    url: text.to_owned(),
                    host,
                    sha256,
                })
            }
            other => Err(fail(RefProblem::Scheme(other.to_owned()))),
        }
    }

    /// The name `piton add` gives the component when `--name` does not: the last
    /// part of the repository, or the file name without `.wasm`, with any character
    /// a tool name cannot have made `_`; `None` when nothing is left.
    pub fn default_name(&self) -> Option<String> {
        let last = match self {
            Self::Oci(oci) => oci.repository.rsplit('/').next().unwrap_or_default(),
            Self::Url { url, .. } => {
                let path = url.split(['?', '#']).next().unwrap_or_default();
                path.rsplit('/').next().unwrap_or_default()
            }
            Self::Path(path) => path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default(),
        };
        let stem = last.strip_suffix(".wasm").unwrap_or(last);
        let name: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        (!name.trim_matches('_').is_empty()).then_some(name)
    }
}

impl OciRef {
    /// Whether the registry is on a loopback host, reached over plain HTTP.
    pub fn is_loopback(&self) -> bool {
        is_loopback(&self.registry)
    }

    /// `oci_client`'s reference: by digest when one is named, else by tag.
    pub fn to_client(&self) -> oci_client::Reference {
        match (&self.digest, &self.tag) {
            (Some(digest), _) => oci_client::Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                digest.clone(),
            ),
            (None, tag) => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                tag.clone().unwrap_or_else(|| "latest".to_owned()),
            ),
        }
    }

    /// `scheme://registry`: `http` for a loopback registry, else `https`.
    pub fn base_url(&self) -> String {
        let scheme = if self.is_loopback() { "http" } else { "https" };
        format!("{scheme}://{}", self.registry)
    }
}

impl std::fmt::Display for OciRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// `HOST[:PORT]/REPO[:TAG][@sha256:HEX]`, after `oci://`.
fn parse_oci(rest: &str) -> Result<OciRef, RefProblem> {
    let (registry, path) = rest.split_once('/').ok_or(RefProblem::OciShape)?;
    if registry.is_empty() || path.is_empty() {
        return Err(RefProblem::OciShape);
    }
    check_host(registry)?;
    let (path, digest) = match path.split_once('@') {
        Some((path, digest)) => (path, Some(parse_digest(digest)?)),
        None => (path, None),
    };
    let last_slash = path.rfind('/').map_or(0, |i| i + 1);
    let (repository, tag) = match path[last_slash..].rfind(':') {
        Some(i) => (&path[..last_slash + i], Some(&path[last_slash + i + 1..])),
        None => (path, None),
    };
    if !valid_repository(repository) {
        return Err(RefProblem::Repository(repository.to_owned()));
    }
    if let Some(tag) = tag
        && !valid_tag(tag)
    {
        return Err(RefProblem::Tag(tag.to_owned()));
    }
    if tag.is_none() && digest.is_none() {
        return Err(RefProblem::NoTagOrDigest);
    }
    Ok(OciRef {
        registry: registry.to_owned(),
        repository: repository.to_owned(),
        tag: tag.map(str::to_owned),
        digest,
    })
}

/// `sha256:` and 64 hex digits, lower-cased.
pub(crate) fn parse_digest(text: &str) -> Result<String, RefProblem> {
    let bad = || RefProblem::Digest(text.chars().take(80).collect());
    let hex = text.strip_prefix("sha256:").ok_or_else(bad)?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
}

/// The OCI distribution spec's repository name: `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
/// parts joined by `/`.
fn valid_repository(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name.split('/').all(|part| {
            let bytes = part.as_bytes();
            let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
            bytes.first().is_some_and(alnum)
                && bytes.last().is_some_and(alnum)
                && bytes
                    .iter()
                    .all(|b| alnum(b) || matches!(b, b'.' | b'_' | b'-'))
                && !part.contains("..")
                && !part.contains("___")
                && !part.contains("._")
                && !part.contains("_.")
                && !part.contains(".-")
                && !part.contains("-.")
                && !part.contains("_-")
                && !part.contains("-_")
        })
}

/// `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
fn valid_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    (1..=128).contains(&bytes.len())
        && bytes
            .first()
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// `HOST[:PORT]`: a DNS name, an IPv4 address or a bracketed IPv6 one.
fn check_host(text: &str) -> Result<(), RefProblem> {
    let bad = || RefProblem::Host(text.chars().take(80).collect());
    let (host, port) = split_port(text);
    if let Some(port) = port
        && port.parse::<u16>().is_err()
    {
        return Err(bad());
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<std::net::Ipv6Addr>()
            .map(|_| ())
            .map_err(|_| bad());
    }
    let ok = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if ok { Ok(()) } else { Err(bad()) }
}

/// `host` and `port` of `HOST[:PORT]` (`[::1]:5000` too).
fn split_port(text: &str) -> (&str, Option<&str>) {
    if text.starts_with('[') {
        return match text.rfind("]:") {
            Some(i) => (&text[..=i], Some(&text[i + 2..])),
            None => (text, None),
        };
    }
    match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    }
}

/// Whether `HOST[:PORT]` names this machine: `localhost`, `127.0.0.0/8` or `[::1]`.
pub fn is_loopback(host_port: &str) -> bool {
    let (host, _) = split_port(host_port);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oci(text: &str) -> OciRef {
        match Reference::parse(text, None) {
            Ok(Reference::Oci(oci)) => oci,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn problem(text: &str, sha256: Option<&str>) -> RefProblem {
        Reference::parse(text, sha256).expect_err(text).problem
    }

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn oci_references_give_registry_repository_tag_and_digest() {
        let r = oci("oci://127.0.0.1:5000/tools/word-count:1.0");
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "tools/word-count");
        assert_eq!(r.tag.as_deref(), Some("1.0"));
        assert_eq!(r.digest, None);
        assert!(r.is_loopback());
        assert_eq!(r.base_url(), "http://127.0.0.1:5000");
        let r = oci(&format!(
            "oci://ghcr.io/me/tool@sha256:{}",
            HEX.to_uppercase()
        ));
        assert_eq!(r.tag, None);
        assert_eq!(r.digest, Some(format!("sha256:{HEX}")));
        assert_eq!(r.base_url(), "https://ghcr.io");
        assert_eq!(r.to_string(), format!("oci://ghcr.io/me/tool@sha256:{HEX}"));
        let r = oci(&format!("oci://[::1]:5000/a:v1@sha256:{HEX}"));
        assert_eq!((r.tag.as_deref(), r.is_loopback()), (Some("v1"), true));
    }

    #[test]
    fn bad_oci_references_say_how_to_write_them() {
        assert_eq!(problem("oci://ghcr.io", None), RefProblem::OciShape);
        assert_eq!(
            problem("oci://ghcr.io/me/tool", None),
            RefProblem::NoTagOrDigest
        );
        assert_eq!(
            problem("oci://ghcr.io/Me/tool:1", None),
            RefProblem::Repository("Me/tool".into())
        );
        assert_eq!(
            problem("oci://ghcr.io/me/tool:-x", None),
            RefProblem::Tag("-x".into())
        );
        assert_eq!(
            problem("oci://ghcr.io/me/tool@sha256:12", None),
            RefProblem::Digest("sha256:12".into())
        );
        assert_eq!(
            problem("oci://bad_host/me/tool:1", None),
            RefProblem::Host("bad_host".into())
        );
        assert_eq!(
            problem("oci://host:99999/me/tool:1", None),
            RefProblem::Host("host:99999".into())
        );
        let error = Reference::parse("oci://ghcr.io/me/tool", None).expect_err("no tag");
        assert!(
            error
                .to_string()
                .starts_with("oci://ghcr.io/me/tool: name a tag"),
            "{error}"
        );
    }

    #[test]
    fn urls_need_a_sha256_and_https_unless_loopback() {
        assert_eq!(
            problem("https://example.com/x.wasm", None),
            RefProblem::UrlNeedsSha256
        );
        assert_eq!(
            problem("http://example.com/x.wasm", Some(HEX)),
            RefProblem::PlainHttp("example.com".into())
        );
        assert_eq!(
            problem("http://10.0.0.1:8080/x.wasm", Some(HEX)),
            RefProblem::PlainHttp("10.0.0.1:8080".into())
        );
        assert!(matches!(
            problem("https://example.com/x.wasm", Some("12")),
            RefProblem::Sha256(_)
        ));
        assert_eq!(
            problem("ftp://example.com/x", None),
            RefProblem::Scheme("ftp".into())
        );
        let url =
            Reference::parse("http://127.0.0.1:8080/dl/x.wasm?v=1", Some(HEX)).expect("loopback");
        assert_eq!(url.default_name().as_deref(), Some("x"));
        assert!(matches!(url, Reference::Url { ref host, .. } if host == "127.0.0.1:8080"));
        assert!(Reference::parse("https://example.com/x.wasm", Some(HEX)).is_ok());
    }

    #[test]
    fn only_under_any_may_a_url_come_without_a_sha256() {
        let url = "https://example.com/x.wasm";
        let taken = Reference::parse_under(url, None, Require::Any).expect("under any");
        assert!(matches!(taken, Reference::Url { sha256: None, .. }));
        for require in [Require::Pinned, Require::Signed] {
            let error = Reference::parse_under(url, None, require).expect_err("no --sha256");
            assert_eq!(error.problem, RefProblem::UrlNeedsSha256);
        }
        // Plain HTTP off loopback is refused whatever the level.
        let error = Reference::parse_under("http://example.com/x.wasm", None, Require::Any)
            .expect_err("plain HTTP");
        assert_eq!(error.problem, RefProblem::PlainHttp("example.com".into()));
    }

    #[test]
    fn anything_else_is_a_path_and_names_default_to_the_last_part() {
        let path = Reference::parse("./build/my tool.wasm", None).expect("a path");
        assert_eq!(path, Reference::Path("./build/my tool.wasm".into()));
        assert_eq!(path.default_name().as_deref(), Some("my_tool"));
        assert_eq!(
            Reference::Oci(oci("oci://h.io/a/word-count:1"))
                .default_name()
                .as_deref(),
            Some("word-count")
        );
        assert_eq!(Reference::Path("/".into()).default_name(), None);
    }

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "LOCALHOST:80",
            "127.0.0.1",
            "127.1.2.3:5000",
            "[::1]:5000",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "example.com",
            "10.0.0.1",
            "[::2]:80",
            "localhost.example.com",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
