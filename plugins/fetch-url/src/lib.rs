//! Fetch a URL with GET over wasi:http and return its status and body as text.
//!
//! The host checks every request against the user's network grants, so with nothing
//! granted every call fails, which is the point of the example. Redirects are followed
//! here, in the guest (up to 5): each hop is a new request that the host checks again,
//! so a granted server cannot redirect the tool to a host that is not granted.
//!
//! Run with: `cargo run --release -- call fetch_url '{"url":"https://example.com/"}'`
//! (exits 1 unless piton.toml grants the tool `example.com:443`).

use std::fmt;

use piton_guest_sdk::{ToolError, tool};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// The most of a body returned.
const MAX_BODY: usize = 1 << 20;
/// The most redirects followed.
const MAX_REDIRECTS: usize = 5;

/// Fetch a URL with GET and return its HTTP status and body as text (the first MiB).
/// Follows up to 5 redirects.
///
/// Args:
///     url: An http:// or https:// URL
#[tool(read_only, open_world = true)]
fn fetch_url(url: String) -> Result<String, ToolError> {
    let mut current = Url::parse(&url).map_err(|e| ToolError::input(format!("{url}: {e}")))?;
    for _ in 0..=MAX_REDIRECTS {
        let response =
            get(&current).map_err(|e| ToolError::failed(format!("cannot fetch {current}: {e}")))?;
        match (response.status, response.location) {
            (301 | 302 | 303 | 307 | 308, Some(location)) => {
                current = current.join(&location).map_err(|e| {
                    ToolError::failed(format!("{current} redirects to {location:?}: {e}"))
                })?;
            }
            (status, _) => return Ok(format!("HTTP {status} {current}\n\n{}", response.body)),
        }
    }
    Err(ToolError::failed(format!(
        "{url}: more than {MAX_REDIRECTS} redirects"
    )))
}

struct Response {
    status: u16,
    location: Option<String>,
    body: String,
}

/// One GET, no redirects.
fn get(url: &Url) -> Result<Response, String> {
    let request = OutgoingRequest::new(Fields::new());
    let scheme = if url.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    // Each setter refuses only a malformed value.
    let set = request
        .set_method(&Method::Get)
        .and(request.set_scheme(Some(&scheme)))
        .and(request.set_authority(Some(&url.authority)))
        .and(request.set_path_with_query(Some(&url.path)));
    set.map_err(|()| "the URL does not fit an HTTP request".to_owned())?;

    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(format!("{e:?}")),
        Some(Err(())) | None => return Err("the response was lost".to_owned()),
    };
    let status = response.status();
    let location = response
        .headers()
        .get("location")
        .into_iter()
        .next()
        .map(|v| String::from_utf8_lossy(&v).into_owned());
    let body = response.consume().map_err(|()| "no body".to_owned())?;
    let stream = body.stream().map_err(|()| "no body stream".to_owned())?;
    let mut bytes = Vec::new();
    while bytes.len() < MAX_BODY {
        match stream.blocking_read((MAX_BODY - bytes.len()).min(64 << 10) as u64) {
            Ok(chunk) => bytes.extend(chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the body: {}", e.to_debug_string()));
            }
        }
    }
    let mut body = String::from_utf8_lossy(&bytes).into_owned();
    if bytes.len() >= MAX_BODY {
        body.push_str("\n(truncated at 1 MiB)");
    }
    Ok(Response {
        status,
        location,
        body,
    })
}

/// An http(s) URL, split the way wasi:http wants it.
#[derive(Debug, PartialEq)]
struct Url {
    https: bool,
    /// host[:port]
    authority: String,
    /// path[?query], starting with `/`; no fragment.
    path: String,
}

impl Url {
    fn parse(text: &str) -> Result<Self, String> {
        let (scheme, rest) = text.split_once("://").ok_or("not an absolute URL")?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => return Err(format!("unsupported scheme {other:?}")),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.is_empty() {
            return Err("no host".to_owned());
        }
        Ok(Self {
            https,
            authority: authority.to_owned(),
            path: normalize(path),
        })
    }

    /// `location` (from a redirect) taken relative to this URL.
    fn join(&self, location: &str) -> Result<Self, String> {
        let scheme = if self.https { "https" } else { "http" };
        if location.contains("://") {
            Self::parse(location)
        } else if location.starts_with("//") {
            Self::parse(&format!("{scheme}:{location}"))
        } else if location.starts_with('/') {
            Ok(Self {
                path: normalize(location),
                ..self.with_path("")
            })
        } else {
            let without_query = self.path.split(['?', '#']).next().unwrap_or("/");
            let folder = &without_query[..without_query.rfind('/').map_or(0, |i| i + 1)];
            Ok(self.with_path(&normalize(&format!("{folder}{location}"))))
        }
    }

    fn with_path(&self, path: &str) -> Self {
        Self {
            https: self.https,
            authority: self.authority.clone(),
            path: path.to_owned(),
        }
    }
}

/// A path with query, without fragment, starting with `/`.
fn normalize(path: &str) -> String {
    let path = path.split('#').next().unwrap_or("");
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority, self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_join() {
        let url = Url::parse("HTTP://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(url.to_string(), "http://127.0.0.1:8080/a/b?x=1");
        assert_eq!(Url::parse("https://h").unwrap().to_string(), "https://h/");
        assert_eq!(Url::parse("http://h?q").unwrap().path, "/?q");
        assert!(Url::parse("ftp://h/").is_err());
        assert!(Url::parse("http:///x").is_err());
        assert!(Url::parse("/x").is_err());
        let join = |loc: &str| url.join(loc).unwrap().to_string();
        assert_eq!(join("http://other:1/z"), "http://other:1/z");
        assert_eq!(join("//other/z"), "http://other/z");
        assert_eq!(join("/z?q"), "http://127.0.0.1:8080/z?q");
        assert_eq!(join("c"), "http://127.0.0.1:8080/a/c");
    }
}
