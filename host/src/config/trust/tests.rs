//! The `[trust]` table: what it becomes, and each mistake at its key with the message
//! a user reads.

use std::path::Path;

use crate::config::{Config, ConfigError, ConfigProblem};
use crate::supply::trust::{PrivateKey, Require};

fn parse_in(dir: &Path, text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, &dir.join("piton.toml"), &|_| None)
}

fn public_pem() -> String {
    let key = PrivateKey::from_pem(&PrivateKey::generate_p256_pem().expect("key")).expect("key");
    key.public_key().to_pem()
}

#[test]
fn no_table_is_pinned_with_no_signers() {
    let dir = tempfile::tempdir().expect("dir");
    let trust = parse_in(dir.path(), "").expect("parses").trust;
    assert_eq!(trust.require, Require::Pinned);
    assert!(trust.keys.is_empty() && trust.identities.is_empty() && trust.sources.is_empty());
    assert!(trust.trusted_root.is_none());
}

#[test]
fn keys_inline_or_in_files_and_source_rules_parse() {
    let dir = tempfile::tempdir().expect("dir");
    let (alice, bob) = (public_pem(), public_pem());
    std::fs::write(dir.path().join("bob.pub"), &bob).expect("write");
    let text = format!(
        r#"
        [trust]
        require = "signed"
        [[trust.keys]]
        name = "alice"
        key = """{alice}"""
        [[trust.keys]]
        name = "bob"
        key = "bob.pub"
        [[trust.sources]]
        prefix = "oci://registry.example/team/"
        keys = ["alice"]
        require = "any"
        "#
    );
    let trust = parse_in(dir.path(), &text).expect("parses").trust;
    assert_eq!(trust.require, Require::Signed);
    assert_eq!(trust.keys[0].key.to_pem(), alice);
    assert_eq!(trust.keys[1].key.to_pem(), bob);
    let rule = trust.rule_for("oci://registry.example/team/x:1");
    assert_eq!(rule.require, Require::Any);
    assert_eq!(rule.keys.len(), 1);
}

#[test]
fn each_mistake_names_the_file_the_key_and_the_fix() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("piton.toml");
    let key = public_pem();
    let cases = [
        (
            "[trust]\nrequire = \"strict\"",
            "trust.require",
            "\"strict\" is not a trust level; use one of \"signed\", \"pinned\" or \"any\"",
        ),
        (
            "[trust]\nrequire = \"signed\"",
            "trust.require",
            "is \"signed\", but no [[trust.keys]] or [[trust.identities]] is given to sign with; add one",
        ),
        (
            "[[trust.keys]]\nname = \"a\"\nkey = \"missing.pub\"",
            "trust.keys[0].key",
            "cannot read the key file",
        ),
        (
            "[[trust.keys]]\nname = \"a\"\nkey = \"-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----\"",
            "trust.keys[0].key",
            "is not a usable key",
        ),
        (
            &format!(
                "[[trust.keys]]\nname = \"a\"\nkey = \"\"\"{key}\"\"\"\n[[trust.keys]]\nname = \"a\"\nkey = \"\"\"{key}\"\"\""
            ),
            "trust.keys[1].name",
            "\"a\": give each key a name of its own",
        ),
        (
            &format!(
                "[[trust.keys]]\nname = \"a\"\nkey = \"\"\"{key}\"\"\"\n[[trust.sources]]\nprefix = \"oci://x/\"\nkeys = [\"b\"]"
            ),
            "trust.sources[0].keys",
            "names the key \"b\", which no [[trust.keys]] has; use one of: a",
        ),
        (
            "[[trust.identities]]\nissuer = \"https://i.example\"\nsubject = \"a@example.com\"",
            "trust.identities",
            "needs trusted_root = \"PATH\"",
        ),
        (
            "[[trust.identities]]\nissuer = \"\"\nsubject = \"a@example.com\"",
            "trust.identities[0]",
            "is empty; write the issuer URL",
        ),
        (
            "[trust]\ntrusted_root = \"root.json\"",
            "trust.trusted_root",
            "cannot use ",
        ),
        (
            "[[trust.sources]]\nprefix = \"\"",
            "trust.sources[0].prefix",
            "is empty",
        ),
    ];
    for (text, key, message) in cases {
        let err = parse_in(dir.path(), text).expect_err(text);
        assert!(
            matches!(err.problem, ConfigProblem::Trust(_)),
            "{text}: {err:?}"
        );
        assert_eq!(err.key, key, "{text}");
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("{}: {key}: ", file.display())),
            "{shown}"
        );
        assert!(shown.contains(message), "{text}: {shown}");
    }
    std::fs::write(dir.path().join("root.json"), "{\"mediaType\": 1}").expect("write");
    let err = parse_in(dir.path(), "[trust]\ntrusted_root = \"root.json\"").expect_err("bad root");
    assert!(
        err.to_string().contains("as a Sigstore trusted root"),
        "{err}"
    );
    let err = parse_in(dir.path(), "[trust]\nsigners = 1").expect_err("unknown key");
    assert!(err.to_string().contains("unknown field `signers`"), "{err}");
}
