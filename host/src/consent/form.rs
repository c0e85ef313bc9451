//! What the person is shown about one call: the tool, the hints its sandbox holds it
//! to, what it is granted for this call (never a secret's value), and its arguments
//! with their SHA-256.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::grants::{Capabilities, FsAccess, NetAccess};

/// Arguments are shown up to this many characters, then cut (their digest covers
/// them whole).
pub const MAX_ARGS_SHOWN: usize = 2_000;

/// The arguments as canonical JSON: object keys sorted at every level, so the same
/// arguments give the same digest whatever order a client sends them in.
pub fn canonical(args: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // A map built in sorted order keeps it (with or without serde_json's
    // preserve_order); serialising a Value cannot fail.
    serde_json::to_string(&sorted(args)).unwrap_or_default()
}

/// SHA-256 of the arguments' canonical JSON.
pub fn args_digest(args: &Value) -> [u8; 32] {
    Sha256::digest(canonical(args).as_bytes()).into()
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
}
