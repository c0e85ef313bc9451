//! The `[tracing]` table of piton.toml: where spans of tool calls go (OpenTelemetry,
//! OTLP over HTTP with protobuf bodies; see docs/operations.md). Off unless `otlp` is
//! given. Like `[audit]`, it takes effect when piton starts, not at a reload.
//!
//! ```toml
//! [tracing]
//! otlp = "http://127.0.0.1:4318"   # a collector's OTLP/HTTP address; spans go to /v1/traces
//! service_name = "piton"           # the spans' service.name (default "piton")
//! ```

use std::fmt;

use serde::Deserialize;

/// The `service.name` spans carry unless `service_name` says otherwise.
pub const DEFAULT_SERVICE_NAME: &str = "piton";

/// What piton.toml's `[tracing]` table sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracingSettings {
    /// Where spans are sent; `None`: no spans are made.
    pub otlp: Option<OtlpEndpoint>,
    /// The `service.name` of the spans' resource.
    pub service_name: String,
}

impl Default for TracingSettings {
    fn default() -> Self {
        Self {
            otlp: None,
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
        }
    }
}

/// The URL spans are POSTed to: `http` or `https`, with a host. An address given with
/// no path gets the OTLP/HTTP traces path, `/v1/traces`; one with a path is used as
/// is (a collector behind a proxy at another path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpEndpoint(String);

impl OtlpEndpoint {
    /// The path a collector takes spans at (the OTLP/HTTP specification's).
    pub const TRACES_PATH: &'static str = "/v1/traces";

    /// The endpoint `text` names, or why it names none.
    pub fn parse(text: &str) -> Result<Self, TracingError> {
        // The scheme first: a URL of another kind (file:///…) may not parse as HTTP's.
        if let Some((scheme, _)) = text.split_once("://")
            && !scheme.eq_ignore_ascii_case("http")
            && !scheme.eq_ignore_ascii_case("https")
        {
            return Err(TracingError::Scheme(text.to_owned(), scheme.to_owned()));
        }
        let uri: http::Uri = text.parse().map_err(|e: http::uri::InvalidUri| {
            TracingError::NotAUrl(text.to_owned(), e.to_string())
        })?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            Some(other) => return Err(TracingError::Scheme(text.to_owned(), other.to_owned())),
            None => return Err(TracingError::NoScheme(text.to_owned())),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(TracingError::NoHost(text.to_owned()));
        }
        if uri.query().is_some() {
            return Err(TracingError::Query(text.to_owned()));
        }
        if uri.path().is_empty() || uri.path() == "/" {
            let full = format!(
                "{}://{}{}",
                uri.scheme_str().unwrap_or("http"),
                uri.authority().map(|a| a.as_str()).unwrap_or_default(),
                Self::TRACES_PATH
            );
            return Ok(Self(full));
        }
        Ok(Self(uri.to_string()))
    }

    /// The full URL.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OtlpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong in the `[tracing]` table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TracingError {
    /// A URL of another scheme: the text and its scheme.
    #[error(
        "{0:?} has the scheme {1:?}: piton sends OTLP over HTTP, so give an http:// or \
         https:// URL such as \"http://127.0.0.1:4318\" (a collector's OTLP/HTTP port is \
         usually 4318, its gRPC one 4317)"
    )]
    Scheme(String, String),
    /// Not a URL: the text and why.
    #[error("{0:?} is not a URL ({1}): give one such as \"http://127.0.0.1:4318\"")]
    NotAUrl(String, String),
    /// No scheme: the text.
    #[error("{0:?} has no scheme: write \"http://{0}\" (or https://)")]
    NoScheme(String),
    /// No host: the text.
    #[error("{0:?} names no host: give one such as \"http://127.0.0.1:4318\"")]
    NoHost(String),
    /// A query: the text.
    #[error("{0:?} has a query: give the collector's address, with no `?…`")]
    Query(String),
    /// `otlp = ""`.
    #[error(
        "is empty: give a collector's OTLP/HTTP address such as \"http://127.0.0.1:4318\"; \
         leave `otlp` out for no tracing"
    )]
    EmptyOtlp,
    /// `service_name` without `otlp`.
    #[error(
        "has no effect without `otlp`: add otlp = \"http://127.0.0.1:4318\" (your \
         collector's address) to the [tracing] table, or remove `service_name`"
    )]
    NameWithoutOtlp,
    /// `service_name = ""`.
    #[error("is empty: give a name such as \"piton\", or leave it out for \"piton\"")]
    EmptyName,
}

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTracing {
    otlp: Option<String>,
    service_name: Option<String>,
}

/// On error: the key (`tracing.otlp`) and what is wrong with it.
type KeyError = (String, TracingError);

impl TracingSettings {
    /// The settings of a `[tracing]` table.
    pub(crate) fn parse(raw: RawTracing) -> Result<Self, KeyError> {
        let otlp = match raw.otlp.as_deref() {
            None => None,
            Some("") => return Err(("tracing.otlp".into(), TracingError::EmptyOtlp)),
            Some(text) => {
                Some(OtlpEndpoint::parse(text).map_err(|m| ("tracing.otlp".to_owned(), m))?)
            }
        };
        if otlp.is_none() && raw.service_name.is_some() {
            return Err(("tracing.service_name".into(), TracingError::NameWithoutOtlp));
        }
        let service_name = match raw.service_name {
            None => DEFAULT_SERVICE_NAME.to_owned(),
            Some(name) if name.trim().is_empty() => {
                return Err(("tracing.service_name".into(), TracingError::EmptyName));
            }
            Some(name) => name,
        };
        Ok(Self { otlp, service_name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TracingSettings, (String, String)> {
        let raw: RawTracing = toml::from_str(text).map_err(|e| (String::new(), e.to_string()))?;
        TracingSettings::parse(raw).map_err(|(key, e)| (key, e.to_string()))
    }

    fn url(text: &str) -> Result<String, (String, String)> {
        parse(&format!("otlp = {text:?}")).map(|s| s.otlp.expect("on").to_string())
    }

    #[test]
    fn off_by_default() {
        let settings = parse("").expect("empty table");
        assert_eq!(settings, TracingSettings::default());
        assert_eq!(settings.otlp, None);
        assert_eq!(settings.service_name, "piton");
    }

    #[test]
    fn an_address_gets_the_traces_path_and_a_path_is_kept() {
        let cases = [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
            (
                "https://otel.example.com",
                "https://otel.example.com/v1/traces",
            ),
            (
                "http://collector:4318/v1/traces",
                "http://collector:4318/v1/traces",
            ),
            (
                "https://proxy.example.com/otlp/v1/traces",
                "https://proxy.example.com/otlp/v1/traces",
            ),
            ("http://[::1]:4318", "http://[::1]:4318/v1/traces"),
        ];
        for (given, sent_to) in cases {
            assert_eq!(url(given).as_deref(), Ok(sent_to), "{given}");
        }
    }

    #[test]
    fn the_service_name_is_set_with_otlp_only() {
        let settings =
            parse("otlp = \"http://c:4318\"\nservice_name = \"tools-eu\"").expect("valid");
        assert_eq!(settings.service_name, "tools-eu");
        let (key, message) = parse("service_name = \"x\"").expect_err("no otlp");
        assert_eq!(key, "tracing.service_name");
        assert!(message.contains("add otlp ="), "{message}");
        let (key, _) = parse("otlp = \"http://c:4318\"\nservice_name = \" \"").expect_err("blank");
        assert_eq!(key, "tracing.service_name");
    }

    #[test]
    fn errors_name_the_key_and_the_fix() {
        let cases = [
            ("", "leave `otlp` out"),
            ("grpc://c:4317", "http:// or https://"),
            ("file:///tmp/spans", "http:// or https://"),
            ("127.0.0.1:4318", "has no scheme"),
            ("collector", "has no scheme"),
            ("http://", "not a URL"),
            ("http://c:4318/v1/traces?x=1", "has a query"),
            ("http://c d:4318", "not a URL"),
        ];
        for (given, hint) in cases {
            let (key, message) = parse(&format!("otlp = {given:?}")).expect_err(given);
            assert_eq!(key, "tracing.otlp", "{given}");
            assert!(message.contains(hint), "{given}: {message}");
        }
        let (_, unknown) = parse("endpoint = \"x\"").expect_err("unknown key");
        assert!(unknown.contains("unknown field `endpoint`"), "{unknown}");
    }
}
