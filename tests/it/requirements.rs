//! What `cargo test` needs besides Rust (tests/packages.txt): the README names it,
//! `.ci/run` installs it, and a test whose package is missing fails saying how to
//! install it, unless `PITON_SKIP` asks to skip it, and then it says it skipped.

use std::process::{Command, Output};

use piton_tests::requirements::{LIST, packages};

/// The workspace root.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

#[test]
fn the_readme_names_every_package_and_ci_installs_from_the_list() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md reads");
    let packages = packages();
    assert!(packages.iter().any(|p| p.package == "haproxy"), "{LIST}");
    for package in &packages {
        assert!(
            readme.contains(&package.package),
            "README.md does not name {}, which {LIST} lists: add it to the packages `cargo \
             test` needs",
            package.package
        );
    }
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run reads");
    assert!(
        ci.contains("tests/packages.txt"),
        ".ci/run does not install from tests/packages.txt"
    );
    assert!(
        readme.contains("PITON_SKIP"),
        "README.md does not say how to skip"
    );
}

/// This test binary run again on the replica tests alone, with no `haproxy` on `PATH`
/// (an empty `PATH`: the tests fail or skip before they run anything else).
fn replica_tests_without_haproxy(skip: Option<&str>) -> Output {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["replicas::", "--nocapture", "--test-threads=2"])
        .env("PATH", "/nonexistent")
        .env_remove("PITON_SKIP");
    if let Some(skip) = skip {
        command.env("PITON_SKIP", skip);
    }
    command.output().expect("the test binary runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
#[cfg_attr(piton_skip = "haproxy", ignore = "PITON_SKIP names haproxy")]
fn without_haproxy_the_replica_tests_fail_with_the_install_command() {
    let output = replica_tests_without_haproxy(None);
    let text = text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("apt-get install haproxy"), "{text}");
    assert!(text.contains("PITON_SKIP=haproxy"), "{text}");
    assert!(text.contains("2 failed"), "{text}");
}

#[test]
#[cfg_attr(piton_skip = "haproxy", ignore = "PITON_SKIP names haproxy")]
fn without_haproxy_and_asked_to_skip_it_the_replica_tests_pass_saying_so() {
    let output = replica_tests_without_haproxy(Some("oci, haproxy"));
    let text = text(&output);
    assert!(output.status.success(), "{text}");
    assert_eq!(
        text.matches("skipped: haproxy is not installed and PITON_SKIP names haproxy")
            .count(),
        2,
        "{text}"
    );
}
