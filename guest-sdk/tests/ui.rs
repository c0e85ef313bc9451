//! Compile errors of `#[tool]`: each says what is wrong, at the right place.
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p
//! piton-guest-sdk --test ui`, then read every changed `.stderr`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/*.rs");
}
