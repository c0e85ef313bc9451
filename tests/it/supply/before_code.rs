//! Trust is checked before any of a component's code runs: `piton add` and `piton
//! update` under `require = "signed"` refuse an unsigned component, or one whose
//! signature does not verify, before instantiating it to read its spec. The guest
//! here (tests/guests/spec-trace) writes a line to stderr from `spec()`, which `piton
//! -v` logs as the guest's output: the line is the trace of an instance having run.

use std::process::Output;

use piton_tests::guests;

use super::files_in;
use super::signed::{Signed, said, text};
use crate::support::{piton, run};

/// What spec-trace's `spec()` writes.
const TRACE: &str = "spec-trace: spec() ran";

/// `piton -v ARGS --plugins` into `signed`'s plugins folder.
fn verbose(signed: &Signed, args: &[&str]) -> Output {
    run(piton()
        .arg("-v")
        .args(args)
        .arg("--plugins")
        .arg(signed.plugins()))
}

#[test]
fn add_refuses_an_unsigned_or_badly_signed_component_without_running_it() {
    let signed = Signed::new(&["alice"]);
    for (name, key, refusal) in [
        (
            "unsigned",
            None,
            "not signed, and piton.toml's [trust] requires a signature by alice",
        ),
        ("by-bob", Some("bob"), "expected alice"),
    ] {
        let source = signed.source(name, guests::HOSTILE_SPEC_TRACE, key);
        let out = verbose(&signed, &["add", text(&source)]);
        let said = said(&out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains(refusal), "{refusal:?} in {said}");
        assert!(
            !said.contains(TRACE),
            "its code ran before the refusal: {said}"
        );
    }
    assert_eq!(files_in(&signed.plugins()), ["piton.toml"]);
    // The trace is there when its code does run: signed by alice, it is read.
    let source = signed.source("traced", guests::HOSTILE_SPEC_TRACE, Some("alice"));
    let out = verbose(&signed, &["add", text(&source)]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains(TRACE), "{}", said(&out));
}

#[test]
fn update_refuses_a_new_version_that_is_not_signed_without_running_it() {
    let signed = Signed::new(&["alice"]);
    let source = signed.source("lookup", guests::LOOKUP_V1, Some("alice"));
    assert!(signed.add(text(&source)).status.success());
    // The new version, with v1's bundle still beside it: over another digest.
    std::fs::copy(guests::HOSTILE_SPEC_TRACE, &source).expect("new version");
    let out = verbose(&signed, &["update", "--yes", "--allow-weaker"]);
    let text_of = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text_of}");
    assert!(text_of.contains("expected alice"), "{text_of}");
    assert!(!text_of.contains(TRACE), "its code ran: {text_of}");
    // Unsigned altogether.
    std::fs::remove_file(super::signed::bundle_of(&source)).expect("no bundle");
    let out = verbose(&signed, &["update", "--yes", "--allow-weaker"]);
    let text_of = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text_of}");
    assert!(text_of.contains("not signed"), "{text_of}");
    assert!(!text_of.contains(TRACE), "its code ran: {text_of}");
    // Signed by alice, it is read (the trace) and taken.
    let key = signed.path("alice.key");
    let out = run(piton().arg("sign").arg(&source).arg("--key").arg(&key));
    assert!(out.status.success(), "{}", said(&out));
    let out = verbose(&signed, &["update", "--yes", "--allow-weaker"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains(TRACE), "{}", said(&out));
    assert!(said(&out).contains("lookup: updated"), "{}", said(&out));
}
