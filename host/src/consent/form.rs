//! What the person is shown about one call: the tool, the hints its sandbox holds it
//! to, what it is granted for this call (never a secret's value), and its arguments
//! with their SHA-256.

use serde::Serialize;
use serde::ser::SerializeMap as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::call::hides_or_breaks;

use crate::grants::{Capabilities, FsAccess, NetAccess};

/// Arguments are shown up to this many characters, then cut (their digest covers
/// them whole).
pub const MAX_ARGS_SHOWN: usize = 2_000;

/// The arguments as canonical JSON: object keys sorted at every level, so the same
/// arguments give the same digest whatever order a client sends them in; no spaces;
/// and every character that could break, hide or reorder a line where the person
/// reads it ([`hides_or_breaks`]: U+2028, NEL, the bidi marks…) written as `\uXXXX`,
/// which serde_json leaves as is. It is still JSON, of the same arguments.
pub fn canonical(args: &Value) -> String {
    let mut text = Vec::new();
    write_canonical(args, &mut text);
    // Only ASCII escapes are added to serde_json's UTF-8.
    String::from_utf8(text).unwrap_or_default()
}

/// SHA-256 of the arguments' canonical JSON: the text shown is the text hashed.
pub fn args_digest(args: &Value) -> [u8; 32] {
    let mut hash = HashWriter(Sha256::new());
    write_canonical(args, &mut hash);
    hash.0.finalize().into()
}

fn write_canonical(args: &Value, out: &mut impl std::io::Write) {
    let mut json = serde_json::Serializer::with_formatter(out, Shown);
    // Serialising a Value into memory or a hash cannot fail.
    let _infallible = Sorted(args).serialize(&mut json);
}

/// A value whose objects serialize with their keys sorted (whether or not
/// serde_json's preserve_order is on), without a sorted copy.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                let mut object = to.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    object.serialize_entry(key, &Sorted(value))?;
                }
                object.end()
            }
            Value::Array(items) => to.collect_seq(items.iter().map(Sorted)),
            other => other.serialize(to),
        }
    }
}

/// serde_json's compact form, with the characters that [`hides_or_breaks`] in
/// strings escaped (serde_json escapes only `"`, `\\` and U+0000 to U+001F).
struct Shown;

impl serde_json::ser::Formatter for Shown {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut from = 0;
        for (at, c) in fragment.char_indices() {
            if hides_or_breaks(c) {
                writer.write_all(&fragment.as_bytes()[from..at])?;
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(writer, "\\u{unit:04x}")?;
                }
                from = at + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[from..])
    }
}

/// Feeds what is written to a hash.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The arguments as shown: canonical JSON cut at [`MAX_ARGS_SHOWN`] characters on a
/// character boundary, with how much was left out.
pub fn args_shown(args: &Value) -> String {
    let text = canonical(args);
    match text.char_indices().nth(MAX_ARGS_SHOWN) {
        None => text,
        Some((cut, _)) => format!(
            "{}… ({} more bytes, covered by the digest)",
            &text[..cut],
            text.len() - cut
        ),
    }
}

/// What one call is granted, a line each, in a fixed order: mounts with the access
/// this call has, hosts (with the names of headers piton adds, never their values),
/// environment variable names. Empty when nothing is granted.
pub fn grants_shown(caps: &Capabilities) -> Vec<String> {
    let mut lines = Vec::new();
    for (mount, access) in &caps.mounts {
        let access = match access {
            FsAccess::ReadOnly => "read only",
            FsAccess::AddOnly => "read, and add new files",
            FsAccess::ReadWrite => "read and write, delete included",
        };
        lines.push(format!(
            "folder {} as {} ({access})",
            mount.host.display(),
            mount.guest
        ));
    }
    let methods = match caps.net_access {
        NetAccess::ReadOnly => "GET, HEAD and OPTIONS only",
        NetAccess::Full => "any method",
    };
    for grant in &caps.network {
        let raw = if grant.tcp { ", raw TCP too" } else { "" };
        lines.push(format!("host {grant:?} ({methods}{raw})"));
    }
    for (name, _) in &caps.env {
        lines.push(format!("environment variable {name}"));
    }
    lines
}

/// SHA-256 over the lines of [`grants_shown`]: an approval is for these grants.
pub fn grants_digest(lines: &[String]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for line in lines {
        hash.update(line.as_bytes());
        hash.update(b"\n");
    }
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::{Grants, Host, Mount, MountMode, NetGrant, Secret};
    use piton_wit::Hints;
    use serde_json::json;

    #[test]
    fn the_same_arguments_in_any_order_have_one_digest() {
        let a = json!({"path": "/w/x", "opts": {"b": 1, "a": [2, {"d": 3, "c": 4}]}});
        let b: Value = serde_json::from_str(
            r#"{"opts": {"a": [2, {"c": 4, "d": 3}], "b": 1}, "path": "/w/x"}"#,
        )
        .unwrap();
        assert_eq!(args_digest(&a), args_digest(&b));
        assert_ne!(args_digest(&a), args_digest(&json!({"path": "/w/y"})));
        assert_eq!(
            canonical(&b),
            r#"{"opts":{"a":[2,{"c":4,"d":3}],"b":1},"path":"/w/x"}"#
        );
    }

    #[test]
    fn long_arguments_are_cut_on_a_character_and_say_so() {
        let shown = args_shown(&json!({ "text": "é".repeat(5_000) }));
        assert!(
            shown.chars().count() < MAX_ARGS_SHOWN + 60,
            "{}",
            shown.len()
        );
        assert!(
            shown.contains("more bytes, covered by the digest"),
            "{shown:.40}"
        );
    }

    #[test]
    fn grants_show_access_hosts_and_names_but_no_secret() {
        let grants = Grants {
            mounts: vec![Mount {
                host: "/srv/w".into(),
                guest: "/w".into(),
                mode: MountMode::Write,
            }],
            network: vec![NetGrant {
                host: Host::Name("api.example.com".into()),
                port: 443,
                headers: vec![("Authorization".into(), Secret("Bearer s3cret".into()))],
                tcp: false,
            }],
            env: vec![("TOKEN".into(), "s3cret".into())],
        };
        let lines = grants_shown(&grants.for_call(Hints::worst()));
        let text = lines.join("\n");
        assert!(
            text.contains("folder /srv/w as /w (read and write, delete included)"),
            "{text}"
        );
        assert!(
            text.contains("host api.example.com:443 +Authorization (any method)"),
            "{text}"
        );
        assert!(text.contains("environment variable TOKEN"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
        let narrower = grants_shown(&grants.for_call(Hints::worst().destructive(false)));
        assert_ne!(grants_digest(&lines), grants_digest(&narrower));
    }

    #[test]
    fn characters_that_break_hide_or_reorder_text_are_escaped_and_still_json() {
        let text = "a\u{2028}b\u{2029}c\u{85}d\u{7f}e\u{202e}f\u{2066}g\u{200b}h\u{feff}i\u{e0041}j\u{61c}k";
        let args = json!({ "path": text, "\u{202e}key": ["\u{2028}"] });
        let shown = canonical(&args);
        assert!(
            shown.chars().all(|c| c.is_ascii() && !c.is_ascii_control()),
            "{shown:?}"
        );
        assert!(
            shown.contains(
                r"a\u2028b\u2029c\u0085d\u007fe\u202ef\u2066g\u200bh\ufeffi\udb40\udc41j\u061ck"
            ),
            "{shown}"
        );
        let parsed: Value = serde_json::from_str(&shown).expect("still JSON");
        assert_eq!(parsed, args);
        // Text that needs nothing escaped is as serde_json writes it.
        let plain = json!({"path": "é/日本/x\ty"});
        assert_eq!(canonical(&plain), serde_json::to_string(&plain).unwrap());
        assert_eq!(args_shown(&args), shown);
    }
}
