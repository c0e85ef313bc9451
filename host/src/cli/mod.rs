//! The `piton` command line: parses the arguments, loads the tools through the
//! library's [`Loader`], and hands the registry to one command (`list`, `call`,
//! `inspect`, `serve`, one file each), which prints. Nothing here loads or runs a
//! tool by itself.
//!
//! Exit codes: 0 success, 1 an error result (input or failed), 2 a usage error or
//! unknown tool, 3 a trap or another failure that stops the run.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::registry::Registry;

mod add;
mod build;
mod cache;
mod call;
mod check;
mod images;
mod inspect;
mod list;
mod load;
mod new;
mod out;
mod publish;
mod remove;
mod serve;
mod sign;
mod signal;
mod update;
mod verify;

use load::{PluginsArg, load, loader};
use out::Outcome;
use signal::{CLOSE, stop_signal};

/// Runs WebAssembly agent tools in a sandbox that enforces what they declare.
#[derive(Debug, Parser)]
#[command(name = "piton", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log what guests write to stdout/stderr, and more (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools: name, hints (enforced or declared), description, source.
    List {
        #[command(flatten)]
        plugins: PluginsArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Show each tool's file, where it came from (piton.lock; "not recorded" for
        /// a file `piton add` did not put there, with the command that records it),
        /// who signed it and its digest.
        #[arg(long)]
        sources: bool,
    },
    /// Call a tool once and print its result.
    Call {
        /// The tool's name.
        name: String,
        /// The arguments as a JSON object, or `-` to read them from stdin. Default `{}`.
        args: Option<String>,
        #[command(flatten)]
        plugins: PluginsArg,
        /// Where images in the result are saved, each as a new file with a random
        /// name; not in a tool's write mount. Default: a new folder in the system's
        /// temp folder that only you can read.
        #[arg(long, value_name = "DIR")]
        image_dir: Option<PathBuf>,
        /// Have code mode's tool, as piton.toml's [code] enabled = true does. On
        /// without it when NAME is run_python.
        #[arg(long)]
        code_mode: bool,
    },
    /// Show a tool's spec, schema, hints, imports, size and hash.
    Inspect {
        /// The tool's name.
        name: String,
        #[command(flatten)]
        plugins: PluginsArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serve every tool over MCP: on stdin/stdout until stdin closes, or over
    /// Streamable HTTP with --http; Ctrl-C or SIGTERM stops either gracefully. A plugins folder is watched:
    /// changes reload the tools and clients are told (tools/list_changed).
    Serve {
        #[command(flatten)]
        plugins: PluginsArg,
        /// Serve over Streamable HTTP at http://ADDR/mcp instead of stdio, e.g.
        /// 127.0.0.1:8080 (port 0 picks a free one). Only requests whose Host and
        /// Origin name this address are answered. A non-loopback address lets anyone
        /// who can reach it call the tools.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// With --http, also answer requests whose Host (or Origin) is HOST: the name
        /// clients use for a load balancer or proxy in front of piton. On any port, or
        /// only on PORT if given. Repeat it for more names.
        #[arg(long = "allow-host", value_name = "HOST[:PORT]", requires = "http")]
        allow_host: Vec<crate::serve::AllowedHost>,
        #[command(flatten)]
        limits: serve::HttpLimitsArg,
        /// On SIGTERM or Ctrl-C, how long the calls in flight get to answer before
        /// those still running are answered with an error; then piton exits 0.
        #[arg(long, value_name = "DURATION", default_value = "15s",
              value_parser = crate::config::values::parse_duration)]
        shutdown_grace: std::time::Duration,
        /// Which calls to ask the person about, through their MCP client, for this
        /// run, over piton.toml's [approve] ask and every tool's approve:
        /// not-read-only (the default), destructive, open-world, always or never.
        #[arg(long, value_name = "MODE")]
        approve: Option<crate::config::approve::AskMode>,
        /// Serve code mode's tool too (run_python: a short Python program that
        /// calls the other tools), as piton.toml's [code] enabled = true does.
        #[arg(long)]
        code_mode: bool,
    },
    /// Build a tool project (Rust, Python, JavaScript, TypeScript, C or Go) or a single
    /// source file (tools.py, tools.js, tools.ts, tool.c) into a component, write its
    /// tools' specs into it (the plugins folder then lists them without compiling it),
    /// and print its path.
    Build {
        /// The project folder or source file. Default: the current folder.
        path: Option<PathBuf>,
        /// Where the component goes. Default: NAME.wasm in the project folder, where
        /// NAME is the folder's name or the file's stem.
        #[arg(short, long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Check a component as a load would, without installing it: its world, each
    /// tool's spec, schema and hints, and what each WASI import gives with nothing
    /// granted. Exit 0 when it would load, 1 when not.
    Check {
        /// The component file.
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show where the compile cache is and what it holds; `piton cache clean` empties
    /// it.
    Cache {
        #[command(subcommand)]
        action: Option<cache::CacheAction>,
    },
    /// Fetch a component into the plugins folder, check it as `piton check` does,
    /// record where it came from and its digest in piton.lock, and print its tools.
    Add {
        /// oci://HOST[:PORT]/REPO:TAG, oci://HOST[:PORT]/REPO@sha256:HEX,
        /// https://…/FILE.wasm (with --sha256), or a local FILE.wasm.
        #[arg(value_name = "REF")]
        reference: String,
        /// The component's name: its file is NAME.wasm. Default: the last part of
        /// REF without .wasm.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// The SHA-256 its bytes must have (for a URL, unless [trust] require = "any").
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// Replace a file of that name that piton.lock does not record, or records
        /// from another source.
        #[arg(long)]
        force: bool,
        /// The Sigstore bundle to check (a file or URL). Default: REF.sigstore.json
        /// beside a file or URL; an OCI image's cosign signatures.
        #[arg(long, value_name = "BUNDLE")]
        signature: Option<String>,
        #[command(flatten)]
        plugins: PluginsArg,
    },
    /// Fetch each added component's source again (an OCI tag resolves anew); for a
    /// new version, show its permission diff and ask before replacing the file.
    Update {
        /// Only this component (its name in piton.lock). Default: every one.
        name: Option<String>,
        /// With NAME from a URL: the SHA-256 of the new version's bytes.
        #[arg(long, value_name = "HEX", requires = "name")]
        sha256: Option<String>,
        /// Replace without asking when nothing gets weaker (for scripts).
        #[arg(long)]
        yes: bool,
        /// Weaker changes (a hint dropped, a new capability, a new tool) may be taken
        /// too; with --yes, without asking.
        #[arg(long)]
        allow_weaker: bool,
        #[command(flatten)]
        plugins: PluginsArg,
    },
    /// Delete a component `piton add` put in the plugins folder, and its piton.lock
    /// entry.
    Remove {
        /// The name it was added under (`piton list --sources` shows them).
        name: String,
        #[command(flatten)]
        plugins: PluginsArg,
    },
    /// Check a component, then push it to an OCI registry in the CNCF Wasm artifact
    /// layout (what wkg and Wassette pull), and print the manifest's digest.
    Publish {
        /// The component file.
        file: PathBuf,
        /// Where: oci://HOST[:PORT]/REPO:TAG.
        #[arg(value_name = "REF")]
        target: String,
        /// Sign the pushed manifest with this private key (PKCS#8 PEM, as `piton
        /// keygen` makes), as `cosign sign --key` does.
        #[arg(long, value_name = "FILE")]
        key: Option<PathBuf>,
    },
    /// Sign a component with a key: writes a Sigstore bundle (FILE.wasm.sigstore.json)
    /// as `cosign sign-blob --bundle` does.
    Sign {
        /// The component file.
        file: PathBuf,
        /// The private key: a PKCS#8 PEM file (ECDSA P-256 or Ed25519), as `piton
        /// keygen` makes.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// Where the bundle goes. Default: FILE.sigstore.json beside the file.
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Check a component's signature against piton.toml's [trust] policy and print
    /// the signer. Exit 0 when it would be taken, 1 when refused.
    Verify {
        /// The component file.
        file: PathBuf,
        /// The Sigstore bundle. Default: FILE.sigstore.json beside the file.
        #[arg(long, value_name = "PATH")]
        signature: Option<PathBuf>,
        /// The settings file. Default: $PITON_CONFIG, else ./piton.toml.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Make a key pair to sign components with: NAME.key (private, PKCS#8 PEM, only
    /// you can read it) and NAME.pub (public, for [[trust.keys]]).
    Keygen {
        /// The files' name, without extension.
        name: PathBuf,
        /// An Ed25519 key instead of ECDSA P-256 (cosign's default).
        #[arg(long)]
        ed25519: bool,
    },
    /// Make a new tool project: one example tool, its test and a README.
    New {
        /// The language: rust, python, js, ts, c or go.
        #[arg(long, value_name = "LANG")]
        lang: String,
        /// The project folder to make; its name (e.g. word-count) names the tool
        /// (word_count).
        dir: PathBuf,
    },
}

/// Parses the process's arguments, runs the command and returns its exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(Outcome::Stopped as u8);
        }
    };
    let outcome = runtime.block_on(run(cli.command));
    // `serve` stopped by a signal may leave a blocking read of a terminal's stdin
    // behind; a plain drop of the runtime would wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(outcome) => ExitCode::from(outcome as u8),
        // A closed pipe (`piton list | head`) is not a failure.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write the output: {e}");
            ExitCode::from(Outcome::Stopped as u8)
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("PITON_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Logs go to stderr: stdout carries results (and, for `serve`, the protocol).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(io::IsTerminal::is_terminal(&io::stderr()))
        .with_writer(io::stderr)
        .try_init();
}

async fn run(command: Command) -> io::Result<Outcome> {
    match command {
        Command::List {
            plugins,
            json,
            sources: false,
        } => {
            on_registry(plugins, false, |registry| async move {
                list::list(&registry, json).await
            })
            .await
        }
        Command::List {
            plugins,
            json,
            sources: true,
        } => list_sources(plugins, json).await,
        Command::Add {
            reference,
            name,
            sha256,
            force,
            signature,
            plugins,
        } => {
            add::add(add::AddArgs {
                reference,
                name,
                sha256,
                force,
                signature,
                plugins,
            })
            .await
        }
        Command::Update {
            name,
            sha256,
            yes,
            allow_weaker,
            plugins,
        } => {
            update::update(update::UpdateArgs {
                name,
                sha256,
                consent: crate::supply::update::Consent { yes, allow_weaker },
                plugins,
            })
            .await
        }
        Command::Remove { name, plugins } => remove::remove(&name, plugins),
        Command::Publish { file, target, key } => {
            publish::publish(&file, &target, key.as_deref()).await
        }
        Command::Call {
            name,
            args,
            plugins,
            image_dir,
            code_mode,
        } => {
            let code_mode = code_mode || name == crate::config::code::DEFAULT_NAME;
            on_registry_with(plugins, false, code_mode, |registry| async move {
                call::call(&registry, &name, args.as_deref(), image_dir).await
            })
            .await
        }
        Command::Inspect {
            name,
            plugins,
            json,
        } => {
            // With the policy `serve` follows, to show what its calls will be asked about.
            on_registry(plugins, true, |registry| async move {
                inspect::inspect(&registry, &name, json).await
            })
            .await
        }
        Command::Serve {
            plugins,
            http,
            allow_host,
            limits,
            shutdown_grace,
            approve,
            code_mode,
        } => {
            let http = http.map(|addr| serve::Http {
                addr,
                limits: limits.limits(),
                allowed_hosts: allow_host,
            });
            Ok(serve::serve(plugins, http, shutdown_grace, approve, code_mode).await)
        }
        Command::Build { path, out } => Ok(build::build(path, out).await),
        Command::Check { file, json } => check::check(&file, json).await,
        Command::New { lang, dir } => Ok(new::new(&lang, &dir)),
        Command::Cache { action } => cache::cache(action),
        Command::Sign { file, key, output } => Ok(sign::sign(&file, &key, output)),
        Command::Verify {
            file,
            signature,
            config,
        } => Ok(verify::verify(&file, signature, config)),
        Command::Keygen { name, ed25519 } => Ok(sign::keygen(&name, ed25519)),
    }
}

/// `piton list --sources`: the tools, with piton.lock's record of each file.
async fn list_sources(arg: PluginsArg, json: bool) -> io::Result<Outcome> {
    let Some(loader) = loader(arg) else {
        return Ok(Outcome::Usage);
    };
    let lock = match loader.lock_file() {
        Some(file) => match crate::supply::lock::Lock::load(&file) {
            Ok(lock) => lock,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Outcome::Usage);
            }
        },
        None => crate::supply::lock::Lock::default(),
    };
    let outcome = match load(&loader).await {
        Some(registry) => list::sources(&registry, &lock, json).await,
        None => Ok(Outcome::Usage),
    };
    loader.close().await;
    outcome
}

/// Loads the tools `arg` names (with `consent`, the policy `serve` follows), runs
/// `command` on them, then closes the upstream connections (so stdio servers end
/// before piton does).
async fn on_registry<F, Fut>(arg: PluginsArg, consent: bool, command: F) -> io::Result<Outcome>
where
    F: FnOnce(Registry) -> Fut,
    Fut: Future<Output = io::Result<Outcome>>,
{
    on_registry_with(arg, consent, false, command).await
}

/// [`on_registry`], with code mode's tool in the registry when `code_mode`.
async fn on_registry_with<F, Fut>(
    arg: PluginsArg,
    consent: bool,
    code_mode: bool,
    command: F,
) -> io::Result<Outcome>
where
    F: FnOnce(Registry) -> Fut,
    Fut: Future<Output = io::Result<Outcome>>,
{
    let Some(mut loader) = loader(arg) else {
        return Ok(Outcome::Usage);
    };
    if code_mode {
        loader = loader.with_code_mode();
    }
    if consent {
        loader = loader.with_consent(crate::consent::Keeper::new(None));
    }
    // Ctrl-C or SIGTERM stops the command, not the process: the upstream servers are
    // still closed below (a stdio server that does not end when its input closes
    // would otherwise outlive piton).
    let signal = stop_signal(CLOSE);
    let work = async {
        match load(&loader).await {
            Some(registry) => command(registry).await,
            None => Ok(Outcome::Usage),
        }
    };
    let outcome = tokio::select! {
        outcome = work => outcome,
        signal = signal => {
            eprintln!("piton: {}: stopped; closing the upstream MCP servers", signal.name());
            Ok(signal::outcome(signal))
        }
    };
    loader.close().await;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::HttpLimits;

    fn serve_limits(args: &[&str]) -> Result<HttpLimits, clap::Error> {
        let cli = Cli::try_parse_from(["piton", "serve"].iter().chain(args))?;
        match cli.command {
            Command::Serve { limits, .. } => Ok(limits.limits()),
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn serve_shutdown_grace_defaults_to_the_documented_one_and_parses_durations() {
        let grace = |args: &[&str]| -> Result<std::time::Duration, clap::Error> {
            let cli = Cli::try_parse_from(["piton", "serve"].iter().chain(args))?;
            match cli.command {
                Command::Serve { shutdown_grace, .. } => Ok(shutdown_grace),
                other => panic!("not serve: {other:?}"),
            }
        };
        assert_eq!(grace(&[]).expect("parses"), crate::serve::DEFAULT_GRACE);
        assert_eq!(
            grace(&["--shutdown-grace", "2m"]).expect("parses"),
            std::time::Duration::from_secs(120)
        );
        assert!(grace(&["--shutdown-grace", "0s"]).is_err());
        assert!(grace(&["--shutdown-grace", "later"]).is_err());
    }

    #[test]
    fn serve_http_limits_default_to_the_documented_ones() {
        let limits = serve_limits(&["--http", "127.0.0.1:0"]).expect("parses");
        assert_eq!(limits, HttpLimits::default());
    }

    #[test]
    fn serve_http_per_client_shares_default_to_a_quarter_and_are_at_most_the_whole() {
        let limits = serve_limits(&["--http", "127.0.0.1:0"]).expect("parses");
        assert_eq!(
            (
                limits.max_connections_per_client,
                limits.max_sessions_per_client
            ),
            (128, 64)
        );
        let limits = serve_limits(&[
            "--http",
            "127.0.0.1:0",
            "--max-connections",
            "40",
            "--max-sessions",
            "3",
        ])
        .expect("parses");
        assert_eq!(
            (
                limits.max_connections_per_client,
                limits.max_sessions_per_client
            ),
            (10, 1)
        );
        let limits = serve_limits(&[
            "--http",
            "127.0.0.1:0",
            "--max-connections",
            "40",
            "--max-connections-per-client",
            "1000",
            "--max-sessions-per-client",
            "7",
        ])
        .expect("parses");
        assert_eq!(
            (
                limits.max_connections_per_client,
                limits.max_sessions_per_client
            ),
            (40, 7)
        );
    }

    #[test]
    fn serve_http_limits_parse_durations_and_refuse_zero_or_no_http() {
        let limits = serve_limits(&[
            "--http",
            "127.0.0.1:0",
            "--header-timeout",
            "500ms",
            "--max-sessions",
            "3",
        ])
        .expect("parses");
        assert_eq!(limits.header_timeout, std::time::Duration::from_millis(500));
        assert_eq!(limits.max_sessions, 3);
        for bad in [
            &["--http", "127.0.0.1:0", "--max-connections", "0"][..],
            &["--http", "127.0.0.1:0", "--max-sessions-per-client", "0"],
            &["--max-connections-per-client", "3"],
            &["--http", "127.0.0.1:0", "--idle-timeout", "0s"],
            &["--http", "127.0.0.1:0", "--idle-timeout", "soon"],
            &["--max-sessions", "3"],
        ] {
            assert!(serve_limits(bad).is_err(), "{bad:?}");
        }
    }
}
