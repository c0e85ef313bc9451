//! Build-script helper: compiles this workspace's guest crates to `wasm32-wasip2`
//! components and writes one constant per artifact.
//!
//! Used from a `build.rs`, in the manner of wasmtime's test-programs artifacts:
//!
//! ```no_run
//! // build.rs, in `fn main`:
//! piton_guest_builder::Guests::in_folder("../plugins")
//!     .embed(true)
//!     .build_into("guests.rs");
//! // src/lib.rs: include!(concat!(env!("OUT_DIR"), "/guests.rs"));
//! ```
//!
//! Every guest folder (a child of the given folder with a `Cargo.toml`) is built in one
//! `cargo build --profile guest --target wasm32-wasip2` (a profile the workspace
//! defines) with its own target directory, so a
//! build script never waits on the outer build's lock and the host and tests share the
//! compiled guests. The generated file holds, per guest, a constant named after the
//! package in SCREAMING_SNAKE_CASE with the path of its `.wasm`, and `ALL`: every guest
//! as `(name, path)`, or `(name, bytes)` with [`Guests::embed`].
//!
//! A missing `wasm32-wasip2` target is installed with `rustup target add`, because
//! rustup does not add a `rust-toolchain.toml` target to a toolchain already installed.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Rust target guests are built for.
pub const TARGET: &str = "wasm32-wasip2";
/// The workspace profile guests are built with.
const PROFILE: &str = "guest";

/// The shadow stack a Rust guest is linked with: 256 KiB, where Rust's default for
/// wasm is 1 MiB. The stack lies at the bottom of the guest's memory, and piton resets
/// a memory's whole initial size after every call (a fresh instance per call): on 2
/// cores, `word_count` took about 37 µs a call with 1 MiB, 23 µs with 256 KiB and
/// 17 µs with 64 KiB. A guest that overflows its stack traps (the stack comes first, so
/// it runs off the start of memory), it never corrupts its data.
pub const STACK_SIZE: u32 = 256 << 10;

/// The `cargo --config` value that links a `wasm32-wasip2` build with
/// [`STACK_SIZE`]. It adds to the rustflags of the user's own Cargo config; a
/// `RUSTFLAGS` in the environment replaces both, and so sets any other stack size.
pub fn stack_config() -> String {
    format!(r#"target.{TARGET}.rustflags=["-C", "link-arg=-zstack-size={STACK_SIZE}"]"#)
}

/// Guest crates to build, found as the subfolders of one folder.
#[derive(Debug)]
pub struct Guests {
    folder: PathBuf,
    embed: bool,
}

/// One built guest.
#[derive(Debug)]
struct Artifact {
    package: String,
    wasm: PathBuf,
}

impl Guests {
    /// Every subfolder of `folder` (relative to the calling crate) that holds a
    /// `Cargo.toml` is a guest crate.
    pub fn in_folder(folder: impl AsRef<Path>) -> Self {
        let manifest_dir = PathBuf::from(env_var("CARGO_MANIFEST_DIR"));
        Self {
            folder: manifest_dir.join(folder),
            embed: false,
        }
    }

    /// Whether `ALL` carries the bytes of each component (`include_bytes!`) instead of
    /// its path. Default: paths.
    pub fn embed(mut self, embed: bool) -> Self {
        self.embed = embed;
        self
    }

    /// Builds every guest and writes the constants to `$OUT_DIR/<file>`.
    ///
    /// # Panics
    ///
    /// A build script reports failure by panicking: this panics with the reason when a
    /// guest does not build or the target cannot be installed.
    pub fn build_into(self, file: &str) {
        let packages = self.packages();
        for dir in [
            &self.folder,
            &workspace_root().join("guest-sdk"),
            &workspace_root().join("wit"),
        ] {
            println!("cargo:rerun-if-changed={}", dir.display());
        }
        let artifacts = build(&packages);
        let out = PathBuf::from(env_var("OUT_DIR")).join(file);
        fs::write(&out, render(&artifacts, self.embed))
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    }

    fn packages(&self) -> Vec<String> {
        let entries = fs::read_dir(&self.folder)
            .unwrap_or_else(|e| panic!("cannot read guest folder {}: {e}", self.folder.display()));
        let mut packages: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("Cargo.toml"))
            .filter(|manifest| manifest.is_file())
            .map(|manifest| package_name(&manifest))
            .collect();
        packages.sort();
        packages
    }
}

/// The `name` of a manifest's `[package]`: enough TOML reading for our own crates,
/// without a TOML parser in every build script.
fn package_name(manifest: &Path) -> String {
    let text = fs::read_to_string(manifest)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest.display()));
    let mut in_package = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(value) = line.strip_prefix("name")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            return value.trim().trim_matches('"').to_owned();
        }
    }
    panic!("{} has no [package] name", manifest.display())
}

fn build(packages: &[String]) -> Vec<Artifact> {
    if packages.is_empty() {
        return Vec::new();
    }
    ensure_target();
    let target_dir = guest_target_dir();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root())
        .args([
            "build",
            "--profile",
            PROFILE,
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&target_dir)
        .arg("--config")
        .arg(stack_config());
    if env::var_os("CARGO_NET_OFFLINE").is_some() {
        cmd.arg("--offline");
    }
    for package in packages {
        cmd.args(["-p", package]);
    }
    // The outer build's settings are for the host; clippy's wrapper and host
    // flags must not leak into the guests' build. Nor its jobserver: the outer build
    // holds a token for each build script it runs, so with two of them building guests
    // (host and tests) on 2 cores no token is left, and the guests, many small crates,
    // built one rustc at a time (about 3 minutes of one busy core in a fresh CI run).
    // With its own, this cargo runs a job per core while the outer build waits on it.
    for var in [
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the guests: {e}"));
    assert!(
        status.success(),
        "building the guests {packages:?} for {TARGET} failed"
    );

    let release = target_dir.join(TARGET).join(PROFILE);
    packages
        .iter()
        .map(|package| {
            // A library's file name has underscores; a binary's keeps the dashes.
            let wasm = [package.replace('-', "_"), package.clone()]
                .map(|stem| release.join(format!("{stem}.wasm")))
                .into_iter()
                .find(|path| path.is_file())
                .unwrap_or_else(|| {
                    panic!("guest {package} built no .wasm in {}", release.display())
                });
            Artifact {
                package: package.clone(),
                wasm,
            }
        })
        .collect()
}

fn render(artifacts: &[Artifact], embed: bool) -> String {
    let mut out = String::from("// Generated by piton-guest-builder. One constant per guest.\n");
    for a in artifacts {
        let _ = writeln!(
            out,
            "/// The `{}` guest component.\npub const {}: &str = {:?};",
            a.package,
            a.package.to_uppercase().replace('-', "_"),
            a.wasm.display().to_string()
        );
    }
    if embed {
        out.push_str("/// Every guest: its package name and component bytes.\n");
        out.push_str("pub const ALL: &[(&str, &[u8])] = &[\n");
        for a in artifacts {
            let _ = writeln!(
                out,
                "    ({:?}, include_bytes!({:?})),",
                a.package,
                a.wasm.display().to_string()
            );
        }
    } else {
        out.push_str("/// Every guest: its package name and component path.\n");
        out.push_str("pub const ALL: &[(&str, &str)] = &[\n");
        for a in artifacts {
            let _ = writeln!(
                out,
                "    ({:?}, {:?}),",
                a.package,
                a.wasm.display().to_string()
            );
        }
    }
    out.push_str("];\n");
    out
}

/// Installs the wasm target when the toolchain lacks it.
fn ensure_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if !add_wasm_target(Path::new(&rustc)) {
        panic!(
            "the Rust target {TARGET} is missing and `rustup target add {TARGET}` failed; \
             install it by hand with that command"
        );
    }
}

/// Whether the toolchain of `rustc` has the `wasm32-wasip2` target, after adding it
/// with `rustup target add` when it lacked it (rustup does not add a
/// `rust-toolchain.toml` target to a toolchain already installed). `piton build`
/// uses it too.
pub fn add_wasm_target(rustc: &Path) -> bool {
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(sysroot) = &sysroot
        && sysroot.join("lib/rustlib").join(TARGET).is_dir()
    {
        return true;
    }
    Command::new("rustup")
        .args(["target", "add", TARGET])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `<target>/piton-guests`, shared by every build script and profile, where `<target>`
/// is the outer build's target directory (the ancestor of OUT_DIR holding CACHEDIR.TAG).
fn guest_target_dir() -> PathBuf {
    let out_dir = PathBuf::from(env_var("OUT_DIR"));
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map_or_else(
            || out_dir.join("target"),
            |target| target.join("piton-guests"),
        )
}

/// The workspace root: the nearest ancestor of the calling crate whose Cargo.toml
/// has a `[workspace]` table.
fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env_var("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .find(|dir| {
            fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|text| text.lines().any(|l| l.trim() == "[workspace]"))
        })
        .unwrap_or(&manifest_dir)
        .to_path_buf()
}

fn env_var(name: &str) -> String {
    env::var(name).unwrap_or_else(|_| panic!("{name} is not set: call this from a build script"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_name_reads_the_package_table_only() {
        let dir = std::env::temp_dir().join(format!("piton-builder-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("Cargo.toml");
        fs::write(
            &manifest,
            "[lib]\nname = \"not_this\"\n[package]\nedition = \"2024\"\nname = \"word-count\"\n",
        )
        .unwrap();
        assert_eq!(package_name(&manifest), "word-count");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn render_names_constants_after_packages() {
        let artifacts = [Artifact {
            package: "word-count".into(),
            wasm: PathBuf::from("/t/word_count.wasm"),
        }];
        let paths = render(&artifacts, false);
        assert!(paths.contains("pub const WORD_COUNT: &str = \"/t/word_count.wasm\";"));
        assert!(paths.contains("(\"word-count\", \"/t/word_count.wasm\"),"));
        let bytes = render(&artifacts, true);
        assert!(bytes.contains("(\"word-count\", include_bytes!(\"/t/word_count.wasm\")),"));
    }
}
