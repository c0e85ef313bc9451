//! Signatures where components come in: `piton add` of a file signed by `piton
//! sign`, and of an image `piton publish --key` signed in a real registry, under
//! `[trust] require = "signed"`; each way of not being signed by a trusted key
//! refused with nothing left in the plugins folder; and the policy at load, in a new
//! process: a signer piton.toml no longer trusts, and a file copied by hand; and
//! the same in a running `piton serve`, at its next reload.

use std::path::{Path, PathBuf};
use std::process::Output;

use piton_host::supply::lock::Lock;
use piton_tests::{guests, plugins};

use std::collections::BTreeMap;

use super::{Answer, BadServer, Registry, files_in, piton_in};
use crate::mcp_client::StdioPiton;
use crate::support::{piton, run, stderr, stdout};

/// A folder with keys `alice` and `bob` (made by `piton keygen`), `plugins/` with
/// a piton.toml requiring a signature by the keys named, and `src/`.
pub(super) struct Signed {
    dir: tempfile::TempDir,
}

impl Signed {
    pub(super) fn new(trusted: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let signed = Self { dir };
        for sub in ["plugins", "src"] {
            std::fs::create_dir_all(signed.path(sub)).expect("folder");
        }
        for name in ["alice", "bob"] {
            let out = run(piton().arg("keygen").arg(signed.path(name)));
            assert!(out.status.success(), "keygen: {}", said(&out));
        }
        signed.trust(trusted);
        signed
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(super) fn plugins(&self) -> PathBuf {
        self.path("plugins")
    }

    /// piton.toml: `require = "signed"`, the keys `trusted` named.
    pub(super) fn trust(&self, trusted: &[&str]) {
        self.trust_as("signed", trusted);
    }

    /// piton.toml: `require` as given, the keys `trusted` named.
    pub(super) fn trust_as(&self, require: &str, trusted: &[&str]) {
        let mut toml = format!("[trust]\nrequire = {require:?}\n");
        for name in trusted {
            let key = self.path(&format!("{name}.pub"));
            toml += &format!(
                "[[trust.keys]]\nname = {name:?}\nkey = {:?}\n",
                key.display()
            );
        }
        std::fs::write(self.plugins().join("piton.toml"), toml).expect("piton.toml");
    }

    /// `src/NAME.wasm`, a copy of `component`, signed by `key` if given.
    pub(super) fn source(&self, name: &str, component: &str, key: Option<&str>) -> PathBuf {
        let file = self.path(&format!("src/{name}.wasm"));
        std::fs::copy(component, &file).expect("copy");
        if let Some(key) = key {
            let key = self.path(&format!("{key}.key"));
            let out = run(piton().arg("sign").arg(&file).arg("--key").arg(key));
            assert!(out.status.success(), "sign: {}", said(&out));
        }
        file
    }

    pub(super) fn add(&self, source: &str) -> Output {
        piton_in(&self.plugins(), &["add", source])
    }

    pub(super) fn lock(&self) -> Lock {
        Lock::load(&self.plugins().join("piton.lock")).expect("the lock reads")
    }
}

pub(super) fn said(out: &Output) -> String {
    format!("{}{}", stdout(out), stderr(out))
}

pub(super) fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

#[test]
fn a_file_signed_by_a_trusted_key_is_added_and_each_other_is_refused() {
    let signed = Signed::new(&["alice"]);
    let good = signed.source("lookup", guests::LOOKUP_V1, Some("alice"));
    let out = signed.add(text(&good));
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("signed:   key alice SHA256:"),
        "{}",
        said(&out)
    );
    let signer = signed.lock().components["lookup"].signer.clone();
    assert!(signer.is_some_and(|s| s.starts_with("key alice SHA256:")));
    let listed = said(&piton_in(&signed.plugins(), &["list", "--sources"]));
    let row = listed
        .lines()
        .find(|l| l.starts_with("lookup "))
        .unwrap_or("");
    assert!(row.contains("  key alice SHA256:"), "the signer: {listed}");

    // Not signed; signed by bob; alice's bundle over other bytes.
    let unsigned = signed.source("plain", guests::LOOKUP_V1, None);
    let by_bob = signed.source("bobs", guests::LOOKUP_V1, Some("bob"));
    let swapped = signed.source("swapped", guests::LOOKUP_V1, Some("alice"));
    std::fs::copy(guests::LOOKUP_V3_SCHEMA, &swapped).expect("other bytes");
    for (file, refusal) in [
        (
            &unsigned,
            "not signed, and piton.toml's [trust] requires a signature by alice",
        ),
        (&by_bob, "expected alice"),
        (&swapped, "expected alice"),
    ] {
        let out = signed.add(text(file));
        assert_eq!(out.status.code(), Some(1), "{}", said(&out));
        assert!(
            said(&out).contains(refusal),
            "{refusal:?} in {}",
            said(&out)
        );
    }
    assert_eq!(
        files_in(&signed.plugins()),
        ["lookup.wasm", "piton.lock", "piton.toml"],
        "nothing half-written is left"
    );
}

#[test]
fn at_load_a_signer_no_longer_trusted_and_an_unsigned_copy_are_refused() {
    let signed = Signed::new(&["alice"]);
    let good = signed.source("lookup", guests::LOOKUP_V1, Some("alice"));
    assert!(signed.add(text(&good)).status.success());
    // Copied by hand: unsigned, then with a bundle beside it.
    std::fs::copy(
        plugins::WORD_COUNT,
        signed.plugins().join("word_count.wasm"),
    )
    .expect("copy");
    let list = || {
        let out = piton_in(&signed.plugins(), &["list"]);
        said(&out)
    };
    let listed = list();
    assert!(listed.contains("lookup"), "{listed}");
    assert!(listed.contains("word_count.wasm: refused: "), "{listed}");
    assert!(listed.contains("word_count.wasm.sigstore.json"), "{listed}");
    let key = signed.path("alice.key");
    let copied = signed.plugins().join("word_count.wasm");
    let out = run(piton().arg("sign").arg(&copied).arg("--key").arg(&key));
    assert!(out.status.success(), "{}", said(&out));
    let listed = list();
    assert!(
        listed.contains("word_count "),
        "signed beside it, it loads: {listed}"
    );
    assert!(!listed.contains("refused"), "{listed}");

    // alice is no longer trusted: what she signed stops loading.
    signed.trust(&["bob"]);
    let listed = list();
    assert!(
        listed.contains("which piton.toml's [trust] no longer trusts"),
        "{listed}"
    );
    assert!(listed.contains("it expects bob"), "{listed}");
}

#[test]
fn an_image_signed_on_publish_is_added_and_an_unsigned_one_refused() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let signed = Signed::new(&["alice"]);
    let key = signed.path("alice.key");
    let tagged = format!("oci://{}/tools/word-count:1.0", registry.addr);
    let out = run(piton()
        .args(["publish", plugins::WORD_COUNT, &tagged, "--key"])
        .arg(&key));
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("signed:   key SHA256:"),
        "{}",
        said(&out)
    );
    let out = signed.add(&tagged);
    assert!(out.status.success(), "{}", said(&out));
    let signer = signed.lock().components["word-count"].signer.clone();
    assert!(signer.is_some_and(|s| s.starts_with("key alice SHA256:")));

    let unsigned = format!("oci://{}/tools/unsigned:1.0", registry.addr);
    let out = run(piton().args(["publish", plugins::WORD_COUNT, &unsigned]));
    assert!(out.status.success(), "{}", said(&out));
    let out = signed.add(&unsigned);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("not signed"), "{}", said(&out));
    // Signed by bob, whom this piton.toml does not trust.
    let by_bob = format!("oci://{}/tools/by-bob:1.0", registry.addr);
    let out = run(piton()
        .args(["publish", plugins::WORD_COUNT, &by_bob, "--key"])
        .arg(signed.path("bob.key")));
    assert!(out.status.success(), "{}", said(&out));
    let out = signed.add(&by_bob);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("expected alice"), "{}", said(&out));
    assert_eq!(
        files_in(&signed.plugins()),
        ["piton.lock", "piton.toml", "word-count.wasm"]
    );
}

#[test]
fn an_update_that_is_not_signed_is_refused_and_the_old_file_kept() {
    let signed = Signed::new(&["alice"]);
    let source = signed.source("lookup", guests::LOOKUP_V1, Some("alice"));
    assert!(signed.add(text(&source)).status.success());
    // A new version, its old bundle left beside it: over other bytes.
    std::fs::copy(guests::LOOKUP_V3_SCHEMA, &source).expect("new version");
    let out = piton_in(&signed.plugins(), &["update", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("expected alice"), "{}", said(&out));
    assert!(
        said(&out).contains("the file in place is kept"),
        "{}",
        said(&out)
    );
    let kept = std::fs::read(signed.plugins().join("lookup.wasm")).expect("reads");
    assert_eq!(kept, std::fs::read(guests::LOOKUP_V1).expect("reads"));
    // Signed again, it is taken.
    let key = signed.path("alice.key");
    let out = run(piton().arg("sign").arg(&source).arg("--key").arg(&key));
    assert!(out.status.success(), "{}", said(&out));
    let out = piton_in(&signed.plugins(), &["update", "--yes"]);
    assert!(out.status.success(), "{}", said(&out));
    let taken = std::fs::read(signed.plugins().join("lookup.wasm")).expect("reads");
    assert_eq!(
        taken,
        std::fs::read(guests::LOOKUP_V3_SCHEMA).expect("reads")
    );
}

#[test]
fn a_url_is_checked_with_the_bundle_beside_it() {
    let signed = Signed::new(&["alice"]);
    let good = signed.source("lookup", guests::LOOKUP_V1, Some("alice"));
    let wasm = std::fs::read(&good).expect("reads");
    let bundle = std::fs::read(bundle_of(&good)).expect("the bundle reads");
    let server = BadServer::start(|_| {
        BTreeMap::from([
            (
                "GET /signed/lookup.wasm".to_owned(),
                Answer::ok("application/wasm", wasm.clone()),
            ),
            (
                "GET /signed/lookup.wasm.sigstore.json".to_owned(),
                Answer::ok("application/json", bundle.clone()),
            ),
            // No bundle beside this one: a 404.
            (
                "GET /unsigned/lookup.wasm".to_owned(),
                Answer::ok("application/wasm", wasm.clone()),
            ),
        ])
    });
    let sha256 = super::digest(&wasm);
    let sha256 = sha256.trim_start_matches("sha256:");
    let url = |path: &str| format!("http://{}/{path}", server.addr);
    let out = piton_in(
        &signed.plugins(),
        &["add", &url("signed/lookup.wasm"), "--sha256", sha256],
    );
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("signed:   key alice"), "{}", said(&out));
    let out = piton_in(
        &signed.plugins(),
        &[
            "add",
            &url("unsigned/lookup.wasm"),
            "--sha256",
            sha256,
            "--name",
            "other",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("not signed"), "{}", said(&out));
}

#[test]
fn a_running_server_stops_serving_what_a_key_taken_out_of_trust_signed() {
    let signed = Signed::new(&["alice", "bob"]);
    let source = signed.source("lookup", guests::LOOKUP_V1, Some("alice"));
    assert!(signed.add(text(&source)).status.success());
    let mut served = StdioPiton::start(&signed.plugins());
    assert!(served.tools(1).contains(&"lookup".to_owned()));
    signed.trust(&["bob"]);
    served.list_changed();
    let tools = served.tools(2);
    assert!(!tools.contains(&"lookup".to_owned()), "{tools:?}");
    // Trusted again, at the next reload it is served again.
    signed.trust(&["alice"]);
    served.list_changed();
    assert!(served.tools(3).contains(&"lookup".to_owned()));
}

pub(super) fn bundle_of(file: &Path) -> PathBuf {
    PathBuf::from(format!("{}.sigstore.json", file.display()))
}
