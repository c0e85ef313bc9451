//! Keyless signatures end to end: piton.toml's `[trust] trusted_root` names the
//! root of a Sigstore the test makes (its own CA and log, `piton_tests::sigstore`),
//! `[[trust.identities]]` the signer; `piton verify` and `piton add` take a bundle by
//! that identity and refuse one by another identity or whose certificate had expired
//! when it was logged, with nothing left in the plugins folder.

use std::path::{Path, PathBuf};
use std::process::Output;

use piton_host::supply::lock::Lock;
use piton_tests::plugins;
use piton_tests::sigstore::{FakeSigstore, NOON};

use super::files_in;
use super::signed::said;
use crate::support::{piton, run};

const ISSUER: &str = "https://issuer.example";
const SUBJECT: &str = "alice@example.com";

/// A folder with `plugins/` holding piton.toml (trusting alice's identity under
/// `require = "signed"`) and the test Sigstore's trusted_root.json, and `src/`.
struct Keyless {
    dir: tempfile::TempDir,
    sigstore: FakeSigstore,
}

impl Keyless {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let sigstore = FakeSigstore::new();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir_all(&plugins).expect("plugins");
        std::fs::create_dir_all(dir.path().join("src")).expect("src");
        std::fs::write(plugins.join("trusted_root.json"), sigstore.trusted_root())
            .expect("trusted_root.json");
        std::fs::write(
            plugins.join("piton.toml"),
            format!(
                "[trust]\nrequire = \"signed\"\ntrusted_root = \"trusted_root.json\"\n\n\
                 [[trust.identities]]\nissuer = {ISSUER:?}\nsubject = {SUBJECT:?}\n"
            ),
        )
        .expect("piton.toml");
        Self { dir, sigstore }
    }

    fn plugins(&self) -> PathBuf {
        self.dir.path().join("plugins")
    }

    /// `src/NAME.wasm` (word_count), with a bundle beside it by `subject` from
    /// `issuer`, logged at `time`.
    fn signed(&self, name: &str, issuer: &str, subject: &str, time: i64) -> PathBuf {
        let file = self.dir.path().join(format!("src/{name}.wasm"));
        std::fs::copy(plugins::WORD_COUNT, &file).expect("copy");
        let bytes = std::fs::read(&file).expect("reads");
        let leaf = self.sigstore.leaf(issuer, subject);
        let bundle = self.sigstore.bundle(&leaf, &bytes, time);
        std::fs::write(format!("{}.sigstore.json", file.display()), bundle).expect("bundle");
        file
    }

    fn verify(&self, file: &Path) -> Output {
        run(piton()
            .arg("verify")
            .arg(file)
            .arg("--config")
            .arg(self.plugins().join("piton.toml")))
    }

    fn add(&self, file: &Path) -> Output {
        run(piton()
            .arg("add")
            .arg(file)
            .arg("--plugins")
            .arg(self.plugins()))
    }

    /// `file` is refused by `piton verify` and `piton add`, both saying `reason`,
    /// and nothing is added.
    fn refused(&self, file: &Path, reason: &str) {
        for out in [self.verify(file), self.add(file)] {
            let text = said(&out);
            assert_eq!(out.status.code(), Some(1), "{text}");
            assert!(text.contains(reason), "{reason:?} in {text}");
        }
        assert_eq!(
            files_in(&self.plugins()),
            ["piton.toml", "trusted_root.json"]
        );
    }
}

#[test]
fn a_keyless_bundle_by_the_trusted_identity_is_verified_added_and_loaded() {
    let keyless = Keyless::new();
    let file = keyless.signed("word-count", ISSUER, SUBJECT, NOON);
    let signer = format!("identity {SUBJECT} (issuer {ISSUER})");
    let out = keyless.verify(&file);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(
        said(&out),
        format!("{}: verified: signed by {signer}\n", file.display())
    );
    let out = keyless.add(&file);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains(&format!("signed:   {signer}")),
        "{}",
        said(&out)
    );
    let lock = Lock::load(&keyless.plugins().join("piton.lock")).expect("the lock reads");
    assert_eq!(
        lock.components["word-count"].signer.as_deref(),
        Some(signer.as_str())
    );
    // A load takes it: the signer piton.lock records is one piton.toml trusts.
    let out = run(piton()
        .args(["call", "word_count", r#"{"text":"a b"}"#, "--plugins"])
        .arg(keyless.plugins()));
    assert_eq!(said(&out).trim(), "2");
}

#[test]
fn another_identity_is_refused_naming_both() {
    let keyless = Keyless::new();
    for (issuer, subject) in [
        (ISSUER, "mallory@example.com"),
        ("https://evil.example", SUBJECT),
    ] {
        let file = keyless.signed("other", issuer, subject, NOON);
        keyless.refused(
            &file,
            &format!("signed by {subject} (issuer {issuer}), expected {SUBJECT} (issuer {ISSUER})"),
        );
    }
}

#[test]
fn a_certificate_expired_when_it_was_logged_is_refused() {
    let keyless = Keyless::new();
    // The leaf is valid on 2025-01-01 only; logged two days later.
    let file = keyless.signed("late", ISSUER, SUBJECT, NOON + 2 * 86_400);
    let root = keyless.plugins().join("trusted_root.json");
    keyless.refused(
        &file,
        &format!(
            "a keyless signature by {SUBJECT} (issuer {ISSUER}) that does not verify against {}",
            root.display()
        ),
    );
}
