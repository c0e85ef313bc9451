//! Support for piton's end-to-end tests: the hostile guests in `guests/` and the
//! example plugins in `../plugins`, built to components by this crate's build script,
//! one constant (a `.wasm` path) each.

/// Paths of the built hostile guests.
pub mod guests {
    include!(concat!(env!("OUT_DIR"), "/guests.rs"));
}

/// Paths of the built example plugins.
pub mod plugins {
    include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
}

pub mod sigstore;

/// What the tests need on the machine besides Rust, from `tests/packages.txt`: the
/// one list `.ci/run` installs from and the README names.
pub mod requirements {
    use std::path::Path;
    use std::process::{Command, Stdio};

    /// The list's path.
    pub const LIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/packages.txt");

    /// One line of the list.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Package {
        /// The name `PITON_SKIP` takes to skip the tests that need it, if any.
        pub skip_name: Option<String>,
        /// The Debian package.
        pub package: String,
        /// A shell command that succeeds when the package is present.
        pub check: String,
    }

    /// Every package of the list.
    pub fn packages() -> Vec<Package> {
        let text = std::fs::read_to_string(LIST).expect("tests/packages.txt reads");
        text.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| {
                let mut words = line.split_whitespace();
                let skip_name = words.next().expect("a skip name");
                let package = words.next().expect("a package");
                let check = words.collect::<Vec<_>>().join(" ");
                assert!(!check.is_empty(), "{LIST}: `{line}` has no check");
                Package {
                    skip_name: (skip_name != "-").then(|| skip_name.to_owned()),
                    package: package.to_owned(),
                    check,
                }
            })
            .collect()
    }

    /// Whether `PITON_SKIP` (names separated by commas) names `name`.
    pub fn skip_asked(name: &str) -> bool {
        std::env::var("PITON_SKIP")
            .is_ok_and(|list| list.split(',').any(|asked| asked.trim() == name))
    }

    /// Whether the tests that need `name` (a skip name of the list) can run: `true`
    /// when its packages are present; `false`, saying so on stderr, when one is
    /// missing and `PITON_SKIP` names it. Otherwise the calling test **fails**, naming
    /// the missing packages, the command that installs them and the way to skip.
    pub fn require(name: &str) -> bool {
        let needed: Vec<Package> = packages()
            .into_iter()
            .filter(|p| p.skip_name.as_deref() == Some(name))
            .collect();
        assert!(!needed.is_empty(), "{LIST} has no package for `{name}`");
        let missing: Vec<&str> = needed
            .iter()
            .filter(|p| !present(&p.check))
            .map(|p| p.package.as_str())
            .collect();
        if missing.is_empty() {
            return true;
        }
        let missing = missing.join(" ");
        if skip_asked(name) {
            eprintln!("skipped: {missing} is not installed and PITON_SKIP names {name}");
            return false;
        }
        panic!(
            "{missing} is not installed, and this test needs it: install it with \
             `apt-get install {missing}` (tests/packages.txt lists what `cargo test` needs; \
             .ci/run installs it), or skip the tests that need it with PITON_SKIP={name}"
        );
    }

    /// Runs `check` with `/bin/sh`, given by path so a test can empty `PATH`.
    fn present(check: &str) -> bool {
        Command::new(Path::new("/bin/sh"))
            .args(["-c", check])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }
}
