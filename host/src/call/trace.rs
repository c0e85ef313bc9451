//! A call's W3C trace context (<https://www.w3.org/TR/trace-context/>): the
//! `traceparent` a caller sent, parsed strictly, and its `tracestate`, bounded.
//!
//! A client sends them in a `tools/call`'s `params._meta` (MCP's convention) or, over
//! HTTP, as request headers. A value that does not parse is ignored: the call starts
//! a new trace, it is never refused for it.

use std::fmt;

/// The `version` this host speaks (and writes a context back in).
const VERSION: u8 = 0;

/// The length of a version-00 `traceparent`: `vv-<32 hex>-<16 hex>-ff`.
const LEN_00: usize = 55;

/// The most bytes of `tracestate` kept (the spec's floor for what a vendor passes on).
pub const MAX_TRACESTATE: usize = 512;

/// Past this many bytes a `tracestate` list member is the first to be dropped when
/// the whole is over [`MAX_TRACESTATE`].
const LONG_MEMBER: usize = 128;

/// The most list members a `tracestate` may have.
const MAX_MEMBERS: usize = 32;

/// A parsed `traceparent`: the trace a call belongs to, the caller's span (the call's
/// parent) and the trace flags.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    parent_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// The `sampled` flag.
    pub const SAMPLED: u8 = 0x01;

    /// Parses a `traceparent` value as the W3C spec says, or `None` if it is not one.
    ///
    /// Version `00`: exactly `00-{trace-id: 32 lower hex}-{parent-id: 16 lower hex}-
    /// {flags: 2 lower hex}`, with neither id all zeros. A later version (any but the
    /// invalid `ff`) is read for the same three fields, which must be followed by the
    /// end or a `-` (what follows is that version's and is ignored); of its flags only
    /// `sampled` is known and kept.
    pub fn parse(value: &str) -> Option<Self> {
        let bytes = value.as_bytes();
        if bytes.len() < LEN_00 {
            return None;
        }
        let version = hex_byte(&bytes[0..2])?;
        if version == 0xff || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        match bytes.get(LEN_00) {
            None => {}
            Some(b'-') if version > VERSION => {}
            Some(_) => return None,
        }
        let mut trace_id = [0; 16];
        let mut parent_id = [0; 8];
        hex_into(&bytes[3..35], &mut trace_id)?;
        hex_into(&bytes[36..52], &mut parent_id)?;
        let mut flags = hex_byte(&bytes[53..55])?;
        if version > VERSION {
            flags &= Self::SAMPLED;
        }
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// The trace id: 16 bytes, not all zero.
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The caller's span id (the parent of the call's span): 8 bytes, not all zero.
    pub fn parent_id(&self) -> [u8; 8] {
        self.parent_id
    }

    /// The trace flags.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// Whether the caller records this trace (the `sampled` flag).
    pub fn sampled(&self) -> bool {
        self.flags & Self::SAMPLED != 0
    }
}

/// The `traceparent` value, in version `00`.
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{VERSION:02x}-{}-{}-{:02x}",
            hex::encode(self.trace_id),
            hex::encode(self.parent_id),
            self.flags
        )
    }
}

impl fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceParent({self})")
    }
}

/// A `tracestate` value: at most [`MAX_MEMBERS`] `key=value` members of the spec's
/// syntax, at most [`MAX_TRACESTATE`] bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceState(String);

impl TraceState {
    /// Parses a `tracestate` value (several header lines joined with `,` are one
    /// value), or `None` when it is empty or breaks the syntax. Empty members are
    /// left out. Over [`MAX_TRACESTATE`] bytes, members of more than 128 bytes are
    /// dropped first, then members from the end, as the spec suggests.
    pub fn parse(value: &str) -> Option<Self> {
        let mut members = Vec::new();
        for member in value.split(',') {
            let member = member.trim_matches([' ', '\t']);
            if member.is_empty() {
                continue;
            }
            if members.len() == MAX_MEMBERS || !is_member(member) {
                return None;
            }
            members.push(member);
        }
        let joined_len = |members: &[&str]| {
            members.iter().map(|m| m.len()).sum::<usize>() + members.len().saturating_sub(1)
        };
        if joined_len(&members) > MAX_TRACESTATE {
            members.retain(|m| m.len() <= LONG_MEMBER);
        }
        while joined_len(&members) > MAX_TRACESTATE {
            members.pop();
        }
        if members.is_empty() {
            return None;
        }
        Some(Self(members.join(",")))
    }

    /// The value, members joined with `,`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TraceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `member` is `key=value` as the spec's grammar has it: a key of
/// `[a-z0-9_\-*/]`, starting with a lower-case letter or digit, at most 256 bytes, or
/// `tenant@system` (241 and 14 bytes at most); a value of 1 to 256 printable ASCII
/// characters other than `,` and `=`, not ending in a space.
fn is_member(member: &str) -> bool {
    let Some((key, value)) = member.split_once('=') else {
        return false;
    };
    let key_ok = match key.split_once('@') {
        None => is_key_part(key, 256),
        Some((tenant, system)) => is_key_part(tenant, 241) && is_key_part(system, 14),
    };
    key_ok
        && (1..=256).contains(&value.len())
        && !value.ends_with(' ')
        && value
            .bytes()
            .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
}

fn is_key_part(part: &str, max: usize) -> bool {
    let bytes = part.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= max
        && matches!(bytes[0], b'a'..=b'z' | b'0'..=b'9')
        && bytes
            .iter()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/'))
}

/// Two lower-case hex digits as a byte.
fn hex_byte(two: &[u8]) -> Option<u8> {
    let mut byte = [0];
    hex_into(two, &mut byte)?;
    Some(byte[0])
}

/// Lower-case hex digits into `out` (twice as many digits as bytes); upper case is
/// not the spec's `HEXDIGLC` and fails.
fn hex_into(digits: &[u8], out: &mut [u8]) -> Option<()> {
    let digit = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    if digits.len() != out.len() * 2 {
        return None;
    }
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's example.
    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_spec_example_parses_and_prints_back() {
        let parent = TraceParent::parse(EXAMPLE).expect("the spec's example");
        assert_eq!(
            hex::encode(parent.trace_id()),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(hex::encode(parent.parent_id()), "00f067aa0ba902b7");
        assert_eq!(parent.flags(), 1);
        assert!(parent.sampled());
        assert_eq!(parent.to_string(), EXAMPLE);
        let unsampled = TraceParent::parse(&EXAMPLE.replace("-01", "-00")).expect("parses");
        assert!(!unsampled.sampled());
        // Version 00 keeps flags it does not know, to pass them on.
        let other = TraceParent::parse(&EXAMPLE.replace("-01", "-03")).expect("parses");
        assert_eq!(other.flags(), 3);
    }

    #[test]
    fn a_traceparent_that_breaks_the_grammar_is_none() {
        let zero_trace = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        let zero_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
        let upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
        let cases = [
            "",
            "00",
            zero_trace,
            zero_parent,
            upper,
            // Version ff is invalid; a version is two lower-case hex digits.
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // Version 00 is exactly 55 bytes.
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            // Wrong separators, short or long fields, non-hex.
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-701",
            "00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-é1",
            // A later version still needs its fields followed by the end or a dash.
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "cc-00000000000000000000000000000000-00f067aa0ba902b7-01",
        ];
        for case in cases {
            assert_eq!(TraceParent::parse(case), None, "{case:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_for_the_fields_version_00_has() {
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-what-comes-next";
        let parent = TraceParent::parse(later).expect("a later version parses");
        assert_eq!(
            hex::encode(parent.trace_id()),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        // Only `sampled` is known of a later version's flags; it is written back as 00.
        assert_eq!(parent.flags(), TraceParent::SAMPLED);
        assert_eq!(parent.to_string(), EXAMPLE);
        let exact = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert!(TraceParent::parse(exact).is_some_and(|p| !p.sampled()));
    }

    #[test]
    fn tracestate_keeps_valid_members_and_refuses_bad_syntax() {
        let state =
            TraceState::parse("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE,,").expect("two members");
        assert_eq!(state.as_str(), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
        assert_eq!(
            TraceState::parse("t3n@vendor=x").map(|s| s.to_string()),
            Some("t3n@vendor=x".to_owned())
        );
        for bad in [
            "",
            " , ",
            "novalue",
            "Upper=x",
            "=x",
            "k=",
            "k=a,b=c=d",
            "k y=1",
            "k=\u{7f}",
            "k=é",
            "@v=x",
            "t@=x",
        ] {
            assert_eq!(TraceState::parse(bad), None, "{bad:?}");
        }
        let many = (0..=MAX_MEMBERS)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>();
        assert!(TraceState::parse(&many[..MAX_MEMBERS].join(",")).is_some());
        assert_eq!(TraceState::parse(&many.join(",")), None);
    }

    #[test]
    fn a_long_tracestate_drops_long_members_first_then_from_the_end() {
        let long = format!("long={}", "v".repeat(200));
        let small: Vec<String> = (0..30)
            .map(|i| format!("k{i:02}={}", "v".repeat(12)))
            .collect();
        let value = format!("{},{long}", small.join(","));
        assert!(value.len() > MAX_TRACESTATE);
        let state = TraceState::parse(&value).expect("members left");
        assert!(state.as_str().len() <= MAX_TRACESTATE, "{state}");
        assert!(!state.as_str().contains("long="), "{state}");
        assert!(state.as_str().starts_with("k00="), "{state}");
        // 30 members of 16 bytes and their commas are 509 bytes: all fit.
        assert_eq!(state.as_str().split(',').count(), 30);
        let longer: Vec<String> = (0..32)
            .map(|i| format!("k{i:02}={}", "v".repeat(20)))
            .collect();
        let state = TraceState::parse(&longer.join(",")).expect("members left");
        assert!(state.as_str().len() <= MAX_TRACESTATE, "{state}");
        assert!(state.as_str().ends_with(&longer[19]), "{state}");
    }
}
