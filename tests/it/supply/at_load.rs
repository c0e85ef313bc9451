//! A signature that is there and does not verify refuses its file at every load,
//! whatever `[trust] require` says (under `pinned`, the default, and `any` too): a
//! file copied by hand whose bundle beside it is another key's or over other bytes,
//! and a file piton.lock records as signed by a key piton.toml no longer trusts.
//! A file copied by hand with no bundle still loads. Checked at a start (a new
//! process) and at a running `piton serve`'s reload.

use piton_tests::{guests, plugins};

use super::piton_in;
use super::signed::{Signed, bundle_of, said, text};
use crate::mcp_client::StdioPiton;
use crate::support::{piton, run};

/// `file` signed by `key` of `signed` (its bundle beside it).
fn sign(signed: &Signed, file: &std::path::Path, key: &str) {
    let key = signed.path(&format!("{key}.key"));
    let out = run(piton().arg("sign").arg(file).arg("--key").arg(key));
    assert!(out.status.success(), "sign: {}", said(&out));
}

/// `piton list`'s output on `signed`'s plugins folder.
fn listed(signed: &Signed) -> String {
    said(&piton_in(&signed.plugins(), &["list"]))
}

/// The line of `listed` that says `file` was refused.
fn refused_line<'a>(listed: &'a str, file: &str) -> &'a str {
    listed
        .lines()
        .find(|line| line.contains(&format!("{file}: refused: ")))
        .unwrap_or_else(|| panic!("{file} is not refused: {listed}"))
}

#[test]
fn a_copied_file_whose_bundle_does_not_verify_is_refused_under_every_level() {
    for require in ["pinned", "any"] {
        let signed = Signed::new(&["alice"]);
        signed.trust_as(require, &["alice"]);
        let copied = signed.plugins().join("word_count.wasm");
        std::fs::copy(plugins::WORD_COUNT, &copied).expect("copy");
        // With no bundle beside it, a copied file loads: the drop-a-file workflow.
        std::fs::copy(plugins::READ_FILE, signed.plugins().join("read_file.wasm")).expect("copy");
        let text = listed(&signed);
        assert!(text.contains("word_count "), "{require}: {text}");
        assert!(text.contains("read_file "), "{require}: {text}");

        // Signed by bob, whom piton.toml does not name.
        sign(&signed, &copied, "bob");
        let text = listed(&signed);
        let line = refused_line(&text, "word_count.wasm");
        assert!(line.contains("signed by key SHA256:"), "{require}: {line}");
        assert!(
            line.contains("expected alice (SHA256:"),
            "{require}: {line}"
        );
        assert!(text.contains("read_file "), "the others load: {text}");

        // alice's bundle, over other bytes.
        let other = signed.source("other", plugins::CHECKERBOARD, Some("alice"));
        std::fs::copy(bundle_of(&other), bundle_of(&copied)).expect("copy");
        let text = listed(&signed);
        let line = refused_line(&text, "word_count.wasm");
        assert!(line.contains("over another digest"), "{require}: {line}");

        // alice's own signature over it: it loads.
        sign(&signed, &copied, "alice");
        let text = listed(&signed);
        assert!(text.contains("word_count "), "{require}: {text}");
        assert!(!text.contains("refused"), "{require}: {text}");
    }
}

#[test]
fn under_pinned_a_recorded_signer_no_longer_trusted_is_refused_at_load() {
    let signed = Signed::new(&["alice"]);
    signed.trust_as("pinned", &["alice"]);
    let source = signed.source("lookup", guests::LOOKUP_V1, Some("alice"));
    let out = signed.add(text(&source));
    assert!(out.status.success(), "{}", said(&out));
    assert!(listed(&signed).contains("lookup "));
    // bob instead of alice: the signature piton.lock records no longer verifies.
    signed.trust_as("pinned", &["bob"]);
    let text = listed(&signed);
    let line = refused_line(&text, "lookup.wasm");
    assert!(
        line.contains("signed by key alice SHA256:"),
        "the signer found: {line}"
    );
    assert!(line.contains("it expects bob (SHA256:"), "{line}");
    // No key at all: nothing to check a signature against; it loads by its digest.
    signed.trust_as("pinned", &[]);
    assert!(listed(&signed).contains("lookup "));
}

#[test]
fn a_running_server_refuses_a_copied_file_once_its_bundle_stops_verifying() {
    let signed = Signed::new(&["alice"]);
    signed.trust_as("pinned", &["alice"]);
    let copied = signed.plugins().join("word_count.wasm");
    std::fs::copy(plugins::WORD_COUNT, &copied).expect("copy");
    sign(&signed, &copied, "alice");
    let mut served = StdioPiton::start(&signed.plugins());
    assert_eq!(served.tools(1), ["word_count"]);
    // Signed by bob instead: the bundle's change reloads, and the file is refused.
    sign(&signed, &copied, "bob");
    served.list_changed();
    assert!(served.tools(2).is_empty());
    let refusal = served.running.stderr.wait_for("word_count.wasm: refused: ");
    assert!(refusal.contains("expected alice (SHA256:"), "{refusal}");
    assert!(refusal.contains("signed by key SHA256:"), "{refusal}");
    // alice's again: served again.
    sign(&signed, &copied, "alice");
    served.list_changed();
    assert_eq!(served.tools(3), ["word_count"]);
}
