//! Parsers for the values in piton.toml: sizes, durations, `host:port` grants and
//! `${VAR}` templates. Each error says what a right value looks like.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use crate::grants::{Host, NetGrant, Secret};

/// `"64MiB"`, `"1 GiB"`, `"512KiB"`, `"100MB"`, `"4096"` (bytes) → bytes.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let fail = || {
        format!(
            "{text:?} is not a size: write a number and a unit, such as \"64MiB\", \"512KiB\" or \"1GiB\""
        )
    };
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
        return Err(format!("{text:?} is zero; give a size above zero"));
    }
    Ok(bytes)
}

/// `"5s"`, `"500ms"`, `"2m"`, `"1h"` → a duration above zero.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let fail = || {
        format!(
            "{text:?} is not a duration: write a number and a unit, such as \"5s\", \"500ms\" or \"2m\""
        )
    };
    let (number, unit) = number_and_unit(text).ok_or_else(fail)?;
    let duration = match unit {
        "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        "m" | "min" => Duration::from_secs(number.checked_mul(60).ok_or_else(fail)?),
        "h" => Duration::from_secs(number.checked_mul(3600).ok_or_else(fail)?),
        _ => return Err(fail()),
    };
    if duration.is_zero() {
        return Err(format!("{text:?} is zero; give a duration above zero"));
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
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("{text:?} has `${{` without a closing `}}`"));
        };
        let name = &after[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`${{{name}}}` is not a variable name: use letters, digits and `_`"
            ));
        }
        let value = env(name).ok_or_else(|| {
            format!("the environment variable {name} is not set; set it before starting piton")
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `"api.example.com:443"`, `"127.0.0.1:8080"` or `"[::1]:8080"`, with headers whose
/// values are `${VAR}` templates. On error: the sub-key (`""`, `.headers.NAME`) and
/// the message.
pub(crate) fn parse_net_grant(
    text: &str,
    headers: &BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<NetGrant, (String, String)> {
    let (host, port) = parse_host_port(text).map_err(|m| (String::new(), m))?;
    let mut parsed = Vec::new();
    for (name, template) in headers {
        let sub = format!(".headers.{name}");
        if !piton_wit::is_header_name(name) {
            return Err((sub, format!("{name:?} is not an HTTP header name")));
        }
        let value = parse_env_template(template, env).map_err(|m| (sub.clone(), m))?;
        if !piton_wit::is_header_value(&value) {
            return Err((
                sub,
                "the value has a line break, NUL or other control character; HTTP headers \
                 cannot carry one"
                    .to_owned(),
            ));
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
/// tcp = true }`. On error: the sub-key (`""`, `.tcp`, `.headers.NAME` ...) and the
/// message.
pub(crate) fn parse_net_entry(
    entry: toml::Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<NetGrant, (String, String)> {
    let example = "write \"host:port\", or { host = \"host:port\", headers = { .. }, tcp = true }";
    let table = match entry {
        toml::Value::String(host) => return parse_net_grant(&host, &BTreeMap::new(), env),
        toml::Value::Table(table) => table,
        other => {
            let kind = other.type_str();
            return Err((
                String::new(),
                format!("a {kind} is not a network entry; {example}"),
            ));
        }
    };
    let fail = |sub: &str, message: String| Err((sub.to_owned(), message));
    let (mut host, mut headers, mut tcp) = (None, BTreeMap::new(), false);
    for (name, value) in table {
        match (name.as_str(), value) {
            ("host", toml::Value::String(text)) => host = Some(text),
            ("host", _) => return fail(".host", format!("host must be a string; {example}")),
            ("tcp", toml::Value::Boolean(flag)) => tcp = flag,
            ("tcp", _) => {
                return fail(
                    ".tcp",
                    "write tcp = true to allow raw TCP to this host:port, or leave it out"
                        .to_owned(),
                );
            }
            ("headers", toml::Value::Table(table)) => {
                for (header, value) in table {
                    let toml::Value::String(value) = value else {
                        return fail(
                            &format!(".headers.{header}"),
                            "a header value must be a string, such as \"Bearer ${TOKEN}\""
                                .to_owned(),
                        );
                    };
                    headers.insert(header, value);
                }
            }
            ("headers", _) => {
                return fail(
                    ".headers",
                    "headers must be a table, such as { Authorization = \"Bearer ${TOKEN}\" }"
                        .to_owned(),
                );
            }
            (other, _) => {
                return fail(
                    &format!(".{other}"),
                    format!("unknown key {other:?}: a network entry takes host, headers and tcp"),
                );
            }
        }
    }
    let Some(host) = host else {
        return fail(".host", format!("is missing; {example}"));
    };
    let mut grant = parse_net_grant(&host, &headers, env)?;
    grant.tcp = tcp;
    Ok(grant)
}

fn parse_host_port(text: &str) -> Result<(Host, u16), String> {
    let example =
        "write host:port, such as \"api.example.com:443\", \"127.0.0.1:8080\" or \"[::1]:8080\"";
    if text.contains("://") {
        return Err(format!("{text:?} has a scheme; {example}"));
    }
    if text.contains('*') {
        return Err(format!(
            "{text:?}: wildcards are not supported; grant each host"
        ));
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (ip, port) = rest
            .split_once("]:")
            .ok_or_else(|| format!("{text:?} is not [ipv6]:port; {example}"))?;
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| format!("{ip:?} is not an IPv6 address"))?;
        (Host::Ip(ip), port)
    } else {
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("{text:?} has no port; {example}"))?;
        let host = match host.parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) => Host::Name(parse_dns_name(host).map_err(|m| format!("{m}; {example}"))?),
        };
        (host, port)
    };
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("{port:?} is not a port (1 to 65535); {example}"))?;
    Ok((host, port))
}

fn parse_dns_name(name: &str) -> Result<String, String> {
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
        return Err(format!("{name:?} is not a host name or IP address"));
    }
    Ok(lower.trim_end_matches('.').to_owned())
}

/// Splits a command line into words as a POSIX shell would without expanding
/// anything: whitespace separates, '…' and "…" quote, a backslash escapes the next
/// character (outside single quotes).
pub(crate) fn split_command(text: &str) -> Result<Vec<String>, String> {
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
                        None => return Err(format!("{text:?} has a ' without its closing quote")),
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
                            return Err(format!("{text:?} has a \" without its closing quote"));
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
            "0",
            "1.5MiB",
            "99999999999999999999GiB",
        ] {
            assert!(parse_size(text).is_err(), "{text}");
        }
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
        for text in ["", "5", "0s", "5 seconds", "1.5s", "-1s"] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
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
        let missing = parse_env_template("${NOPE}", &env).unwrap_err();
        assert!(missing.contains("NOPE is not set"), "{missing}");
        assert!(parse_env_template("${TOKEN", &env).is_err());
        assert!(parse_env_template("${}", &env).is_err());
        assert!(parse_env_template("${A-B}", &env).is_err());
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
        let bad = [
            ("api.example.com", "has no port"),
            ("https://api.example.com:443", "has a scheme"),
            ("*.example.com:443", "wildcards"),
            ("api.example.com:0", "is not a port"),
            ("api.example.com:65536", "is not a port"),
            ("api.example.com:http", "is not a port"),
            ("bad_host:80", "is not a host name"),
            ("-bad.com:80", "is not a host name"),
            ("[::1:80", "is not [ipv6]:port"),
            ("[nope]:80", "is not an IPv6 address"),
            (":80", "is not a host name"),
        ];
        for (text, expected) in bad {
            let error = parse_host_port(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
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
            parse_net_grant("a.com:1", &evil, &env).unwrap_err().0,
            ".headers.X"
        );
        let bad_name = BTreeMap::from([("Bad Name".to_owned(), "v".to_owned())]);
        assert!(parse_net_grant("a.com:1", &bad_name, &env).is_err());
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
        assert!(split_command("a 'b").unwrap_err().contains("closing quote"));
        assert!(
            split_command("a \"b")
                .unwrap_err()
                .contains("closing quote")
        );
    }
}
