//! Which `Host` and `Origin` headers name `serve --http`: its bound address, and
//! the names an operator allows with `--allow-host` (the name clients use for a load
//! balancer in front of replicas). Anything else is refused, so a web page cannot
//! reach piton through DNS rebinding.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use http::{HeaderMap, header};

/// Which `Host` and `Origin` values name this server.
///
/// The port must be the bound one. The host must be the bound IP; for a loopback
/// address also `localhost`; for an unspecified one (`0.0.0.0`, `::`) any IP
/// literal or `localhost`. A DNS name is never accepted otherwise: rebinding
/// needs one, an IP literal cannot be rebound. A present `Origin` must be `http://`
/// such a host and port.
///
/// Besides, each [`AllowedHost`] (`--allow-host`) is accepted as it is written:
/// its name on any port, or on its port if it gives one; as an `Origin`, over
/// `http://` or `https://`. A name the operator chose is not one an attacker's page
/// can rebind.
#[derive(Clone, Debug)]
pub struct HostCheck {
    bound: SocketAddr,
    allowed: Vec<AllowedHost>,
}

/// A `Host` that names this server besides its bound address (`--allow-host`):
/// the name (or address) clients use for a load balancer or a proxy in front of it,
/// with or without a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowedHost {
    /// Lower-case, as written otherwise (an IPv6 address in brackets).
    host: String,
    /// Any port when `None`.
    port: Option<u16>,
}

impl AllowedHost {
    /// Whether `authority` (a `Host` value) is this one.
    fn matches(&self, authority: &http::uri::Authority) -> bool {
        authority.host().eq_ignore_ascii_case(&self.host)
            && self
                .port
                .is_none_or(|port| authority.port_u16() == Some(port))
    }
}

impl FromStr for AllowedHost {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |why: &str| {
            format!(
                "--allow-host {text:?}: {why}; give the host name (or address) clients \
                 use, with a port or not, e.g. --allow-host piton.example.com or \
                 --allow-host lb.internal:8080"
            )
        };
        let authority: http::uri::Authority = text
            .parse()
            .map_err(|_| fail("not a host name or a host:port"))?;
        if authority.as_str().contains('@') {
            return Err(fail("a user@ part is not a host"));
        }
        let host = authority.host();
        if host.is_empty() {
            return Err(fail("it names no host"));
        }
        // What follows the host: nothing, or `:` and a port.
        let port = match authority.as_str().get(host.len()..).unwrap_or_default() {
            "" => None,
            rest => Some(
                rest.strip_prefix(':')
                    .and_then(|port| port.parse::<u16>().ok())
                    .filter(|port| *port != 0)
                    .ok_or_else(|| fail("the port is not a number from 1 to 65535"))?,
            ),
        };
        Ok(Self {
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

impl std::fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// Whether an Origin's authority and a Host header name the same host and port.
fn same_place(origin: &http::uri::Authority, host: &str) -> bool {
    host.parse::<http::uri::Authority>().is_ok_and(|host| {
        host.host().eq_ignore_ascii_case(origin.host())
            && host.port_u16().unwrap_or(80) == origin.port_u16().unwrap_or(80)
    })
}

impl HostCheck {
    /// The check for a server listening on `bound`.
    pub fn new(bound: SocketAddr) -> Self {
        Self {
            bound,
            allowed: Vec::new(),
        }
    }

    /// The same check, accepting `allowed` too.
    pub fn allowing(mut self, allowed: Vec<AllowedHost>) -> Self {
        self.allowed = allowed;
        self
    }

    /// `Ok` when the request names this server, else why not.
    pub fn check(&self, uri: &http::Uri, headers: &HeaderMap) -> Result<(), &'static str> {
        let host = headers
            .get(header::HOST)
            .ok_or("the request has no Host header")?;
        let host = host.to_str().map_err(|_| "the Host header is not text")?;
        if !self.allows("http", host) {
            return Err("the Host header does not name this server");
        }
        // An absolute-form request target names a host too; it must agree.
        if let Some(authority) = uri.authority()
            && !self.allows(uri.scheme_str().unwrap_or("http"), authority.as_str())
        {
            return Err("the request target does not name this server");
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin
                .to_str()
                .map_err(|_| "the Origin header is not text")?;
            let uri: http::Uri = origin
                .parse()
                .map_err(|_| "the Origin header is not a URL")?;
            // Bound to every interface, any IP literal names this server, so the
            // Origin must also be the very address the request was sent to.
            let scheme = uri.scheme_str().unwrap_or("");
            let from_here = uri.path_and_query().is_none_or(|p| p.as_str() == "/")
                && uri.authority().is_some_and(|authority| {
                    self.allowed_name(scheme, authority.as_str())
                        || (self.allows(scheme, authority.as_str())
                            && (!self.bound.ip().is_unspecified() || same_place(authority, host)))
                });
            if !from_here {
                return Err("the Origin header is not this server");
            }
        }
        Ok(())
    }

    /// Whether `scheme://authority` is one of the allowed hosts (http or https).
    fn allowed_name(&self, scheme: &str, authority: &str) -> bool {
        if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
            return false;
        }
        authority
            .parse::<http::uri::Authority>()
            .is_ok_and(|authority| {
                !authority.as_str().contains('@')
                    && self
                        .allowed
                        .iter()
                        .any(|allowed| allowed.matches(&authority))
            })
    }

    /// Whether `scheme://authority` names this server.
    fn allows(&self, scheme: &str, authority: &str) -> bool {
        if self.allowed_name(scheme, authority) {
            return true;
        }
        if !scheme.eq_ignore_ascii_case("http") {
            return false;
        }
        let Ok(authority) = authority.parse::<http::uri::Authority>() else {
            return false;
        };
        if authority.as_str().contains('@') {
            return false;
        }
        if authority.port_u16().unwrap_or(80) != self.bound.port() {
            return false;
        }
        let host = authority.host();
        let bound = self.bound.ip();
        if host.eq_ignore_ascii_case("localhost") {
            return bound.is_loopback() || bound.is_unspecified();
        }
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        match literal.parse::<IpAddr>() {
            Ok(ip) => bound.is_unspecified() || ip == bound,
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bound: &str, host: Option<&str>, origin: Option<&str>) -> Result<(), &'static str> {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, host.parse().expect("a header value"));
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, origin.parse().expect("a header value"));
        }
        let uri: http::Uri = "/mcp".parse().expect("a URI");
        HostCheck::new(bound.parse().expect("an address")).check(&uri, &headers)
    }

    #[test]
    fn loopback_accepts_its_address_and_localhost_on_its_port_only() {
        let bound = "127.0.0.1:8080";
        for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080"] {
            assert_eq!(check(bound, Some(host), None), Ok(()), "{host}");
        }
        for host in [
            "127.0.0.1",
            "127.0.0.1:8081",
            "localhost",
            "evil.example:8080",
            "127.0.0.2:8080",
            "[::1]:8080",
            "user@127.0.0.1:8080",
            "localhost.:8080",
        ] {
            assert!(check(bound, Some(host), None).is_err(), "{host}");
        }
        assert!(check(bound, None, None).is_err(), "no Host");
    }

    #[test]
    fn ipv6_loopback_accepts_its_bracketed_address() {
        assert_eq!(check("[::1]:9000", Some("[::1]:9000"), None), Ok(()));
        assert_eq!(check("[::1]:9000", Some("localhost:9000"), None), Ok(()));
        assert!(check("[::1]:9000", Some("127.0.0.1:9000"), None).is_err());
    }

    #[test]
    fn port_80_may_be_left_out() {
        assert_eq!(check("127.0.0.1:80", Some("127.0.0.1"), None), Ok(()));
        assert_eq!(
            check("127.0.0.1:80", Some("localhost"), Some("http://localhost")),
            Ok(())
        );
    }

    #[test]
    fn a_present_origin_must_be_this_server_over_http() {
        let bound = "127.0.0.1:8080";
        let host = Some("127.0.0.1:8080");
        for origin in ["http://127.0.0.1:8080", "http://localhost:8080"] {
            assert_eq!(check(bound, host, Some(origin)), Ok(()), "{origin}");
        }
        for origin in [
            "http://evil.example:8080",
            "http://evil.example",
            "https://127.0.0.1:8080",
            "http://127.0.0.1:8081",
            "http://127.0.0.1",
            "null",
            "",
            "http://127.0.0.1:8080/page",
        ] {
            assert!(check(bound, host, Some(origin)).is_err(), "{origin}");
        }
    }

    #[test]
    fn a_non_loopback_address_accepts_only_itself() {
        let bound = "192.0.2.7:8080";
        assert_eq!(check(bound, Some("192.0.2.7:8080"), None), Ok(()));
        for host in ["localhost:8080", "127.0.0.1:8080", "myhost.lan:8080"] {
            assert!(check(bound, Some(host), None).is_err(), "{host}");
        }
    }

    #[test]
    fn every_interface_accepts_ip_literals_and_localhost_but_no_names() {
        let bound = "0.0.0.0:8080";
        for host in [
            "192.0.2.7:8080",
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
        ] {
            assert_eq!(check(bound, Some(host), None), Ok(()), "{host}");
        }
        for host in ["evil.example:8080", "192.0.2.7:8081"] {
            assert!(check(bound, Some(host), None).is_err(), "{host}");
        }
        // The Origin must be the address the request went to, not any IP literal.
        let host = Some("127.0.0.1:8080");
        assert_eq!(check(bound, host, Some("http://127.0.0.1:8080")), Ok(()));
        assert!(check(bound, host, Some("http://203.0.113.5:8080")).is_err());
        assert!(check(bound, host, Some("http://localhost:8080")).is_err());
    }

    fn check_allowing(
        bound: &str,
        allowed: &[&str],
        host: &str,
        origin: Option<&str>,
    ) -> Result<(), &'static str> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().expect("a header value"));
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, origin.parse().expect("a header value"));
        }
        let allowed = allowed
            .iter()
            .map(|a| a.parse().expect("an allowed host"))
            .collect();
        let uri: http::Uri = "/mcp".parse().expect("a URI");
        HostCheck::new(bound.parse().expect("an address"))
            .allowing(allowed)
            .check(&uri, &headers)
    }

    #[test]
    fn an_allowed_host_is_accepted_on_any_port_or_on_its_own() {
        let bound = "127.0.0.1:8080";
        let any_port = &["Piton.Example"];
        for host in ["piton.example", "piton.example:443", "PITON.example:9000"] {
            assert_eq!(
                check_allowing(bound, any_port, host, None),
                Ok(()),
                "{host}"
            );
        }
        // The bound address still names it; other names still do not.
        assert_eq!(
            check_allowing(bound, any_port, "127.0.0.1:8080", None),
            Ok(())
        );
        for host in [
            "evil.example:8080",
            "piton.example.evil:80",
            "user@piton.example",
        ] {
            assert!(
                check_allowing(bound, any_port, host, None).is_err(),
                "{host}"
            );
        }
        let one_port = &["lb.internal:8443"];
        assert_eq!(
            check_allowing(bound, one_port, "lb.internal:8443", None),
            Ok(())
        );
        for host in ["lb.internal", "lb.internal:8080", "lb.internal:80"] {
            assert!(
                check_allowing(bound, one_port, host, None).is_err(),
                "{host}"
            );
        }
    }

    #[test]
    fn an_allowed_host_is_accepted_as_an_http_or_https_origin() {
        let bound = "0.0.0.0:8080";
        let allowed = &["lb.internal"];
        for origin in ["http://lb.internal", "https://lb.internal:8443"] {
            assert_eq!(
                check_allowing(bound, allowed, "lb.internal", Some(origin)),
                Ok(()),
                "{origin}"
            );
        }
        for origin in [
            "http://evil.example",
            "ftp://lb.internal",
            "https://lb.internal/x",
        ] {
            assert!(
                check_allowing(bound, allowed, "lb.internal", Some(origin)).is_err(),
                "{origin}"
            );
        }
    }

    #[test]
    fn a_bad_allowed_host_is_refused_naming_it_and_the_fix() {
        for bad in [
            "",
            "a b",
            "user@host",
            "host:port",
            "http://host",
            "host:99999",
            "host:",
            "host:0",
            "[::1]:99999",
        ] {
            let error = bad.parse::<AllowedHost>().expect_err(bad);
            assert!(error.contains("--allow-host"), "{error}");
            assert!(error.contains("e.g."), "{error}");
        }
        let parsed: AllowedHost = "LB.internal:8080".parse().expect("parses");
        assert_eq!(parsed.to_string(), "lb.internal:8080");
        let parsed: AllowedHost = "[::1]".parse().expect("parses");
        assert_eq!(parsed.to_string(), "[::1]");
    }

    #[test]
    fn an_absolute_request_target_must_name_this_server_too() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:8080".parse().expect("value"));
        let check = HostCheck::new("127.0.0.1:8080".parse().expect("an address"));
        let here: http::Uri = "http://127.0.0.1:8080/mcp".parse().expect("a URI");
        let there: http::Uri = "http://evil.example:8080/mcp".parse().expect("a URI");
        assert_eq!(check.check(&here, &headers), Ok(()));
        assert!(check.check(&there, &headers).is_err());
    }
}
