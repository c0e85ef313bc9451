//! Building a C tool: the user's `tool.c` is compiled with clang for `wasm32-wasi`
//! (wasi-libc, preview1) together with piton's C SDK and the `wit-bindgen c` bindings
//! of the world `plugin` (both embedded in the piton binary and written to a temporary
//! folder), linked by wasm-ld as a reactor, and made a component here with the
//! `wit-component` crate and wasmtime's preview1 reactor adapter (component.rs), so nothing but
//! Debian's clang, lld and wasi-libc is needed. A missing piece is a
//! [`BuildError::Missing`] naming the apt-get command; a source clang refuses is a
//! [`BuildError::Failed`] with clang's message, which names the file and line.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::component::componentize;
use super::project::{BuildError, Lang, Source, Toolchains, run};

/// The apt-get command that installs the toolchain on Debian 12 (bookworm).
pub(crate) const INSTALL: &str = "apt-get install -y clang lld wasi-libc libclang-rt-dev-wasm32";

/// The C SDK and bindings the build compiles with the user's file, by file name.
const SDK: [(&str, &[u8]); 6] = [
    ("piton.h", include_bytes!("../../../guest-sdk/c/piton.h")),
    ("piton.c", include_bytes!("../../../guest-sdk/c/piton.c")),
    (
        "piton_json.c",
        include_bytes!("../../../guest-sdk/c/piton_json.c"),
    ),
    (
        "plugin.h",
        include_bytes!("../../../guest-sdk/c/bindings/plugin.h"),
    ),
    (
        "plugin.c",
        include_bytes!("../../../guest-sdk/c/bindings/plugin.c"),
    ),
    (
        "plugin_component_type.o",
        include_bytes!("../../../guest-sdk/c/bindings/plugin_component_type.o"),
    ),
];

/// Where Debian's `wasi-libc` puts its sysroot (`lib/wasm32-wasi`, `include/wasm32-wasi`),
/// then where wasi-sdk and other distributions put it.
const SYSROOTS: [&str; 2] = ["/usr", "/usr/share/wasi-sysroot"];

/// Builds the C file of `source` into `out`.
pub(super) fn build(
    source: &Source,
    out: &Path,
    toolchains: &Toolchains,
) -> Result<(), BuildError> {
    let clang = toolchains
        .clang
        .clone()
        .unwrap_or_else(|| PathBuf::from("clang"));
    check_clang(&clang)?;
    let sysroot = find_sysroot(toolchains.wasi_sysroot.as_deref())?;

    let temp = tempfile::Builder::new()
        .prefix("piton-c-")
        .tempdir()
        .map_err(|error| BuildError::Io {
            what: "cannot make a temporary folder for the C build".to_owned(),
            error,
        })?;
    for (name, bytes) in SDK {
        let path = temp.path().join(name);
        std::fs::write(&path, bytes).map_err(|error| BuildError::Io {
            what: format!("cannot write {}", path.display()),
            error,
        })?;
    }
    let core = temp.path().join("core.wasm");
    let mut command = Command::new(&clang);
    command
        .arg("--target=wasm32-wasi")
        .arg(format!("--sysroot={}", sysroot.display()))
        .args([
            "-O2",
            "-std=gnu17",
            "-mexec-model=reactor",
            "-fno-color-diagnostics",
            "-Wall",
            "-Werror=implicit-function-declaration",
            "-Werror=incompatible-pointer-types",
            "-Werror=int-conversion",
            "-Werror=return-type",
            // Keep the function names (a trap's backtrace shows them); drop DWARF.
            "-Wl,--strip-debug",
        ])
        .arg("-I")
        .arg(temp.path())
        .arg("-I")
        .arg(&source.dir)
        .arg(&source.file);
    for (name, _) in SDK {
        if name.ends_with(".c") || name.ends_with(".o") {
            command.arg(temp.path().join(name));
        }
    }
    command.arg("-o").arg(&core);
    run(&mut command, "clang").map_err(|message| BuildError::Failed {
        lang: Lang::C,
        message: format!("{}: {message}", source.file.display()),
    })?;
    let module = std::fs::read(&core).map_err(|error| BuildError::Io {
        what: format!("cannot read {}", core.display()),
        error,
    })?;
    let component = componentize(&module, None).map_err(|message| BuildError::Failed {
        lang: Lang::C,
        message: format!("{}: {message}", source.file.display()),
    })?;
    std::fs::write(out, component).map_err(|error| BuildError::Io {
        what: format!("cannot write {}", out.display()),
        error,
    })
}

/// Checks that `clang` runs, targets wasm, and has wasm-ld and the wasm32 builtins.
fn check_clang(clang: &Path) -> Result<(), BuildError> {
    let missing = |what: String| BuildError::Missing {
        lang: Lang::C,
        what,
        install: INSTALL.to_owned(),
    };
    let print = |arg: &str| {
        Command::new(clang)
            .args(["--target=wasm32-wasi", arg])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let Some(linker) = print("-print-prog-name=wasm-ld") else {
        return Err(missing(format!("clang ({})", clang.display())));
    };
    if !is_program(Path::new(&linker)) {
        return Err(missing("wasm-ld (lld)".to_owned()));
    }
    match print("-print-libgcc-file-name") {
        Some(builtins) if Path::new(&builtins).is_file() => Ok(()),
        _ => Err(missing(
            "the wasm32 compiler builtins (libclang_rt.builtins-wasm32.a)".to_owned(),
        )),
    }
}

/// Whether `program` (a path, or a name looked up on `PATH`) is a file.
fn is_program(program: &Path) -> bool {
    if program.components().count() > 1 {
        return program.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The wasi-libc sysroot: the one given, or the first of [`SYSROOTS`] holding it.
fn find_sysroot(given: Option<&Path>) -> Result<PathBuf, BuildError> {
    let holds_libc = |root: &Path| root.join("lib/wasm32-wasi/libc.a").is_file();
    let found = match given {
        Some(root) => holds_libc(root).then(|| root.to_path_buf()),
        None => SYSROOTS
            .iter()
            .map(PathBuf::from)
            .find(|root| holds_libc(root)),
    };
    found.ok_or_else(|| BuildError::Missing {
        lang: Lang::C,
        what: match given {
            Some(root) => format!(
                "wasi-libc in {} (no lib/wasm32-wasi/libc.a there)",
                root.display()
            ),
            None => "wasi-libc".to_owned(),
        },
        install: INSTALL.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sysroot_without_wasi_libc_is_missing_with_the_install_command() {
        let empty = tempfile::tempdir().expect("a temporary folder");
        let error = find_sysroot(Some(empty.path())).expect_err("no libc.a there");
        let text = error.to_string();
        assert!(
            text.contains("wasi-libc") && text.contains(INSTALL),
            "{text}"
        );
    }

    #[test]
    fn a_clang_that_does_not_run_is_missing_with_the_install_command() {
        let error = check_clang(Path::new("/nonexistent/clang")).expect_err("no clang there");
        let text = error.to_string();
        assert!(
            text.contains("/nonexistent/clang") && text.contains(INSTALL),
            "{text}"
        );
    }
}
