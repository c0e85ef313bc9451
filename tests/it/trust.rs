//! Signatures from the command line: `piton keygen` makes a key pair, `piton sign`
//! writes the bundle beside a real component, and `piton verify` checks it against
//! piton.toml's `[trust]`, refusing a changed component, a signature by another key
//! and an unsigned component under `require = "signed"`, naming the signers.

use std::path::{Path, PathBuf};

use piton_tests::plugins as examples;

use crate::support::*;

/// A folder holding word_count.wasm, two key pairs (alice, mallory) and a piton.toml
/// that trusts alice's key with `require`.
struct Signing {
    dir: tempfile::TempDir,
}

impl Signing {
    fn new(require: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::copy(examples::WORD_COUNT, dir.path().join("word_count.wasm")).expect("copy");
        for name in ["alice", "mallory"] {
            let out = run(piton().arg("keygen").arg(dir.path().join(name)));
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        }
        let toml = format!(
            "[trust]\nrequire = \"{require}\"\n[[trust.keys]]\nname = \"alice\"\nkey = \"alice.pub\"\n"
        );
        std::fs::write(dir.path().join("piton.toml"), toml).expect("write piton.toml");
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn sign(&self, key: &str) -> std::process::Output {
        run(piton()
            .arg("sign")
            .arg(self.path("word_count.wasm"))
            .arg("--key")
            .arg(self.path(&format!("{key}.key"))))
    }

    fn verify(&self) -> std::process::Output {
        run(piton()
            .arg("verify")
            .arg(self.path("word_count.wasm"))
            .arg("--config")
            .arg(self.path("piton.toml")))
    }

    fn fingerprint(&self, key: &str) -> String {
        let out = run(piton().arg("keygen").arg(self.path(key)));
        // keygen refuses to overwrite; the fingerprint comes from the public key.
        assert_eq!(out.status.code(), Some(2));
        fingerprint_of(&self.path(&format!("{key}.pub")))
    }
}

/// The fingerprint `piton` shows for a public key file: SHA-256 of its DER.
fn fingerprint_of(path: &Path) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let pem = std::fs::read_to_string(path).expect("a key");
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("base64");
    format!("SHA256:{}", hex::encode(sha2::Sha256::digest(der)))
}

#[test]
fn a_component_signed_with_piton_sign_verifies_and_names_the_key() {
    let signing = Signing::new("signed");
    let out = signing.sign("alice");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let alice = signing.fingerprint("alice");
    let bundle = signing.path("word_count.wasm.sigstore.json");
    assert!(stdout(&out).ends_with(&format!("with key {alice}: {}\n", bundle.display())));
    assert!(bundle.exists());
    let out = signing.verify();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{}: verified: signed by key alice {alice}\n",
            signing.path("word_count.wasm").display()
        )
    );
}

#[test]
fn a_changed_component_an_unsigned_one_and_another_keys_signature_are_refused() {
    let signing = Signing::new("signed");
    let wasm = signing.path("word_count.wasm");
    let alice = signing.fingerprint("alice");
    let mallory = signing.fingerprint("mallory");

    let out = signing.verify();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}: not signed, and piton.toml's [trust] requires a signature by alice ({alice})\n",
            wasm.display()
        )
    );

    assert_eq!(signing.sign("mallory").status.code(), Some(0));
    let out = signing.verify();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}: signed by key {mallory}, expected alice ({alice})\n",
            wasm.display()
        )
    );

    assert_eq!(signing.sign("alice").status.code(), Some(0));
    std::fs::copy(examples::READ_FILE, &wasm).expect("replace the component");
    let out = signing.verify();
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(
        said.starts_with(&format!(
            "error: {}: key alice ({alice}), over another digest (sha256:",
            wasm.display()
        )),
        "{said}"
    );
}

#[test]
fn under_pinned_an_unsigned_component_is_taken_and_a_bad_signature_is_not() {
    let signing = Signing::new("pinned");
    let out = signing.verify();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("taken unsigned (sha256:"),
        "{}",
        stdout(&out)
    );
    assert_eq!(signing.sign("mallory").status.code(), Some(0));
    let out = signing.verify();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("(or no signature)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_broken_trust_table_is_an_error_naming_the_file_and_key() {
    let signing = Signing::new("signed");
    std::fs::write(
        signing.path("piton.toml"),
        "[trust]\nrequire = \"strict\"\n",
    )
    .expect("write");
    let out = signing.verify();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}: trust.require: \"strict\" is not a trust level; use one of \"signed\", \"pinned\" or \"any\"\n",
            signing.path("piton.toml").display()
        )
    );
}
