//! The HTTP client fetches go through: piton's rustls (ring, webpki roots), redirects
//! followed only to the same host and port (and never down to plain HTTP off
//! loopback), and every body read a chunk at a time under a bound, into a file or a
//! small buffer.

use std::io::Write as _;

use reqwest::header::HeaderMap;
use sha2::{Digest as _, Sha256};

use crate::supply::fetched::FetchProblem;
use crate::supply::reference::is_loopback;

/// The most redirects one request follows.
const MAX_REDIRECTS: usize = 5;

/// A redirect the client refused to follow.
#[derive(Debug, thiserror::Error)]
#[error("redirect from {from} to {to} refused")]
struct RedirectRefused {
    from: String,
    to: String,
    why: &'static str,
}

/// The client of one fetch.
pub(crate) struct Http {
    client: reqwest::Client,
}

/// A body written to a file: its SHA-256 (hex) and size.
pub(crate) struct Written {
    pub(crate) sha256: String,
    pub(crate) size: u64,
}

impl Http {
    pub(crate) fn new() -> Result<Self, FetchProblem> {
        let tls = crate::tls::client_config().map_err(FetchProblem::Client)?;
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let from = attempt.previous().last().cloned();
            let to = attempt.url().clone();
            let too_many = attempt.previous().len() > MAX_REDIRECTS;
            let why = if too_many {
                Some("too many redirects")
            } else {
                redirect_refusal(from.as_ref(), &to)
            };
            match why {
                None => attempt.follow(),
                Some(why) => attempt.error(RedirectRefused {
                    from: from.as_ref().map(ToString::to_string).unwrap_or_default(),
                    to: to.to_string(),
                    why,
                }),
            }
        });
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .redirect(policy)
            .connect_timeout(std::time::Duration::from_secs(30))
            .read_timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|e| FetchProblem::Client(e.to_string()))?;
        Ok(Self { client })
    }

    /// Sends a request for `url` with `headers` (`head`: a HEAD), and gives the
    /// response once its status is a success.
    pub(crate) async fn send(
        &self,
        url: &str,
        headers: HeaderMap,
        head: bool,
    ) -> Result<reqwest::Response, FetchProblem> {
        let response = self.answer(url, headers, head).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(FetchProblem::Status {
                url: url.to_owned(),
                status: status.as_u16(),
            });
        }
        Ok(response)
    }

    /// [`Http::send`], whatever the status: a registry's `/v2/` answers 401 with
    /// what it wants. The body is left unread.
    pub(crate) async fn answer(
        &self,
        url: &str,
        headers: HeaderMap,
        head: bool,
    ) -> Result<reqwest::Response, FetchProblem> {
        let request = if head {
            self.client.head(url)
        } else {
            self.client.get(url)
        };
        request
            .headers(headers)
            .send()
            .await
            .map_err(|e| problem_of(url, &e))
    }

    /// The body of `response`, at most `limit` bytes (more is [`FetchProblem::TooLarge`]).
    pub(crate) async fn small_body(
        mut response: reqwest::Response,
        limit: u64,
        what: &'static str,
    ) -> Result<Vec<u8>, FetchProblem> {
        let url = response.url().to_string();
        if let Some(length) = response.content_length()
            && length > limit
        {
            return Err(FetchProblem::TooLarge {
                what,
                size: length,
                limit,
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| problem_of(&url, &e))? {
            if body.len() as u64 + chunk.len() as u64 > limit {
                return Err(FetchProblem::TooLarge {
                    what,
                    size: body.len() as u64 + chunk.len() as u64,
                    limit,
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Writes the body of `response` to `file`, at most `limit` bytes, hashing it.
    pub(crate) async fn to_file(
        mut response: reqwest::Response,
        file: &mut std::fs::File,
        limit: u64,
    ) -> Result<Written, FetchProblem> {
        let url = response.url().to_string();
        if let Some(length) = response.content_length()
            && length > limit
        {
            return Err(FetchProblem::TooLarge {
                what: "the component",
                size: length,
                limit,
            });
        }
        let mut hasher = Sha256::new();
        let mut size = 0_u64;
        while let Some(chunk) = response.chunk().await.map_err(|e| problem_of(&url, &e))? {
            size += chunk.len() as u64;
            if size > limit {
                return Err(FetchProblem::TooLarge {
                    what: "the component",
                    size,
                    limit,
                });
            }
            hasher.update(&chunk);
            file.write_all(&chunk).map_err(FetchProblem::Write)?;
        }
        Ok(Written {
            sha256: hex::encode(hasher.finalize()),
            size,
        })
    }
}

/// Why a redirect from `from` to `to` is not followed, or `None` when it is: only
/// to the same host and port (a registry's blob redirected to storage elsewhere is
/// refused too: fetch from there, if you trust it), and never to plain HTTP off
/// loopback, whatever the host.
fn redirect_refusal(from: Option<&reqwest::Url>, to: &reqwest::Url) -> Option<&'static str> {
    if to.scheme() != "https" && to.scheme() != "http" {
        return Some("it leads to another scheme");
    }
    if to.scheme() == "http" && !is_loopback(to.host_str().unwrap_or_default()) {
        return Some("it leads to plain HTTP");
    }
    let host = |url: &reqwest::Url| url.host_str().unwrap_or_default().to_ascii_lowercase();
    let Some(from) = from else {
        return Some("it leads to another host");
    };
    if host(from) != host(to) {
        return Some("it leads to another host");
    }
    // Another port of the same host can be another server, another owner.
    if from.port_or_known_default() != to.port_or_known_default() {
        return Some("it leads to another port");
    }
    None
}

/// The header `name` of `headers` as text, if present and text.
pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// What a failed request to `url` means: a refused redirect, or the transport's error.
fn problem_of(url: &str, error: &reqwest::Error) -> FetchProblem {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<RedirectRefused>() {
            return FetchProblem::Redirect {
                from: refused.from.clone(),
                to: refused.to.clone(),
                why: refused.why,
            };
        }
        source = e.source();
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        text.push_str(&format!(": {e}"));
        source = e.source();
    }
    FetchProblem::Request {
        url: url.to_owned(),
        error: text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_is_followed_only_to_the_same_host_and_port() {
        let url = |text: &str| reqwest::Url::parse(text).expect("a URL");
        let cases = [
            ("https://a.example/x", "https://a.example/y", None),
            ("https://a.example/x", "https://A.EXAMPLE:443/y", None),
            ("http://127.0.0.1:5000/x", "http://127.0.0.1:5000/y", None),
            ("http://127.0.0.1:5000/x", "https://127.0.0.1:5000/y", None),
            (
                "https://a.example/x",
                "https://b.example/y",
                Some("it leads to another host"),
            ),
            (
                "https://a.example/x",
                "https://a.example:8443/y",
                Some("it leads to another port"),
            ),
            (
                "http://127.0.0.1:5000/x",
                "http://127.0.0.1:5001/y",
                Some("it leads to another port"),
            ),
            (
                "http://127.0.0.1:5000/x",
                "http://localhost:5000/y",
                Some("it leads to another host"),
            ),
            (
                "https://a.example/x",
                "http://a.example/y",
                Some("it leads to plain HTTP"),
            ),
            (
                "http://127.0.0.1:5000/x",
                "http://192.0.2.1:5000/y",
                Some("it leads to plain HTTP"),
            ),
            (
                "https://a.example/x",
                "ftp://a.example/y",
                Some("it leads to another scheme"),
            ),
        ];
        for (from, to, why) in cases {
            assert_eq!(
                redirect_refusal(Some(&url(from)), &url(to)),
                why,
                "{from} → {to}"
            );
        }
    }
}
