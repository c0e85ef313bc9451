//! The `piton` command line: `list`, `call`, `inspect`, `serve`.
//!
//! Exit codes: 0 success, 1 an error result (input or failed), 2 a usage error or
//! unknown tool, 3 a trap or another failure that stops the run.

use std::io::{self, Read as _, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args as ClapArgs, Parser, Subcommand};
use serde_json::{Value, json};

use std::collections::BTreeMap;

use crate::config::{Config, UpstreamConfig};
use crate::plugins::{self, PluginsAt};
use crate::term::{self, Shown};
use crate::upstream::{UpstreamError, UpstreamServer};
use crate::wasm::{RuntimeConfig, WasmRuntime, WasmTool};
use crate::{CallError, Content, DONE, HintsTrust, Registry, ToolError, format_size};

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
    },
    /// Call a tool once and print its result.
    Call {
        /// The tool's name.
        name: String,
        /// The arguments as a JSON object, or `-` to read them from stdin. Default `{}`.
        args: Option<String>,
        #[command(flatten)]
        plugins: PluginsArg,
        /// Where images in the result are saved. Default: the system's temp folder.
        #[arg(long, value_name = "DIR")]
        image_dir: Option<PathBuf>,
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
    /// Streamable HTTP with --http until Ctrl-C/SIGTERM. A plugins folder is watched:
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
        #[command(flatten)]
        limits: HttpLimitsArg,
    },
}

/// What `serve --http` holds open for its clients, at most.
#[derive(Debug, ClapArgs)]
#[command(next_help_heading = "Limits with --http")]
struct HttpLimitsArg {
    /// Connections open at once; past it, new ones wait (in the listen backlog) until
    /// one closes.
    #[arg(long, value_name = "N", default_value = "512", requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// MCP sessions open at once; past it, `initialize` gets 503 until one is closed
    /// (DELETE) or expires. 2026-07-28 requests need no session.
    #[arg(long, value_name = "N", default_value = "256", requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_sessions: u32,
    /// Time a client has to send a request's headers, from its first byte (or from
    /// connecting); then the connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", requires = "http",
          value_parser = crate::parse::parse_duration)]
    header_timeout: std::time::Duration,
    /// Time a client has to send a request's body, from its headers; then the
    /// connection is closed. Bodies are at most 4 MiB.
    #[arg(long, value_name = "DURATION", default_value = "30s", requires = "http",
          value_parser = crate::parse::parse_duration)]
    body_timeout: std::time::Duration,
    /// Time a kept-alive connection may sit between requests. Answers being worked
    /// on or streamed (tool calls, event streams) are never cut.
    #[arg(long, value_name = "DURATION", default_value = "60s", requires = "http",
          value_parser = crate::parse::parse_duration)]
    idle_timeout: std::time::Duration,
    /// Time an MCP session may go without a message before it ends. Keep it above the
    /// longest tool timeout: a call in flight sends none.
    #[arg(long, value_name = "DURATION", default_value = "5m", requires = "http",
          value_parser = crate::parse::parse_duration)]
    session_timeout: std::time::Duration,
}

impl HttpLimitsArg {
    fn limits(&self) -> crate::serve::HttpLimits {
        crate::serve::HttpLimits {
            max_connections: self.max_connections as usize,
            max_sessions: self.max_sessions as usize,
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            idle_timeout: self.idle_timeout,
            session_timeout: self.session_timeout,
        }
    }
}

#[derive(Debug, ClapArgs)]
struct PluginsArg {
    /// The plugins folder. Default: $PITON_PLUGINS, else ./plugins if it holds .wasm
    /// files, else the examples built into piton.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// The grants and settings file. Default: $PITON_CONFIG, else piton.toml in the
    /// plugins folder, else ./piton.toml.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Success = 0,
    ErrorResult = 1,
    Usage = 2,
    Stopped = 3,
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
    let outcome = runtime.block_on(async {
        let outcome = run(cli.command).await;
        disconnect_upstreams().await;
        outcome
    });
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
        Command::List { plugins, json } => {
            let Some(registry) = load(plugins).await else {
                return Ok(Outcome::Usage);
            };
            list(&registry, json).await
        }
        Command::Call {
            name,
            args,
            plugins,
            image_dir,
        } => {
            let Some(registry) = load(plugins).await else {
                return Ok(Outcome::Usage);
            };
            call(&registry, &name, args.as_deref(), image_dir).await
        }
        Command::Inspect {
            name,
            plugins,
            json,
        } => {
            let Some(registry) = load(plugins).await else {
                return Ok(Outcome::Usage);
            };
            inspect(&registry, &name, json).await
        }
        Command::Serve {
            plugins,
            http,
            limits,
        } => Ok(serve(plugins, http.as_deref(), limits.limits()).await),
    }
}

/// Serves the registry over MCP, on stdio (stdout carries only the protocol) or on
/// HTTP at `http`, reloading it when the plugins folder changes.
async fn serve(
    plugins: PluginsArg,
    http: Option<&str>,
    limits: crate::serve::HttpLimits,
) -> Outcome {
    use std::sync::Arc;

    use crate::plugins::{FolderWatch, Watched};
    use crate::serve::Served;

    // A bad address fails before anything is loaded.
    let listener = match http {
        Some(addr) => match listen(addr).await {
            Ok(listener) => Some(listener),
            Err(message) => {
                eprintln!("error: {message}");
                return Outcome::Usage;
            }
        },
        None => None,
    };
    // A folder is watched (bundled plugins cannot change), from before it is loaded
    // so that no change is missed. A reload loads exactly as at start-up, from the
    // folder found then.
    let at = PluginsAt::resolve(plugins.plugins.clone());
    let config_flag = plugins.config.clone();
    let watch = match &at {
        PluginsAt::Folder(folder) => Some((
            folder.clone(),
            FolderWatch::start(Watched {
                folder: folder.clone(),
                files: at.config_file(config_flag.clone()).into_iter().collect(),
            }),
        )),
        PluginsAt::Bundled => None,
    };
    let Some(registry) = load(plugins).await else {
        return Outcome::Usage;
    };
    let served = Served::new(registry);
    if let Some((folder, mut watch)) = watch {
        let shown = folder.display().to_string();
        let reload = move || {
            load(PluginsArg {
                plugins: Some(folder.clone()),
                config: config_flag.clone(),
            })
        };
        let weak = Arc::downgrade(&served);
        tokio::spawn(async move {
            while watch.changed().await.is_some() {
                let Some(served) = weak.upgrade() else {
                    return;
                };
                tracing::info!(folder = %shown, "the plugins changed: reloading");
                match reload().await {
                    Some(registry) => {
                        tracing::info!(folder = %shown, tools = registry.len(), "reloaded the plugins");
                        served.replace(registry);
                    }
                    None => tracing::warn!(
                        folder = %shown,
                        "the plugins changed but could not be loaded; still serving the tools \
                         loaded before"
                    ),
                }
            }
        });
    }
    let ended = match listener {
        None => {
            tracing::info!(tools = served.registry().len(), "serving MCP on stdio");
            // Pipes are read and written on tokio's reactor, not through blocking-pool
            // threads (a hand-off per message): ~60-85 µs less per call, measured by
            // benches/mcp.rs. A terminal or file falls back to the blocking handles.
            let (stdin, stdout) = rmcp::transport::stdio_pipes();
            crate::serve::serve(served, stdin, stdout).await
        }
        Some(listener) => {
            let shutdown = shutdown_signal();
            match listener.local_addr() {
                Ok(addr) => {
                    if !addr.ip().is_loopback() {
                        eprintln!(
                            "warning: serving on {addr}, not a loopback address: anyone who can \
                             reach it can call every tool (there is no authentication); only \
                             requests that address it by IP are answered"
                        );
                    }
                    eprintln!("listening on http://{addr}{}", crate::serve::MCP_PATH);
                }
                Err(e) => eprintln!("warning: cannot read the listening address: {e}"),
            }
            crate::serve::serve_http(served, listener, limits, shutdown).await
        }
    };
    match ended {
        Ok(()) => Outcome::Success,
        Err(e) => {
            eprintln!("error: {e}");
            Outcome::Stopped
        }
    }
}

/// Binds `addr` (`IP:PORT`, or `localhost:PORT` for 127.0.0.1), or says why not and
/// what to do.
async fn listen(addr: &str) -> Result<tokio::net::TcpListener, String> {
    let parsed = match addr.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}").parse(),
        None => addr.parse::<std::net::SocketAddr>(),
    };
    let Ok(socket) = parsed else {
        return Err(format!(
            "--http {addr}: not an address to listen on; give IP:PORT, e.g. \
             --http 127.0.0.1:8080 (port 0 picks a free port)"
        ));
    };
    tokio::net::TcpListener::bind(socket).await.map_err(|e| {
        format!(
            "--http {addr}: cannot listen there: {e}; pick another port (0 picks a free \
             one) or an address of this machine, e.g. --http 127.0.0.1:0"
        )
    })
}

/// Resolves on Ctrl-C or SIGTERM. The handlers are in place when this returns, so
/// a signal sent right after is not lost (nor kills the process).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::terminate())
            .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)))
    };
    async move {
        #[cfg(unix)]
        match signals {
            Ok((mut term, mut interrupt)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = interrupt.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch for SIGTERM; Ctrl-C still stops");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("stopping: a signal arrived");
    }
}

/// Loads the plugins, reporting each one that failed on stderr.
async fn load(arg: PluginsArg) -> Option<Registry> {
    let runtime = match WasmRuntime::new(RuntimeConfig::default()) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e}");
            return None;
        }
    };
    let at = PluginsAt::resolve(arg.plugins);
    let config = match at.config_file(arg.config) {
        Some(file) => match Config::load(&file) {
            Ok(config) => config,
            Err(e) => {
                eprintln!("error: {e}");
                return None;
            }
        },
        None => Config::default(),
    };
    // Servers first: a wasm tool in a server's `{server}__` name space is refused,
    // never the server (see Registry::add_mcp).
    let mut registry = Registry::new();
    forget_upstreams_not_in(&config);
    for (name, server) in &config.mcp {
        let added = upstream(name, server)
            .map_err(|e| e.to_string())
            .and_then(|server| registry.add_mcp(server).map_err(|e| e.to_string()));
        if let Err(e) = added {
            say(format_args!("warning: MCP server not added: {e}"));
        }
    }
    match plugins::load_into(registry, &runtime, &at, &config).await {
        Ok(loaded) => {
            for error in &loaded.errors {
                say(format_args!("warning: plugin not loaded: {error}"));
            }
            for name in &loaded.unused_config {
                eprintln!("warning: piton.toml has [tools.{name}] but no tool is called {name}");
            }
            Some(loaded.registry)
        }
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}

/// The upstream servers made from piton.toml, by name, with the section each came from.
static SERVERS: std::sync::Mutex<BTreeMap<String, (UpstreamConfig, UpstreamServer)>> =
    std::sync::Mutex::new(BTreeMap::new());

/// Forgets the servers whose sections are gone from `config` (a reload): they end
/// when the last registry holding them does.
fn forget_upstreams_not_in(config: &Config) {
    SERVERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .retain(|name, _| config.mcp.contains_key(name));
}

/// Closes every upstream connection, so stdio servers and their process groups end
/// before piton does (dropping them at exit would leave that to a task that never runs).
async fn disconnect_upstreams() {
    let servers: Vec<UpstreamServer> = SERVERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .values()
        .map(|(_, server)| server.clone())
        .collect();
    futures::future::join_all(servers.iter().map(UpstreamServer::disconnect)).await;
}

/// The upstream server `[mcp.NAME]` describes. While piton runs, the same section
/// gives the same server (one connection), so that reloading the plugins folder does
/// not restart upstream servers; a changed section gives a new one.
fn upstream(name: &str, config: &UpstreamConfig) -> Result<UpstreamServer, UpstreamError> {
    let mut servers = SERVERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((known, server)) = servers.get(name)
        && known == config
    {
        return Ok(server.clone());
    }
    let server = config.server(name)?;
    servers.insert(name.to_owned(), (config.clone(), server.clone()));
    Ok(server)
}

async fn list(registry: &Registry, as_json: bool) -> io::Result<Outcome> {
    let listing = registry.list().await;
    for error in &listing.errors {
        say(format_args!("warning: {error}"));
    }
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if as_json {
        let tools: Vec<Value> = listing
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.spec().name,
                    "description": tool.spec().description,
                    "hints": tool.hints(),
                    "hints_are": tool.hints_trust(),
                    "parallel": tool.spec().parallel,
                    "source": tool.source().to_string(),
                })
            })
            .collect();
        writeln!(out, "{}", shown.text(&pretty(&Value::Array(tools))))?;
        return Ok(Outcome::Success);
    }
    if listing.tools.is_empty() {
        writeln!(out, "no tools")?;
        return Ok(Outcome::Success);
    }
    // Hints of wasm tools are enforced by their sandbox; an MCP server's (and a
    // native tool's) are only declared.
    let rows: Vec<[String; 5]> = listing
        .tools
        .iter()
        .map(|tool| {
            [
                term::cut_end(&shown.cell(&tool.spec().name), MAX_NAME_CELL).into_owned(),
                tool.hints().to_string(),
                match tool.hints_trust() {
                    HintsTrust::Enforced => "enforced",
                    HintsTrust::Declared => "declared",
                }
                .to_owned(),
                shown
                    .cell(first_line(&tool.spec().description))
                    .into_owned(),
                term::cut_start(&shown.cell(&tool.source().to_string()), MAX_SOURCE_CELL)
                    .into_owned(),
            ]
        })
        .collect();
    let header = ["NAME", "HINTS", "HINTS ARE", "DESCRIPTION", "SOURCE"].map(str::to_owned);
    for line in table(&header, rows, DESCRIPTION_COLUMN, term::stdout_width()) {
        writeln!(out, "{line}")?;
    }
    Ok(Outcome::Success)
}

/// The widest NAME and SOURCE cells of `piton list`; a longer source keeps its end.
const MAX_NAME_CELL: usize = 64;
const MAX_SOURCE_CELL: usize = 48;
/// The column of `piton list` that gives up room so that lines fit the width.
const DESCRIPTION_COLUMN: usize = 3;
/// The narrowest the description column gets, however wide the others are.
const MIN_DESCRIPTION_CELL: usize = 16;

/// The lines of a table with `header` and `rows`: columns two spaces apart, each as
/// wide as its widest cell, except column `flexible`, whose cells are cut (ending
/// in `…`) so that lines fit in `width` columns when the others leave room. Cells
/// are counted in characters and padded by hand (no formatting widths).
fn table<const N: usize>(
    header: &[String; N],
    mut rows: Vec<[String; N]>,
    flexible: usize,
    width: usize,
) -> Vec<String> {
    let natural = |rows: &[[String; N]], i: usize| {
        rows.iter()
            .chain([header])
            .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
            .max()
            .unwrap_or(0)
    };
    let mut widths: Vec<usize> = (0..N).map(|i| natural(&rows, i)).collect();
    let others: usize = widths
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != flexible)
        .map(|(_, w)| w + 2)
        .sum();
    let room = width.saturating_sub(others).max(MIN_DESCRIPTION_CELL);
    if let Some(w) = widths.get_mut(flexible)
        && *w > room
    {
        *w = room;
        for row in &mut rows {
            if let Some(cell) = row.get_mut(flexible) {
                *cell = term::cut_end(cell, room).into_owned();
            }
        }
    }
    std::iter::once(header)
        .chain(&rows)
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                line.push_str(cell);
                let pad = w.saturating_sub(cell.chars().count());
                line.extend(std::iter::repeat_n(' ', pad));
            }
            line.trim_end().to_owned()
        })
        .collect()
}

async fn call(
    registry: &Registry,
    name: &str,
    args: Option<&str>,
    image_dir: Option<PathBuf>,
) -> io::Result<Outcome> {
    let text = match args {
        Some("-") => {
            let mut text = String::new();
            if let Err(e) = io::stdin().read_to_string(&mut text) {
                eprintln!("error: cannot read the arguments from stdin: {e}");
                return Ok(Outcome::Usage);
            }
            text
        }
        Some(text) => text.to_owned(),
        None => "{}".to_owned(),
    };
    let args: Value = match serde_json::from_str(&text) {
        Ok(args) => args,
        Err(e) => {
            if let Err(CallError::UnknownTool { .. }) = registry.find(name).await {
                return unknown(registry, name);
            }
            eprintln!(
                "{}",
                ToolError::Input(format!("the arguments are not valid JSON: {e}"))
            );
            return Ok(Outcome::ErrorResult);
        }
    };
    match registry.call(name, args).await {
        Ok(Ok(content)) => {
            print_content(name, &content, image_dir)?;
            Ok(Outcome::Success)
        }
        Ok(Err(error)) => {
            say(format_args!("{error}"));
            Ok(Outcome::ErrorResult)
        }
        Err(CallError::UnknownTool { .. }) => unknown(registry, name),
        Err(error) => {
            say(format_args!("error: {error}"));
            Ok(Outcome::Stopped)
        }
    }
}

fn unknown(registry: &Registry, name: &str) -> io::Result<Outcome> {
    let error = CallError::UnknownTool {
        name: name.to_owned(),
        known: registry.names(),
    };
    say(format_args!("error: {error}"));
    Ok(Outcome::Usage)
}

fn print_content(tool: &str, content: &[Content], image_dir: Option<PathBuf>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if content.is_empty() {
        return writeln!(out, "{DONE}");
    }
    for (index, block) in content.iter().enumerate() {
        match block {
            Content::Text { text } => writeln!(out, "{}", shown.text(text))?,
            Content::Json { json } => writeln!(out, "{}", shown.text(&pretty(json)))?,
            Content::Image { mime_type, data } => {
                let dir = image_dir.clone().unwrap_or_else(std::env::temp_dir);
                let extension = mime_type
                    .rsplit('/')
                    .next()
                    .filter(|e| e.chars().all(char::is_alphanumeric))
                    .unwrap_or("bin");
                let path = dir.join(format!(
                    "piton-{tool}-{}-{index}.{extension}",
                    std::process::id()
                ));
                std::fs::write(&path, data).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot save the image to {}: {e}", path.display()),
                    )
                })?;
                writeln!(
                    out,
                    "image ({}, {} bytes) saved to {}",
                    shown.cell(mime_type),
                    data.len(),
                    path.display()
                )?;
            }
        }
    }
    Ok(())
}

async fn inspect(registry: &Registry, name: &str, as_json: bool) -> io::Result<Outcome> {
    let tool = match registry.find(name).await {
        Ok(tool) => tool,
        Err(CallError::UnknownTool { .. }) => return unknown(registry, name),
        Err(error) => {
            say(format_args!("error: {error}"));
            return Ok(Outcome::Stopped);
        }
    };
    let spec = tool.spec();
    let wasm = (tool.as_ref() as &dyn std::any::Any).downcast_ref::<WasmTool>();
    // What a call gets at most: the grants bounded by the tool's own hints (a call's
    // hints-for can only narrow this further).
    let sandbox = wasm.map(|w| {
        let caps = w.grants().for_call(tool.hints());
        json!({
            "limits": {
                "memory": format_size(w.limits().memory),
                "timeout": format!("{:?}", w.limits().timeout),
                "max_output": format_size(w.limits().max_output),
                "max_log": format_size(w.limits().max_log),
                "max_write": format_size(w.limits().max_write),
            },
            "on_trap": w.on_trap(),
            "mounts": caps.mounts.iter().map(|(m, access)| json!({
                "guest": m.guest, "host": m.host, "granted": m.mode, "access": access,
            })).collect::<Vec<_>>(),
            "network": caps.network.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "network_access": caps.net_access,
            "env": caps.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        })
    });
    let report = json!({
        "name": spec.name,
        "description": spec.description,
        "parallel": spec.parallel,
        "input_schema": spec.input_schema,
        "hints": tool.hints(),
        "hints_are": tool.hints_trust(),
        "source": tool.source().to_string(),
        "component": wasm.map(WasmTool::info),
        "sandbox": sandbox,
    });
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if as_json {
        writeln!(out, "{}", shown.text(&pretty(&report)))?;
        return Ok(Outcome::Success);
    }
    writeln!(out, "name:        {}", shown.cell(&spec.name))?;
    writeln!(out, "description: {}", shown.text(&spec.description))?;
    writeln!(out, "parallel:    {}", spec.parallel)?;
    writeln!(
        out,
        "hints:       {} ({:?})",
        tool.hints(),
        tool.hints_trust()
    )?;
    writeln!(
        out,
        "source:      {}",
        shown.cell(&tool.source().to_string())
    )?;
    if let Some(w) = wasm {
        let info = w.info();
        writeln!(out, "size:        {} bytes", info.size)?;
        writeln!(out, "sha256:      {}", info.sha256)?;
        let l = w.limits();
        writeln!(
            out,
            "limits:      memory {}, timeout {:?}, output {}, log {}, write {}; on trap: {:?}",
            format_size(l.memory),
            l.timeout,
            format_size(l.max_output),
            format_size(l.max_log),
            format_size(l.max_write),
            w.on_trap()
        )?;
        let caps = w.grants().for_call(tool.hints());
        writeln!(
            out,
            "capabilities (at most; a call's hints-for can narrow them):"
        )?;
        if caps.mounts.is_empty() {
            writeln!(out, "  files:     none")?;
        }
        for (m, access) in &caps.mounts {
            writeln!(
                out,
                "  files:     {} = {} ({access:?}; granted {:?})",
                m.guest,
                m.host.display(),
                m.mode
            )?;
        }
        let network: Vec<String> = caps.network.iter().map(ToString::to_string).collect();
        let access = match caps.net_access {
            _ if network.is_empty() => "",
            crate::grants::NetAccess::ReadOnly => " (HTTP GET, HEAD, OPTIONS only)",
            crate::grants::NetAccess::Full => "",
        };
        writeln!(out, "  network:   {}{access}", list_or_none(&network))?;
        let env: Vec<String> = caps.env.iter().map(|(k, _)| k.clone()).collect();
        writeln!(out, "  env:       {}", list_or_none(&env))?;
        writeln!(out, "imports:")?;
        for import in &info.imports {
            writeln!(out, "  {}", shown.cell(import))?;
        }
    }
    writeln!(
        out,
        "input schema:\n{}",
        shown.text(&pretty(&spec.input_schema))
    )?;
    Ok(Outcome::Success)
}

/// `a, b`, or `none` for an empty list.
fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Prints a line on stderr, escaped when stderr is a terminal: it may carry what a
/// tool or an upstream server wrote.
fn say(line: std::fmt::Arguments<'_>) {
    eprintln!("{}", Shown::stderr().text(&line.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_limits(args: &[&str]) -> Result<crate::serve::HttpLimits, clap::Error> {
        let cli = Cli::try_parse_from(["piton", "serve"].iter().chain(args))?;
        match cli.command {
            Command::Serve { limits, .. } => Ok(limits.limits()),
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn serve_http_limits_default_to_the_documented_ones() {
        let limits = serve_limits(&["--http", "127.0.0.1:0"]).expect("parses");
        assert_eq!(limits, crate::serve::HttpLimits::default());
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
            &["--http", "127.0.0.1:0", "--idle-timeout", "0s"],
            &["--http", "127.0.0.1:0", "--idle-timeout", "soon"],
            &["--max-sessions", "3"],
        ] {
            assert!(serve_limits(bad).is_err(), "{bad:?}");
        }
    }
}
