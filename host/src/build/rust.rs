//! Building a Rust tool crate: `cargo build --release --target wasm32-wasip2` in the
//! crate's folder (adding the target with rustup when it is missing), then copying the
//! crate's `.wasm` to the output. The crate builds in its own `target/`, or its
//! workspace's.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::project::{BuildError, Lang, Source, Toolchains, run};

use piton_guest_builder::{TARGET, stack_config};

/// Builds the crate of `source` into `out`.
pub(super) fn build(
    source: &Source,
    out: &Path,
    toolchains: &Toolchains,
) -> Result<(), BuildError> {
    let cargo = toolchains
        .cargo
        .clone()
        .unwrap_or_else(|| PathBuf::from("cargo"));
    ensure_target(&cargo)?;
    let mut command = Command::new(&cargo);
    command
        .args([
            "build",
            "--release",
            "--message-format=json-render-diagnostics",
            "--target",
            TARGET,
        ])
        .arg("--manifest-path")
        .arg(&source.file)
        // piton's stack size for guests (see STACK_SIZE): a user's RUSTFLAGS still
        // replaces it.
        .arg("--config")
        .arg(stack_config());
    // What an outer cargo sets for a build script or a test it runs is about that
    // package, not this one. The user's own settings (CARGO_TARGET_DIR, RUSTFLAGS)
    // stay.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_PKG_NAME",
    ] {
        command.env_remove(var);
    }
    if let Some(dir) = &toolchains.cargo_target_dir {
        command.arg("--target-dir").arg(dir);
    }
    let stdout = run(&mut command, "cargo build").map_err(|message| BuildError::Failed {
        lang: Lang::Rust,
        message,
    })?;
    let wasm = cdylib_of(&stdout).ok_or_else(|| BuildError::Failed {
        lang: Lang::Rust,
        message: format!(
            "{}: cargo built no .wasm: a tool crate has `crate-type = [\"cdylib\"]` under [lib]",
            source.file.display()
        ),
    })?;
    std::fs::copy(&wasm, out).map_err(|error| BuildError::Io {
        what: format!("cannot copy {} to {}", wasm.display(), out.display()),
        error,
    })?;
    Ok(())
}

/// The `.wasm` of the last cdylib cargo's JSON messages name.
fn cdylib_of(messages: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "cdylib"))
        })
        .filter_map(|m| {
            m["filenames"]
                .as_array()?
                .iter()
                .filter_map(|f| f.as_str())
                .find(|f| f.ends_with(".wasm"))
                .map(PathBuf::from)
        })
        .next_back()
}

/// Adds the wasm target with rustup when the toolchain `cargo` runs lacks it (rustup
/// does not add a `rust-toolchain.toml` target to a toolchain already installed).
fn ensure_target(cargo: &Path) -> Result<(), BuildError> {
    let missing = || BuildError::Missing {
        lang: Lang::Rust,
        what: format!("the Rust target {TARGET}"),
        install: format!("rustup target add {TARGET}"),
    };
    let rustc = cargo.with_file_name("rustc");
    let rustc = if rustc.is_file() {
        rustc
    } else {
        PathBuf::from("rustc")
    };
    if piton_guest_builder::add_wasm_target(&rustc) {
        Ok(())
    } else {
        Err(missing())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cdylib_is_found_among_cargo_messages() {
        let messages = [
            r#"{"reason":"compiler-artifact","target":{"kind":["lib"]},"filenames":["/t/libserde.rlib"]}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["cdylib"]},"filenames":["/t/wasm32-wasip2/release/word_count.wasm"]}"#,
            r#"{"reason":"build-finished","success":true}"#,
            "not json",
        ]
        .join("\n");
        assert_eq!(
            cdylib_of(&messages),
            Some(PathBuf::from("/t/wasm32-wasip2/release/word_count.wasm"))
        );
        assert_eq!(cdylib_of(messages.lines().next().unwrap_or_default()), None);
    }
}
