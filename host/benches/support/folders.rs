//! The folders a bench runs the real `piton serve` in: a temp plugins folder holding
//! only the bundled `word_count` component, and an empty one to run in, so neither
//! `$PITON_PLUGINS` nor `./plugins` nor a `piton.toml` applies.

use std::path::{Path, PathBuf};

/// The two temp folders; removed when dropped.
pub struct Folders {
    plugins: tempfile::TempDir,
    cwd: tempfile::TempDir,
}

impl Folders {
    /// Both folders, `word_count.wasm` written into the plugins one.
    pub fn new() -> Self {
        let bytes = piton_host::plugins::bundled_bytes("word-count").expect("word-count");
        Self::holding(bytes)
    }

    /// Both folders, the component `bytes` written into the plugins one as
    /// `word_count.wasm`.
    pub fn holding(bytes: &[u8]) -> Self {
        let plugins = tempfile::tempdir().expect("temp dir");
        std::fs::write(plugins.path().join("word_count.wasm"), bytes).expect("write wasm");
        let cwd = tempfile::tempdir().expect("temp dir");
        Self { plugins, cwd }
    }

    /// Compiles the plugins folder's components, optimised, into the bench cache (with
    /// `piton list`, which waits for the optimised compiles), so that a server
    /// started next runs optimised code from its first call: one started on an empty
    /// cache answers on baseline code while Cranelift compiles on the other core.
    #[allow(
        dead_code,
        reason = "not every bench serves a component the cache may lack"
    )]
    pub fn compiled(self) -> Self {
        let mut cmd = std::process::Command::new(piton());
        running(
            &mut cmd,
            "list",
            &[],
            self.plugins.path(),
            self.cwd.path(),
            &cache_dir(),
        );
        let status = cmd
            .stdout(std::process::Stdio::null())
            .status()
            .expect("piton list runs");
        assert!(
            status.success(),
            "piton list compiles the plugins: {status}"
        );
        self
    }

    /// `piton serve ARGS` on the plugins folder, its compiled components cached in the
    /// target folder rather than the user's cache.
    pub fn serve(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(piton());
        self.serve_args(&mut cmd, args);
        cmd
    }

    /// `piton serve` as [`Folders::serve`] runs it (no arguments of its own), run by
    /// `program` with `args` before piton's path (e.g. `/usr/bin/time`).
    #[allow(
        dead_code,
        reason = "not every bench runs the server under another program"
    )]
    pub fn serve_under(&self, program: &str, args: &[&std::ffi::OsStr]) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        cmd.args(args).arg(piton());
        self.serve_args(&mut cmd, &[]);
        cmd
    }

    fn serve_args(&self, cmd: &mut std::process::Command, args: &[&str]) {
        serving(
            cmd,
            args,
            self.plugins.path(),
            self.cwd.path(),
            &cache_dir(),
        );
    }
}

/// Makes `cmd` (whose program is, or runs, [`piton`]) `piton serve ARGS --plugins
/// PLUGINS`, run in `cwd` with compiled components cached in `cache`, none of the
/// user's `PITON_PLUGINS`, `PITON_CONFIG` or `PITON_LOG` applying: how every bench
/// serves.
pub fn serving<'c>(
    cmd: &'c mut std::process::Command,
    args: &[&str],
    plugins: &Path,
    cwd: &Path,
    cache: &Path,
) -> &'c mut std::process::Command {
    running(cmd, "serve", args, plugins, cwd, cache)
}

/// Makes `cmd` `piton COMMAND ARGS --plugins PLUGINS`, set up as [`serving`] says.
fn running<'c>(
    cmd: &'c mut std::process::Command,
    command: &str,
    args: &[&str],
    plugins: &Path,
    cwd: &Path,
    cache: &Path,
) -> &'c mut std::process::Command {
    cmd.arg(command)
        .args(args)
        .arg("--plugins")
        .arg(plugins)
        .current_dir(cwd)
        .env("PITON_CACHE_DIR", cache)
        .env_remove("PITON_PLUGINS")
        .env_remove("PITON_CONFIG")
        .env_remove("PITON_LOG")
}

/// The `piton` served: this build's, or the one `$PITON_BENCH_SERVER` names (another
/// build to compare with, in the same run on the same machine).
pub fn piton() -> String {
    std::env::var("PITON_BENCH_SERVER").unwrap_or_else(|_| env!("CARGO_BIN_EXE_piton").to_owned())
}

/// Where the benches cache compiled components: in the target folder.
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("piton-bench-cache")
}
