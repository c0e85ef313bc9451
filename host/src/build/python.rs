//! Building a Python tool file: piton's Python SDK (`guest-sdk/python/piton`, embedded
//! here so the installed binary needs no repository) and `wit/tool.wit` are written to a
//! temporary folder, and `piton.build` runs from there with the build
//! machine's Python and its componentize-py 0.25.1. That script never imports the
//! user's file on the build machine: componentize-py imports it inside the component
//! being built (CPython 3.14 for WASI), where `@tool` and `Tool.__init__` check every
//! tool, and a refused file ends with `FILE:LINE: message` lines, which become the one
//! [`BuildError::Failed`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::project::{BuildError, Lang, Source, Toolchains};

/// The componentize-py release the SDK is written and tested against.
pub(crate) const COMPONENTIZE_PY: &str = "0.25.1";

/// The SDK's files, relative to `guest-sdk/python`: the single source is that folder.
const SDK: &[(&str, &str)] = &[
    (
        "piton/__init__.py",
        include_str!("../../../guest-sdk/python/piton/__init__.py"),
    ),
    (
        "piton/_component.py",
        include_str!("../../../guest-sdk/python/piton/_component.py"),
    ),
    (
        "piton/_docs.py",
        include_str!("../../../guest-sdk/python/piton/_docs.py"),
    ),
    (
        "piton/_errors.py",
        include_str!("../../../guest-sdk/python/piton/_errors.py"),
    ),
    (
        "piton/_http.py",
        include_str!("../../../guest-sdk/python/piton/_http.py"),
    ),
    (
        "piton/_hints.py",
        include_str!("../../../guest-sdk/python/piton/_hints.py"),
    ),
    (
        "piton/http.py",
        include_str!("../../../guest-sdk/python/piton/http.py"),
    ),
    (
        "piton/_result.py",
        include_str!("../../../guest-sdk/python/piton/_result.py"),
    ),
    (
        "piton/_schema.py",
        include_str!("../../../guest-sdk/python/piton/_schema.py"),
    ),
    (
        "piton/_tool.py",
        include_str!("../../../guest-sdk/python/piton/_tool.py"),
    ),
    (
        "piton/build.py",
        include_str!("../../../guest-sdk/python/piton/build.py"),
    ),
];

/// The WIT a Python build is given, relative to its `wit` folder: the contract, the
/// world of tools that import `piton.http` (the toolbox plus
/// `wasi:http/outgoing-handler`), and the wasi:* 0.2.12 packages that one needs,
/// copied from the wasmtime-wasi-http crate the host links (a test checks they are
/// the same text).
const WIT: &[(&str, &str)] = &[
    ("tool.wit", include_str!("../../../wit/tool.wit")),
    (
        "http.wit",
        include_str!("../../../guest-sdk/python/wit/http.wit"),
    ),
    (
        "deps/cli.wit",
        include_str!("../../../guest-sdk/python/wit/deps/cli.wit"),
    ),
    (
        "deps/clocks.wit",
        include_str!("../../../guest-sdk/python/wit/deps/clocks.wit"),
    ),
    (
        "deps/filesystem.wit",
        include_str!("../../../guest-sdk/python/wit/deps/filesystem.wit"),
    ),
    (
        "deps/http.wit",
        include_str!("../../../guest-sdk/python/wit/deps/http.wit"),
    ),
    (
        "deps/io.wit",
        include_str!("../../../guest-sdk/python/wit/deps/io.wit"),
    ),
    (
        "deps/random.wit",
        include_str!("../../../guest-sdk/python/wit/deps/random.wit"),
    ),
    (
        "deps/sockets.wit",
        include_str!("../../../guest-sdk/python/wit/deps/sockets.wit"),
    ),
];

/// Prints `MAJOR.MINOR` and componentize-py's version (or `none`).
const PROBE: &str = "import sys\n\
try:\n    import importlib.metadata as m; v = m.version('componentize-py')\n\
except Exception:\n    v = 'none'\n\
print('%d.%d %s' % (sys.version_info[0], sys.version_info[1], v))";

/// Runs `piton.build` from the SDK folder given first (never from a `piton` package
/// the user's Python may have installed).
const RUN_BUILD: &str = "import sys; sys.path.insert(0, sys.argv.pop(1)); \
from piton.build import main; sys.exit(main(sys.argv[1:]))";

/// Builds the Python file of `source` into `out`.
pub(super) fn build(
    source: &Source,
    out: &Path,
    toolchains: &Toolchains,
) -> Result<(), BuildError> {
    let python = toolchains
        .python
        .clone()
        .unwrap_or_else(|| PathBuf::from("python3"));
    check_python(&python)?;
    let stage = tempfile::Builder::new()
        .prefix("piton-build-py-")
        .tempdir()
        .map_err(|error| BuildError::Io {
            what: "cannot make a temporary folder for the Python build".to_owned(),
            error,
        })?;
    write_stage(stage.path())?;
    let out = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    let mut command = Command::new(&python);
    command
        .arg("-c")
        .arg(RUN_BUILD)
        .arg(stage.path().join("sdk"))
        .arg(&source.file)
        .arg("-o")
        .arg(&out)
        .arg("--wit")
        .arg(stage.path().join("wit"))
        .arg("--label")
        .arg(&source.file)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null());
    let output = command.output().map_err(|e| BuildError::Failed {
        lang: Lang::Python,
        message: format!("cannot run {}: {e}", python.display()),
    })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(BuildError::Failed {
        lang: Lang::Python,
        message: failure_message(&stderr, &source.file),
    })
}

/// The message of a failed build: the script's own lines, or its tail.
fn failure_message(stderr: &str, file: &Path) -> String {
    let text = stderr.trim();
    if text.is_empty() {
        return format!(
            "{}: the Python build failed and said nothing",
            file.display()
        );
    }
    const MAX: usize = 8 << 10;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut cut = text.len() - MAX;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!("...\n{}", &text[cut..])
}

/// `Ok` when `python` runs, is 3.10 or newer and has componentize-py 0.25.1.
fn check_python(python: &Path) -> Result<(), BuildError> {
    let install = format!(
        "{} -m pip install componentize-py=={COMPONENTIZE_PY}",
        python.display()
    );
    let missing = |what: String| BuildError::Missing {
        lang: Lang::Python,
        what,
        install: install.clone(),
    };
    let output = Command::new(python)
        .args(["-c", PROBE])
        .stdin(Stdio::null())
        .output();
    let Ok(output) = output.as_ref().map(|o| String::from_utf8_lossy(&o.stdout)) else {
        return Err(BuildError::Missing {
            lang: Lang::Python,
            what: format!("{} (Python 3.10 or newer)", python.display()),
            install: format!(
                "apt-get install python3 python3-pip (or set PITON_PYTHON), then: {install}"
            ),
        });
    };
    let mut words = output.split_whitespace();
    let (version, found) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let new_enough = version
        .split_once('.')
        .and_then(|(major, minor)| Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?)))
        .is_some_and(|v| v >= (3, 10));
    if !new_enough {
        return Err(BuildError::Missing {
            lang: Lang::Python,
            what: format!(
                "Python 3.10 or newer ({} is {})",
                python.display(),
                if version.is_empty() {
                    "not a working Python"
                } else {
                    version
                }
            ),
            install: format!("apt-get install python3 (or set PITON_PYTHON), then: {install}"),
        });
    }
    if found != COMPONENTIZE_PY {
        let what = if found == "none" || found.is_empty() {
            format!("componentize-py {COMPONENTIZE_PY} for {}", python.display())
        } else {
            format!(
                "componentize-py {COMPONENTIZE_PY} for {} (it has {found})",
                python.display()
            )
        };
        return Err(missing(what));
    }
    Ok(())
}

/// Writes the SDK under `stage/sdk` and the contract under `stage/wit`.
fn write_stage(stage: &Path) -> Result<(), BuildError> {
    let write = |path: PathBuf, text: &str| {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| BuildError::Io {
                what: format!("cannot make {}", parent.display()),
                error,
            })?;
        }
        std::fs::write(&path, text).map_err(|error| BuildError::Io {
            what: format!("cannot write {}", path.display()),
            error,
        })
    };
    for (name, text) in SDK {
        write(stage.join("sdk").join(name), text)?;
    }
    for (name, text) in WIT {
        write(stage.join("wit").join(name), text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sdk_file_is_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk/python/piton");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .expect("the SDK folder")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".py"))
            .map(|n| format!("piton/{n}"))
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = SDK.iter().map(|(n, _)| (*n).to_owned()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "SDK in host/src/build/python.rs");
    }

    /// The staged wasi:* WIT is the text of the wasmtime-wasi-http crate the host
    /// links (its version from Cargo.lock, its source from cargo's registry), so a
    /// Python tool imports the interfaces, at the version, the host provides.
    #[test]
    fn the_wasi_wit_is_the_one_the_host_links() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
        let version = lock
            .split("[[package]]")
            .find(|p| p.contains("name = \"wasmtime-wasi-http\"\n"))
            .and_then(|p| p.split("version = \"").nth(1))
            .and_then(|v| v.split('"').next())
            .expect("wasmtime-wasi-http in Cargo.lock");
        let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(
            || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"),
            PathBuf::from,
        );
        let crate_dir = std::fs::read_dir(cargo_home.join("registry/src"))
            .expect("cargo's registry sources")
            .filter_map(|e| e.ok())
            .map(|e| e.path().join(format!("wasmtime-wasi-http-{version}")))
            .find(|p| p.is_dir())
            .expect("wasmtime-wasi-http's source in cargo's registry");
        let deps = crate_dir.join("wit/deps");
        let mut names: Vec<String> = std::fs::read_dir(&deps)
            .expect("its wit/deps")
            .filter_map(|e| e.ok())
            .map(|e| format!("deps/{}", e.file_name().to_string_lossy()))
            .collect();
        names.sort();
        let staged: Vec<&str> = WIT
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| n.starts_with("deps/"))
            .collect();
        assert_eq!(
            staged, names,
            "the wasi WIT files in host/src/build/python.rs"
        );
        for (name, text) in WIT.iter().filter(|(n, _)| n.starts_with("deps/")) {
            let theirs = std::fs::read_to_string(crate_dir.join("wit").join(name)).expect("read");
            assert!(
                *text == theirs,
                "guest-sdk/python/wit/{name} differs from {}: copy it again",
                deps.display()
            );
        }
        let http = WIT
            .iter()
            .find(|(n, _)| *n == "http.wit")
            .expect("http.wit")
            .1;
        let wasi = wasi_version(
            WIT.iter()
                .find(|(n, _)| *n == "deps/http.wit")
                .expect("deps")
                .1,
        );
        assert!(
            http.contains(&format!("wasi:http/outgoing-handler@{wasi};")),
            "http.wit imports {wasi}"
        );
        let build = SDK
            .iter()
            .find(|(n, _)| *n == "piton/build.py")
            .expect("build.py")
            .1;
        assert!(
            build.contains(&format!("WASI = \"{wasi}\"")),
            "build.py pins {wasi}"
        );
    }

    /// `0.2.12` from `package wasi:http@0.2.12;`.
    fn wasi_version(wit: &str) -> &str {
        wit.split_once("package wasi:http@")
            .and_then(|(_, rest)| rest.split_once(';'))
            .map(|(version, _)| version)
            .expect("the package line")
    }

    #[test]
    fn a_python_without_componentize_py_is_missing_with_the_install_command() {
        let error = check_python(Path::new("/nonexistent/python3")).expect_err("no python");
        assert!(
            error
                .to_string()
                .contains("-m pip install componentize-py==0.25.1"),
            "{error}"
        );
    }
}
