//! The `piton` command line: `list`, `call`, `inspect`, `serve`.
//!
//! Exit codes: 0 success, 1 an error result (input or failed), 2 a usage error or
//! unknown tool, 3 a trap or another failure that stops the run.

use std::io::{self, Read as _, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args as ClapArgs, Parser, Subcommand};
use serde_json::{Value, json};

use crate::config::Config;
use crate::plugins::{self, PluginsAt};
use crate::wasm::{RuntimeConfig, WasmRuntime, WasmTool};
use crate::{CallError, Content, DONE, Registry, ToolError, format_size};

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
    /// List the tools: name, hints, description, source.
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
    /// Serve every tool over MCP on stdin/stdout until stdin closes.
    Serve {
        #[command(flatten)]
        plugins: PluginsArg,
    },
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
    match runtime.block_on(run(cli.command)) {
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
            list(&registry, json)
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
            inspect(&registry, &name, json)
        }
        Command::Serve { plugins } => {
            let Some(registry) = load(plugins).await else {
                return Ok(Outcome::Usage);
            };
            Ok(serve(registry).await)
        }
    }
}

/// Serves the registry over MCP on stdio; stdout carries only the protocol.
async fn serve(registry: Registry) -> Outcome {
    tracing::info!(tools = registry.len(), "serving MCP on stdio");
    let (stdin, stdout) = rmcp::transport::stdio();
    match crate::mcp::serve(std::sync::Arc::new(registry), stdin, stdout).await {
        Ok(()) => Outcome::Success,
        Err(e) => {
            eprintln!("error: {e}");
            Outcome::Stopped
        }
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
    match plugins::load(&runtime, &at, &config).await {
        Ok(loaded) => {
            for error in &loaded.errors {
                eprintln!("warning: plugin not loaded: {error}");
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

fn list(registry: &Registry, as_json: bool) -> io::Result<Outcome> {
    let mut out = io::stdout().lock();
    if as_json {
        let tools: Vec<Value> = registry
            .tools()
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
        writeln!(out, "{}", pretty(&Value::Array(tools)))?;
        return Ok(Outcome::Success);
    }
    if registry.is_empty() {
        writeln!(out, "no tools")?;
        return Ok(Outcome::Success);
    }
    let rows: Vec<[String; 4]> = registry
        .tools()
        .map(|tool| {
            [
                tool.spec().name.clone(),
                tool.hints().to_string(),
                first_line(&tool.spec().description),
                tool.source().to_string(),
            ]
        })
        .collect();
    let header = ["NAME", "HINTS", "DESCRIPTION", "SOURCE"].map(str::to_owned);
    let widths: Vec<usize> = (0..4)
        .map(|i| {
            rows.iter()
                .chain([&header])
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:w$}"))
            .collect();
        writeln!(out, "{}", line.join("  ").trim_end())?;
    }
    Ok(Outcome::Success)
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
            if registry.get(name).is_none() {
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
            eprintln!("{error}");
            Ok(Outcome::ErrorResult)
        }
        Err(CallError::UnknownTool { .. }) => unknown(registry, name),
        Err(error) => {
            eprintln!("error: {error}");
            Ok(Outcome::Stopped)
        }
    }
}

fn unknown(registry: &Registry, name: &str) -> io::Result<Outcome> {
    let error = CallError::UnknownTool {
        name: name.to_owned(),
        known: registry.names(),
    };
    eprintln!("error: {error}");
    Ok(Outcome::Usage)
}

fn print_content(tool: &str, content: &[Content], image_dir: Option<PathBuf>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    if content.is_empty() {
        return writeln!(out, "{DONE}");
    }
    for (index, block) in content.iter().enumerate() {
        match block {
            Content::Text { text } => writeln!(out, "{text}")?,
            Content::Json { json } => writeln!(out, "{}", pretty(json))?,
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
                    "image ({mime_type}, {} bytes) saved to {}",
                    data.len(),
                    path.display()
                )?;
            }
        }
    }
    Ok(())
}

fn inspect(registry: &Registry, name: &str, as_json: bool) -> io::Result<Outcome> {
    let Some(tool) = registry.get(name) else {
        return unknown(registry, name);
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
            },
            "on_trap": w.on_trap(),
            "mounts": caps.mounts.iter().map(|(m, access)| json!({
                "guest": m.guest, "host": m.host, "granted": m.mode, "access": access,
            })).collect::<Vec<_>>(),
            "network": caps.network.iter().map(ToString::to_string).collect::<Vec<_>>(),
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
    if as_json {
        writeln!(out, "{}", pretty(&report))?;
        return Ok(Outcome::Success);
    }
    writeln!(out, "name:        {}", spec.name)?;
    writeln!(out, "description: {}", spec.description)?;
    writeln!(out, "parallel:    {}", spec.parallel)?;
    writeln!(
        out,
        "hints:       {} ({:?})",
        tool.hints(),
        tool.hints_trust()
    )?;
    writeln!(out, "source:      {}", tool.source())?;
    if let Some(w) = wasm {
        let info = w.info();
        writeln!(out, "size:        {} bytes", info.size)?;
        writeln!(out, "sha256:      {}", info.sha256)?;
        let l = w.limits();
        writeln!(
            out,
            "limits:      memory {}, timeout {:?}, output {}, log {}; on trap: {:?}",
            format_size(l.memory),
            l.timeout,
            format_size(l.max_output),
            format_size(l.max_log),
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
        writeln!(out, "  network:   {}", list_or_none(&network))?;
        let env: Vec<String> = caps.env.iter().map(|(k, _)| k.clone()).collect();
        writeln!(out, "  env:       {}", list_or_none(&env))?;
        writeln!(out, "imports:")?;
        for import in &info.imports {
            writeln!(out, "  {import}")?;
        }
    }
    writeln!(out, "input schema:\n{}", pretty(&spec.input_schema))?;
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

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_owned()
}
