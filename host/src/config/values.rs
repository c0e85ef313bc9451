//! Parsers for the values in piton.toml: sizes, durations, `host:port` grants and
//! `${VAR}` templates. Each error says what a right value looks like.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use crate::grants::{Host, NetGrant, Secret};

const HOST_PORT: &str =
    "write host:port, such as \"api.example.com:443\", \"127.0.0.1:8080\" or \"[::1]:8080\"";
const NET_ENTRY: &str =
    "write \"host:port\", or { host = \"host:port\", headers = { .. }, tcp = true }";

/// A value in piton.toml that cannot be used: what was written, and what a right
/// value looks like.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// Not a number and a size unit.
    #[error(
        "{0:?} is not a size: write a number and a unit, such as \"64MiB\", \"512KiB\" or \"1GiB\""
    )]
    Size(String),
    /// A size of zero.
    #[error("{0:?} is zero; give a size above zero")]
    ZeroSize(String),
    /// Not a number and a time unit.
    #[error(
        "{0:?} is not a duration: write a number and a unit, such as \"5s\", \"500ms\" or \"2m\""
    )]
    Duration(String),
    /// A duration of zero.
    #[error("{0:?} is zero; give a duration above zero")]
    ZeroDuration(String),
    /// A template with `${` and no `}`.
    #[error("{0:?} has `${{` without a closing `}}`")]
    UnclosedVariable(String),
    /// `${NAME}` whose NAME is not letters, digits and `_`.
    #[error("`${{{0}}}` is not a variable name: use letters, digits and `_`")]
    VariableName(String),
    /// `${NAME}` whose variable is not set.
    #[error("the environment variable {0} is not set; set it before starting piton")]
    UnsetVariable(String),
    /// A header name HTTP does not allow.
    #[error("{0:?} is not an HTTP header name")]
    HeaderName(String),
    /// A header value (after `${VAR}`) with a control character.
    #[error(
        "the value has a line break, NUL or other control character; HTTP headers cannot carry one"
    )]
    HeaderValue,
    /// A network entry neither a string nor a table: its TOML type.
    #[error("a {0} is not a network entry; {ex}", ex = NET_ENTRY)]
    NetEntry(&'static str),
    /// A network entry's `host` that is not a string.
    #[error("host must be a string; {ex}", ex = NET_ENTRY)]
    NetHostType,
    /// A network entry without `host`.
    #[error("is missing; {ex}", ex = NET_ENTRY)]
    NetHostMissing,
    /// A network entry's `tcp` that is not a boolean.
    #[error("write tcp = true to allow raw TCP to this host:port, or leave it out")]
    NetTcp,
    /// A network entry's `headers` that is not a table.
    #[error("headers must be a table, such as {{ Authorization = \"Bearer ${{TOKEN}}\" }}")]
    NetHeaders,
    /// A header value that is not a string.
    #[error("a header value must be a string, such as \"Bearer ${{TOKEN}}\"")]
    NetHeaderType,
    /// A key a network entry does not take.
    #[error("unknown key {0:?}: a network entry takes host, headers and tcp")]
    NetKey(String),
    /// `scheme://` before host:port.
    #[error("{0:?} has a scheme; {ex}", ex = HOST_PORT)]
    Scheme(String),
    /// A `*` in the host.
    #[error("{0:?}: wildcards are not supported; grant each host")]
    Wildcard(String),
    /// `[` without `]:port`.
    #[error("{0:?} is not [ipv6]:port; {ex}", ex = HOST_PORT)]
    Ipv6Port(String),
    /// Not an IPv6 address between `[` and `]`.
    #[error("{0:?} is not an IPv6 address")]
    Ipv6(String),
    /// No `:port`.
    #[error("{0:?} has no port; {ex}", ex = HOST_PORT)]
    NoPort(String),
    /// Neither a DNS name nor an IP address.
    #[error("{0:?} is not a host name or IP address; {ex}", ex = HOST_PORT)]
    Host(String),
    /// Not a port from 1 to 65535.
    #[error("{0:?} is not a port (1 to 65535); {ex}", ex = HOST_PORT)]
    Port(String),
    /// A command line with an open quote (`'` or `"`).
    #[error("{text:?} has a {quote} without its closing quote")]
    UnclosedQuote {
        /// The command line.
        text: String,
        /// The quote left open.
        quote: char,
    },
}

/// `"64MiB"`, `"1 GiB"`, `"512KiB"`, `"100MB"`, `"4096"` (bytes) → bytes.
pub(crate) fn parse_size(text: &str) -> Result<u64, ValueError> {
    let fail = || ValueError::Size(text.to_owned());
    let (number, unit) = number_and_unit(text).ok_or_else(fail)?;
    let scale: u64 = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return Err(fail()),
    };
    let bytes = number.checked_mul(scale).ok_or_else(fail)?;
    if bytes == 0 {
        return Err(ValueError::ZeroSize(text.to_owned()));
    }
    Ok(bytes)
}

/// `"5s"`, `"500ms"`, `"2m"`, `"1h"` → a duration above zero.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, ValueError> {
    let fail = || ValueError::Duration(text.to_owned());
    let (number, unit) = number_and_unit(text).ok_or_else(fail)?;
    let duration = match unit {
        "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        "m" | "min" => Duration::from_secs(number.checked_mul(60).ok_or_else(fail)?),
        "h" => Duration::from_secs(number.checked_mul(3600).ok_or_else(fail)?),
        _ => return Err(fail()),
    };
    if duration.is_zero() {
        return Err(ValueError::ZeroDuration(text.to_owned()));
    }
    Ok(duration)
}

/// `"64 MiB"` → `(64, "MiB")`: leading digits and the trimmed rest.
fn number_and_unit(text: &str) -> Option<(u64, &str)> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    Some((number.parse().ok()?, unit.trim()))
}

/// `"Bearer ${TOKEN}"` with `TOKEN` from `env`. An unset variable is an error that
/// names it.
pub(crate) fn parse_env_template(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ValueError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ValueError::UnclosedVariable(text.to_owned()));
        };
        let name = &after[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ValueError::VariableName(name.to_owned()));
        }
        let value = env(name).ok_or_else(|| ValueError::UnsetVariable(name.to_owned()))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `"api.example.com:443"`, `"127.0.0.1:8080"` or `"[::1]:8080"`, with headers whose
/// values are `${VAR}` templates. On error: the sub-key (`""`, `.headers.NAME`) and
/// what is wrong.
pub(crate) fn parse_net_grant(
    text: &str,
    headers: &BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<NetGrant, (String, ValueError)> {
    let (host, port) = parse_host_port(text).map_err(|e| (String::new(), e))?;
    let mut parsed = Vec::new();
    for (name, template) in headers {
        let sub = format!(".headers.{name}");
        if !piton_wit::is_header_name(name) {
            return Err((sub, ValueError::HeaderName(name.clone())));
        }
        let value = parse_env_template(template, env).map_err(|e| (sub.clone(), e))?;
        if !piton_wit::is_header_value(&value) {
            return Err((sub, ValueError::HeaderValue));
        }
        parsed.push((name.clone(), Secret(value)));
    }
    Ok(NetGrant {
        host,
        port,
        headers: parsed,
        tcp: false,
    })
}

/// One `network` entry: `"host:port"`, or `{ host = "host:port", headers = { .. },
/// tcp = true }`. On error: the sub-key (`""`, `.tcp`, `.headers.NAME` ...) and what
/// is wrong.
pub(crate) fn parse_net_entry(
    entry: toml::Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<NetGrant, (String, ValueError)> {
    let table = match entry {
        toml::Value::String(host) => return parse_net_grant(&host, &BTreeMap::new(), env),
        toml::Value::Table(table) => table,
        other => return Err((String::new(), ValueError::NetEntry(other.type_str()))),
    };
    let fail = |sub: &str, error: ValueError| Err((sub.to_owned(), error));
    let (mut host, mut headers, mut tcp) = (None, BTreeMap::new(), false);
    for (name, value) in table {
        match (name.as_str(), value) {
            ("host", toml::Value::String(text)) => host = Some(text),
            ("host", _) => return fail(".host", ValueError::NetHostType),
            ("tcp", toml::Value::Boolean(flag)) => tcp = flag,
            ("tcp", _) => return fail(".tcp", ValueError::NetTcp),
            ("headers", toml::Value::Table(table)) => {
                for (header, value) in table {
                    let toml::Value::String(value) = value else {
                        return fail(&format!(".headers.{header}"), ValueError::NetHeaderType);
                    };
                    headers.insert(header, value);
                }
            }
            ("headers", _) => return fail(".headers", ValueError::NetHeaders),
            (other, _) => return fail(&format!(".{other}"), ValueError::NetKey(other.to_owned())),
        }
    }
    let Some(host) = host else {
        return fail(".host", ValueError::NetHostMissing);
    };
    let mut grant = parse_net_grant(&host, &headers, env)?;
    grant.tcp = tcp;
    Ok(grant)
}

fn parse_host_port(text: &str) -> Result<(Host, u16), ValueError> {
    if text.contains("://") {
        return Err(ValueError::Scheme(text.to_owned()));
    }
    if text.contains('*') {
        return Err(ValueError::Wildcard(text.to_owned()));
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (ip, port) = rest
            .split_once("]:")
            .ok_or_else(|| ValueError::Ipv6Port(text.to_owned()))?;
        let ip: IpAddr = ip.parse().map_err(|_| ValueError::Ipv6(ip.to_owned()))?;
        (Host::Ip(ip), port)
    } else {
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| ValueError::NoPort(text.to_owned()))?;
        let host = match host.parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) => {
                Host::Name(parse_dns_name(host).ok_or_else(|| ValueError::Host(host.to_owned()))?)
            }
        };
        (host, port)
    };
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| ValueError::Port(port.to_owned()))?;
    Ok((host, port))
}

/// `name` lowercased without a trailing dot, if it is a DNS name.
fn parse_dns_name(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if lower.is_empty()
        || lower.len() > 253
        || !lower.trim_end_matches('.').split('.').all(label_ok)
    {
        return None;
    }
    Some(lower.trim_end_matches('.').to_owned())
}

/// Splits a command line into words as a POSIX shell would without expanding
/// anything: whitespace separates, '…' and "…" quote, a backslash escapes the next
/// character (outside single quotes).
pub(crate) fn split_command(text: &str) -> Result<Vec<String>, ValueError> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => {
                            return Err(ValueError::UnclosedQuote {
                                text: text.to_owned(),
                                quote: '\'',
                            });
                        }
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => w.push(c),
                            None => break,
                        },
                        Some(c) => w.push(c),
                        None => {
                            return Err(ValueError::UnclosedQuote {
                                text: text.to_owned(),
                                quote: '"',
                            });
                        }
                    }
                }
            }
            '\\' => {
                if let Some(c) = chars.next() {
                    word.get_or_insert_with(String::new).push(c);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// A path from the environment variable `name`; unset or empty is `None`.
pub(crate) fn env_path(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let ok = [
            ("64MiB", 64 << 20),
            ("64 MiB", 64 << 20),
            ("512KiB", 512 << 10),
            ("1GiB", 1 << 30),
            ("100MB", 100_000_000),
            ("4096", 4096),
            ("10B", 10),
        ];
        for (text, bytes) in ok {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for text in [
            "",
            "MiB",
            "64 mb",
            "-1MiB",
            "1.5MiB",
            "99999999999999999999GiB",
        ] {
            assert_eq!(parse_size(text), Err(ValueError::Size(text.into())));
        }
        assert_eq!(parse_size("0"), Err(ValueError::ZeroSize("0".into())));
        assert_eq!(
            parse_size("lots").unwrap_err().to_string(),
            "\"lots\" is not a size: write a number and a unit, such as \"64MiB\", \"512KiB\" \
             or \"1GiB\""
        );
    }

    #[test]
    fn durations() {
        let ok = [
            ("5s", Duration::from_secs(5)),
            ("500ms", Duration::from_millis(500)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
        ];
        for (text, d) in ok {
            assert_eq!(parse_duration(text), Ok(d), "{text}");
        }
        for text in ["", "5", "5 seconds", "1.5s", "-1s"] {
            assert_eq!(parse_duration(text), Err(ValueError::Duration(text.into())));
        }
        assert_eq!(
            parse_duration("0s"),
            Err(ValueError::ZeroDuration("0s".into()))
        );
        assert_eq!(
            parse_duration("0s").unwrap_err().to_string(),
            "\"0s\" is zero; give a duration above zero"
        );
    }

    #[test]
    fn templates() {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        assert_eq!(
            parse_env_template("Bearer ${TOKEN}", &env),
            Ok("Bearer s3cret".into())
        );
        assert_eq!(parse_env_template("plain", &env), Ok("plain".into()));
        assert_eq!(
            parse_env_template("${TOKEN}${TOKEN}", &env),
            Ok("s3crets3cret".into())
        );
        assert_eq!(
            parse_env_template("${NOPE}", &env),
            Err(ValueError::UnsetVariable("NOPE".into()))
        );
        assert!(matches!(
            parse_env_template("${TOKEN", &env),
            Err(ValueError::UnclosedVariable(_))
        ));
        assert!(matches!(
            parse_env_template("${}", &env),
            Err(ValueError::VariableName(_))
        ));
        assert!(matches!(
            parse_env_template("${A-B}", &env),
            Err(ValueError::VariableName(_))
        ));
        assert_eq!(
            ValueError::UnsetVariable("NOPE".into()).to_string(),
            "the environment variable NOPE is not set; set it before starting piton"
        );
        assert_eq!(
            ValueError::UnclosedVariable("${TOKEN".into()).to_string(),
            "\"${TOKEN\" has `${` without a closing `}`"
        );
        assert_eq!(
            ValueError::VariableName("A-B".into()).to_string(),
            "`${A-B}` is not a variable name: use letters, digits and `_`"
        );
    }

    #[test]
    fn host_ports() {
        let name = |n: &str| Host::Name(n.to_owned());
        let ip = |i: &str| Host::Ip(i.parse().unwrap());
        let ok = [
            ("api.example.com:443", name("api.example.com"), 443),
            ("API.Example.COM:443", name("api.example.com"), 443),
            ("localhost:8080", name("localhost"), 8080),
            ("127.0.0.1:8080", ip("127.0.0.1"), 8080),
            ("[::1]:8080", ip("::1"), 8080),
            ("10.0.0.1:1", ip("10.0.0.1"), 1),
        ];
        for (text, host, port) in ok {
            assert_eq!(parse_host_port(text), Ok((host, port)), "{text}");
        }
        let text = |s: &str| s.to_owned();
        let bad = [
            (
                "api.example.com",
                ValueError::NoPort(text("api.example.com")),
            ),
            (
                "https://api.example.com:443",
                ValueError::Scheme(text("https://api.example.com:443")),
            ),
            (
                "*.example.com:443",
                ValueError::Wildcard(text("*.example.com:443")),
            ),
            ("api.example.com:0", ValueError::Port(text("0"))),
            ("api.example.com:65536", ValueError::Port(text("65536"))),
            ("api.example.com:http", ValueError::Port(text("http"))),
            ("bad_host:80", ValueError::Host(text("bad_host"))),
            ("-bad.com:80", ValueError::Host(text("-bad.com"))),
            ("[::1:80", ValueError::Ipv6Port(text("[::1:80"))),
            ("[nope]:80", ValueError::Ipv6(text("nope"))),
            (":80", ValueError::Host(text(""))),
        ];
        for (given, expected) in bad {
            assert_eq!(parse_host_port(given), Err(expected), "{given}");
        }
        assert_eq!(
            ValueError::NoPort(text("api.example.com")).to_string(),
            "\"api.example.com\" has no port; write host:port, such as \"api.example.com:443\", \
             \"127.0.0.1:8080\" or \"[::1]:8080\""
        );
        assert_eq!(
            ValueError::Host(text("bad_host")).to_string(),
            "\"bad_host\" is not a host name or IP address; write host:port, such as \
             \"api.example.com:443\", \"127.0.0.1:8080\" or \"[::1]:8080\""
        );
    }

    #[test]
    fn header_grants_expand_and_check_values() {
        let env = |name: &str| match name {
            "TOKEN" => Some("abc".to_owned()),
            "EVIL" => Some("a\r\nX-Injected: 1".to_owned()),
            _ => None,
        };
        let headers = BTreeMap::from([("Authorization".to_owned(), "Bearer ${TOKEN}".to_owned())]);
        let grant = parse_net_grant("api.github.com:443", &headers, &env).unwrap();
        assert_eq!(grant.headers[0].1.expose(), "Bearer abc");
        let evil = BTreeMap::from([("X".to_owned(), "${EVIL}".to_owned())]);
        assert_eq!(
            parse_net_grant("a.com:1", &evil, &env).unwrap_err(),
            (".headers.X".to_owned(), ValueError::HeaderValue)
        );
        let bad_name = BTreeMap::from([("Bad Name".to_owned(), "v".to_owned())]);
        assert_eq!(
            parse_net_grant("a.com:1", &bad_name, &env).unwrap_err(),
            (
                ".headers.Bad Name".to_owned(),
                ValueError::HeaderName("Bad Name".into())
            )
        );
    }

    #[test]
    fn command_lines_split_like_a_shell() {
        let cases: [(&str, &[&str]); 6] = [
            ("npx -y pkg", &["npx", "-y", "pkg"]),
            ("  a\tb  ", &["a", "b"]),
            ("run 'a b' \"c d\"", &["run", "a b", "c d"]),
            ("x ''", &["x", ""]),
            ("a\\ b \"q\\\"x\"", &["a b", "q\"x"]),
            ("", &[]),
        ];
        for (text, words) in cases {
            assert_eq!(split_command(text).unwrap(), words, "{text}");
        }
        assert!(matches!(
            split_command("a 'b"),
            Err(ValueError::UnclosedQuote { quote: '\'', .. })
        ));
        assert_eq!(
            split_command("a \"b"),
            Err(ValueError::UnclosedQuote {
                text: "a \"b".into(),
                quote: '"'
            })
        );
        assert_eq!(
            split_command("a 'b").unwrap_err().to_string(),
            "\"a 'b\" has a ' without its closing quote"
        );
        assert_eq!(
            split_command("a \"b").unwrap_err().to_string(),
            "\"a \\\"b\" has a \" without its closing quote"
        );
    }
}
