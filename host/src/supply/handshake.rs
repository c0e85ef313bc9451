//! What a registry is told before a pull or a push: piton asks its `/v2/` with no
//! login (piton's own bounded client) and answers only what the answer asks for.
//!
//! - No challenge (a `/v2/` that answers 200, or a 401 without `WWW-Authenticate`):
//!   nothing is sent, whatever login piton has.
//! - `WWW-Authenticate: Basic`: the login for this registry (see
//!   [`crate::supply::login`]), as HTTP Basic auth on each request to it.
//! - `WWW-Authenticate: Bearer realm=…`: a token from the realm, asked for with the
//!   login as HTTP Basic auth only when the realm is HTTPS (plain HTTP only on
//!   loopback) and on the registry's own host and port, on Docker Hub's token
//!   service for Docker Hub, or on a host `PITON_REGISTRY_TOKEN_HOSTS` names;
//!   otherwise the login is not sent and the pull stops, saying so. Without a login,
//!   a token is asked for anonymously.
//!
//! `oci_client` is never given a login it would send to a realm itself: a push gets
//! the token asked for here (or, for a registry that asks for Basic auth, the login,
//! which only that registry then receives).

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use serde::Deserialize;

use crate::supply::fetched::{FetchProblem, RealmRefusal, TokenProblem};
use crate::supply::http::Http;
use crate::supply::login::{Found, server_of};
use crate::supply::reference::{OciRef, is_loopback};

/// The hosts (`HOST` or `HOST:PORT`, comma-separated) a registry's token service
/// may be on, besides the registry's own host, to be sent a login for a token.
pub const TOKEN_HOSTS_VAR: &str = "PITON_REGISTRY_TOKEN_HOSTS";

/// The most bytes of a token service's answer read.
const MAX_TOKEN: u64 = 64 << 10;

/// Docker Hub's registry and the host of its token service, which is not the
/// registry's (`auth.docker.io`).
const DOCKER_HUB: (&str, &str) = ("docker.io", "auth.docker.io");

/// What a pull or push sends the registry. Its `Debug` shows no secret.
#[derive(Clone)]
pub(crate) enum Access {
    /// Nothing.
    Anonymous,
    /// The login, as HTTP Basic auth: the registry asked for it.
    Basic(HeaderValue),
    /// A token the registry's token service gave.
    Bearer(String),
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Anonymous => "Anonymous",
            Self::Basic(_) => "Basic(hidden)",
            Self::Bearer(_) => "Bearer(hidden)",
        })
    }
}

impl Access {
    /// The `Authorization` header of a request to the registry, if any.
    pub(crate) fn headers(&self) -> Result<HeaderMap, FetchProblem> {
        let mut headers = HeaderMap::new();
        match self {
            Self::Anonymous => {}
            Self::Basic(value) => {
                headers.insert(AUTHORIZATION, value.clone());
            }
            Self::Bearer(token) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| FetchProblem::Token(TokenProblem::NotAHeader))?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
        }
        Ok(headers)
    }
}

/// What the registry's `/v2/` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Challenge {
    /// Nothing: anyone may come.
    None,
    /// HTTP Basic auth.
    Basic,
    /// A token from `realm`.
    Bearer {
        realm: String,
        service: Option<String>,
    },
    /// A scheme piton does not speak: it sends nothing.
    Other,
}

/// Whether a pull or a push: the token's scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    Pull,
    Push,
}

/// Asks `oci`'s registry what it wants for `operation` and gets it, with the login
/// `found` has for it, if any.
pub(crate) async fn handshake(
    oci: &OciRef,
    found: &Found,
    operation: Operation,
) -> Result<Access, FetchProblem> {
    let http = Http::new()?;
    let probe = http
        .answer(&format!("{}/v2/", oci.base_url()), HeaderMap::new(), false)
        .await?;
    let challenge = challenge_of(probe.headers());
    // Not read: only its headers count.
    drop(probe);
    match (challenge, &found.login) {
        (Challenge::None | Challenge::Other, _) | (Challenge::Basic, None) => Ok(Access::Anonymous),
        (Challenge::Basic, Some(login)) => Ok(Access::Basic(login.basic_header()?)),
        (Challenge::Bearer { realm, service }, login) => {
            let url = Url::parse(&realm).map_err(|_| FetchProblem::Token(TokenProblem::Realm))?;
            let mut headers = HeaderMap::new();
            if let Some(login) = login {
                let named = token_hosts(std::env::var(TOKEN_HOSTS_VAR).ok().as_deref());
                if let Some(refusal) = realm_refusal(oci, &url, &named) {
                    return Err(FetchProblem::TokenRealm {
                        registry: oci.registry.clone(),
                        realm,
                        login: login.who(),
                        refusal,
                    });
                }
                headers.insert(AUTHORIZATION, login.basic_header()?);
            }
            let scope = match operation {
                Operation::Pull => format!("repository:{}:pull", oci.repository),
                Operation::Push => format!("repository:{}:pull,push", oci.repository),
            };
            token(&http, url, service.as_deref(), &scope, headers).await
        }
    }
}

/// The token the service at `realm` gives for `scope`, asked with `headers`.
async fn token(
    http: &Http,
    mut realm: Url,
    service: Option<&str>,
    scope: &str,
    headers: HeaderMap,
) -> Result<Access, FetchProblem> {
    {
        let mut query = realm.query_pairs_mut();
        query.append_pair("scope", scope);
        if let Some(service) = service {
            query.append_pair("service", service);
        }
    }
    let response = http.send(realm.as_str(), headers, false).await?;
    let body = Http::small_body(response, MAX_TOKEN, "the token").await?;
    /// A token service's answer: Docker's `token`, or OAuth's `access_token`.
    #[derive(Deserialize)]
    struct Answer {
        token: Option<String>,
        access_token: Option<String>,
    }
    let answer: Answer =
        serde_json::from_slice(&body).map_err(|_| FetchProblem::Token(TokenProblem::NotAToken))?;
    match answer.token.or(answer.access_token) {
        Some(token) if !token.is_empty() => Ok(Access::Bearer(token)),
        _ => Err(FetchProblem::Token(TokenProblem::NotAToken)),
    }
}

/// The challenge of the first `WWW-Authenticate` header of `headers`.
fn challenge_of(headers: &HeaderMap) -> Challenge {
    let Some(value) = headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .find_map(|value| value.to_str().ok())
    else {
        return Challenge::None;
    };
    parse_challenge(value)
}

/// One `WWW-Authenticate` value: its scheme, and a Bearer's `realm` and `service`.
fn parse_challenge(value: &str) -> Challenge {
    let value = value.trim();
    let (scheme, rest) = value.split_once(char::is_whitespace).unwrap_or((value, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Challenge::Basic;
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Challenge::Other;
    }
    let params = parameters(rest);
    let get = |name: &str| {
        params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.clone())
    };
    match get("realm") {
        Some(realm) => Challenge::Bearer {
            realm,
            service: get("service"),
        },
        None => Challenge::Other,
    }
}

/// `key=value` and `key="quoted \" value"` parameters, comma-separated.
fn parameters(text: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=' && *c != ','))
            .collect::<String>()
            .trim()
            .to_owned();
        if key.is_empty() || chars.next() != Some('=') {
            return params;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        } else {
            value.extend(std::iter::from_fn(|| chars.next_if(|c| *c != ',')));
            value = value.trim().to_owned();
        }
        params.push((key, value));
    }
}

/// The entries of [`TOKEN_HOSTS_VAR`]: `HOST` or `HOST:PORT`, lower case.
fn token_hosts(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .map(|entry| entry.trim().to_ascii_lowercase())
        .filter(|entry| !entry.is_empty())
        .collect()
}

/// Why the login for `oci`'s registry may not go to the token service at `realm`,
/// or `None` when it may: HTTPS (plain HTTP only on loopback), on the registry's
/// host and port, Docker Hub's own token service for Docker Hub, or on a host of
/// `named`.
fn realm_refusal(oci: &OciRef, realm: &Url, named: &[String]) -> Option<RealmRefusal> {
    let host = realm.host_str().unwrap_or_default().to_ascii_lowercase();
    match realm.scheme() {
        "https" => {}
        "http" if is_loopback(&host) => {}
        "http" => return Some(RealmRefusal::PlainHttp),
        _ => return Some(RealmRefusal::Scheme),
    }
    let port = realm.port_or_known_default();
    let registry = Url::parse(&oci.base_url()).ok();
    let same = registry.as_ref().is_some_and(|registry| {
        registry.host_str().map(str::to_ascii_lowercase).as_deref() == Some(host.as_str())
            && registry.port_or_known_default() == port
    });
    let hub = server_of(&oci.registry) == DOCKER_HUB.0 && host == DOCKER_HUB.1;
    let with_port = port.map(|port| format!("{host}:{port}"));
    let is_named = named
        .iter()
        .any(|entry| *entry == host || Some(entry) == with_port.as_ref());
    if same || hub || is_named {
        None
    } else {
        Some(RealmRefusal::OtherHost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supply::reference::Reference;

    fn oci(text: &str) -> OciRef {
        match Reference::parse(text, None) {
            Ok(Reference::Oci(oci)) => oci,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_login_goes_only_to_a_token_service_over_https_on_the_registry_or_a_named_host() {
        let named = token_hosts(Some(" Auth.Example , tokens.example:8443,"));
        assert_eq!(named, ["auth.example", "tokens.example:8443"]);
        let cases = [
            ("oci://r.example/a:1", "https://r.example/token", None),
            ("oci://r.example/a:1", "https://R.EXAMPLE:443/token", None),
            (
                "oci://127.0.0.1:5000/a:1",
                "http://127.0.0.1:5000/token",
                None,
            ),
            (
                "oci://docker.io/a/b:1",
                "https://auth.docker.io/token",
                None,
            ),
            (
                "oci://r.example/a:1",
                "https://auth.example:9999/token",
                None,
            ),
            ("oci://r.example/a:1", "https://tokens.example:8443/t", None),
            (
                "oci://r.example/a:1",
                "https://tokens.example/t",
                Some(RealmRefusal::OtherHost),
            ),
            (
                "oci://r.example/a:1",
                "http://r.example/token",
                Some(RealmRefusal::PlainHttp),
            ),
            (
                "oci://r.example/a:1",
                "http://auth.example/token",
                Some(RealmRefusal::PlainHttp),
            ),
            (
                "oci://r.example/a:1",
                "https://evil.example/token",
                Some(RealmRefusal::OtherHost),
            ),
            (
                "oci://r.example/a:1",
                "https://r.example:8443/token",
                Some(RealmRefusal::OtherHost),
            ),
            (
                "oci://127.0.0.1:5000/a:1",
                "http://localhost:5000/token",
                Some(RealmRefusal::OtherHost),
            ),
            (
                "oci://ghcr.io/a:1",
                "https://auth.docker.io/token",
                Some(RealmRefusal::OtherHost),
            ),
            (
                "oci://r.example/a:1",
                "ftp://r.example/token",
                Some(RealmRefusal::Scheme),
            ),
        ];
        for (reference, realm, expected) in cases {
            let realm = Url::parse(realm).expect("a URL");
            assert_eq!(
                realm_refusal(&oci(reference), &realm, &named),
                expected,
                "{reference} → {realm}"
            );
        }
    }

    #[test]
    fn challenges_are_read_as_registries_write_them() {
        let bearer = |realm: &str, service: Option<&str>| Challenge::Bearer {
            realm: realm.into(),
            service: service.map(Into::into),
        };
        let cases = [
            (r#"Basic realm="Registry Realm""#, Challenge::Basic),
            ("basic", Challenge::Basic),
            (
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull""#,
                bearer("https://auth.docker.io/token", Some("registry.docker.io")),
            ),
            (
                r#"bearer service="x", realm="https://r.example/t?a=1""#,
                bearer("https://r.example/t?a=1", Some("x")),
            ),
            (
                r#"Bearer realm="https://r.example/\"q\"""#,
                bearer(r#"https://r.example/"q""#, None),
            ),
            (
                "Bearer realm=https://r.example/t",
                bearer("https://r.example/t", None),
            ),
            ("Bearer", Challenge::Other),
            ("Negotiate abc", Challenge::Other),
            ("", Challenge::Other),
        ];
        for (value, expected) in cases {
            assert_eq!(parse_challenge(value), expected, "{value}");
        }
        assert_eq!(challenge_of(&HeaderMap::new()), Challenge::None);
    }
}
