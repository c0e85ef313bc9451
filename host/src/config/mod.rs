//! piton.toml: per-tool grants, limits, trap handling and overrides, parsed once into
//! types. Every error names the file, the key and how to fix it.
//!
//! ```toml
//! [tools.read_file]
//! mounts  = [{ host = "./data", guest = "/data", mode = "read" }]   # or "write"
//! [tools.fetch_url]
//! network = ["api.example.com:443", { host = "api.github.com:443", headers = { Authorization = "Bearer ${GITHUB_TOKEN}" } }]
//! # raw TCP too (not only HTTP(S)): { host = "db.example.com:5432", tcp = true }
//! env     = { LANG = "C" }
//! memory  = "64MiB"
//! timeout = "5s"
//! max_output = "1MiB"
//! max_log = "64KiB"
//! max_write = "64MiB"      # bytes written into files through the mounts, per call
//! on_trap = "error"        # the seed's exception_handler; default "stop"
//! name = "fetch"           # overrides: name, description, parallel,
//! read_only = true         # and hints, which can only be made narrower
//! sha256 = "…"             # a pin: see [`Pins`], as [plugins."FILE.wasm"] sha256
//! from = "fetch.wasm"      # whose tool of this name these are: see [`crate::name_claims`]
//! ```
//!
//! `[mcp.NAME]` upstream MCP servers ([`UpstreamConfig`]), `[runtime]` sizing the wasm
//! runtime ([`RuntimeSettings`]), `[audit]`, the audit log ([`AuditSettings`]),
//! `[tracing]`, spans of calls sent over OTLP ([`TracingSettings`]), `[cache]`
//! bounding the compile cache ([`CacheSettings`]), `[supply]` bounding what `piton
//! add` fetches ([`SupplySettings`]), and `[trust]`, which signatures a component
//! needs ([`TrustPolicy`], parsed in [`trust`]), and `[code]`, code mode
//! ([`CodeSettings`]).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

pub mod approve;
pub mod audit;
pub mod cache;
pub mod code;
mod error;
mod hint_overrides;
pub mod mcp;
pub mod pins;
pub mod runtime;
pub mod supply;
pub mod tracing;
pub mod trust;
pub(crate) mod values;

pub use self::approve::ApproveSettings;
use self::approve::RawApprove;
use self::audit::{AuditSettings, RawAudit};
pub use self::cache::CacheSettings;
use self::cache::RawCache;
pub use self::code::CodeSettings;
use self::code::RawCode;
pub use self::hint_overrides::HintOverrides;
use self::mcp::{RawMcp, parse_mcp};
pub use self::mcp::{UpstreamConfig, UpstreamConnect, UpstreamProtocol};
use self::pins::{Pins, RawPlugin, Sha256};
use self::runtime::RawRuntime;
pub use self::runtime::RuntimeSettings;
use self::supply::RawSupply;
pub use self::supply::SupplySettings;
use self::tracing::{RawTracing, TracingSettings};
use self::trust::RawTrust;
use self::values::{parse_duration, parse_net_entry, parse_size};
use crate::grants::{Grants, Mount, MountMode};
use crate::limits::Limits;
pub use crate::limits::OnTrap;
pub use crate::supply::trust::TrustPolicy;
use crate::tool::check_tool_name;

pub use self::audit::AuditError;
pub use self::code::CodeError;
pub use self::error::{ConfigError, ConfigProblem};
pub use self::mcp::McpError;
pub use self::pins::PinError;
pub use self::runtime::RuntimeError;
pub use self::trust::TrustError;
pub use self::values::ValueError;
pub use crate::nolinks::MountError;

/// A parsed piton.toml.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// The file it came from, for messages.
    pub file: Option<PathBuf>,
    /// Settings by tool name (the name the tool gives itself).
    pub tools: BTreeMap<String, ToolConfig>,
    /// Upstream MCP servers by name (`[mcp.NAME]`).
    pub mcp: BTreeMap<String, UpstreamConfig>,
    /// The `[runtime]` table: the instance pool and the bound on waiting calls.
    pub runtime: RuntimeSettings,
    /// The `[audit]` table: where the audit log goes.
    pub audit: AuditSettings,
    /// The `[tracing]` table: where spans of calls are sent.
    pub tracing: TracingSettings,
    /// The digests pinned: `[plugins."FILE.wasm"] sha256` and `[tools.NAME] sha256`.
    pub pins: Pins,
    /// The `[cache]` table: how much compiled code the compile cache keeps.
    pub cache: CacheSettings,
    /// The `[approve]` table: which calls `serve` asks the person about.
    pub approve: ApproveSettings,
    /// The `[supply]` table: how `piton add` bounds what it fetches.
    pub supply: SupplySettings,
    /// The `[trust]` table: which signatures a component needs and whose count.
    pub trust: TrustPolicy,
    /// The `[code]` table: code mode's tool and what its programs may do.
    pub code: CodeSettings,
}

/// What piton.toml says about one tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolConfig {
    /// Mounts, network and environment.
    pub grants: Grants,
    /// Each call's limits.
    pub limits: Limits,
    /// Whether a trap stops the run (default) or becomes an error result.
    pub on_trap: OnTrap,
    /// A new name for the tool.
    pub name: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new parallel flag.
    pub parallel: Option<bool>,
    /// Hints to narrow the tool's own with; a wider one is an error when applied.
    pub hints: HintOverrides,
    /// `from = "FILE.wasm"`: the one plugins folder file whose tool of this name is
    /// served with these settings; see [`crate::name_claims`].
    pub from: Option<String>,
    /// `approve = "…"`: when this tool's calls are asked about, over `[approve] ask`.
    pub approve: Option<self::approve::AskMode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    tools: BTreeMap<String, RawTool>,
    #[serde(default)]
    mcp: BTreeMap<String, RawMcp>,
    #[serde(default)]
    runtime: RawRuntime,
    #[serde(default)]
    audit: RawAudit,
    #[serde(default)]
    tracing: RawTracing,
    #[serde(default)]
    plugins: BTreeMap<String, RawPlugin>,
    #[serde(default)]
    cache: RawCache,
    #[serde(default)]
    approve: RawApprove,
    #[serde(default)]
    supply: RawSupply,
    #[serde(default)]
    trust: RawTrust,
    #[serde(default)]
    code: RawCode,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    #[serde(default)]
    mounts: Vec<RawMount>,
    /// `"host:port"` or `{ host, headers, tcp }`: read by [`parse_net_entry`], which
    /// names the key at fault.
    #[serde(default)]
    network: Vec<toml::Value>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    memory: Option<String>,
    timeout: Option<String>,
    max_output: Option<String>,
    max_log: Option<String>,
    max_write: Option<String>,
    on_trap: Option<OnTrap>,
    name: Option<String>,
    description: Option<String>,
    parallel: Option<bool>,
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
    sha256: Option<String>,
    from: Option<String>,
    approve: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMount {
    host: String,
    guest: String,
    mode: MountMode,
}

impl Config {
    /// Reads and parses `file`.
    pub fn load(file: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|e| ConfigError {
            file: file.to_path_buf(),
            key: String::new(),
            problem: ConfigProblem::Read(e),
        })?;
        Self::parse(&text, file, &|name| std::env::var(name).ok())
    }

    /// Parses `text` as if read from `file`: relative paths are relative to the file's
    /// folder, and `${VAR}` in header values comes from `env`.
    pub fn parse(
        text: &str,
        file: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        Self::parse_keyed(text, file, env).map_err(|(key, problem)| ConfigError {
            file: file.to_path_buf(),
            key,
            problem,
        })
    }

    /// [`Config::parse`], an error being the key and the mistake.
    fn parse_keyed(
        text: &str,
        file: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, KeyError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            fail(
                String::new(),
                ConfigProblem::Toml(e.to_string().trim_end().replace('\n', "\n    ")),
            )
        })?;
        let base = file.parent().unwrap_or(Path::new("."));
        let files = crate::config::pins::parse_files(raw.plugins).map_err(|(k, m)| fail(k, m))?;
        let mut pins = Pins {
            files,
            ..Pins::default()
        };
        let mut tools = BTreeMap::new();
        for (name, mut raw) in raw.tools {
            let key = format!("tools.{name}");
            if let Some(text) = raw.sha256.take() {
                let pin = Sha256::parse(&text).map_err(|m| fail(format!("{key}.sha256"), m))?;
                pins.tools.insert(name.clone(), pin);
            }
            let tool = parse_tool(raw, &key, base, env).map_err(|(k, m)| fail(k, m))?;
            tools.insert(name, tool);
        }
        let mut mcp = BTreeMap::new();
        for (name, raw) in raw.mcp {
            let server = parse_mcp(&name, raw, base, env).map_err(|(k, m)| fail(k, m))?;
            mcp.insert(name, server);
        }
        let runtime = RuntimeSettings::parse(raw.runtime).map_err(|(k, m)| fail(k, m))?;
        let audit = AuditSettings::parse(raw.audit, base).map_err(|(k, m)| fail(k, m))?;
        let tracing = TracingSettings::parse(raw.tracing).map_err(|(k, m)| fail(k, m))?;
        let cache = CacheSettings::parse(raw.cache).map_err(|(k, m)| fail(k, m))?;
        let approve =
            ApproveSettings::parse(raw.approve, base, env).map_err(|(k, m)| fail(k, m))?;
        let supply = SupplySettings::parse(raw.supply).map_err(|(k, m)| fail(k, m))?;
        let trust = TrustPolicy::parse(raw.trust, base).map_err(|(k, m)| fail(k, m))?;
        let code = CodeSettings::parse(raw.code).map_err(|(k, m)| fail(k, m))?;
        Ok(Self {
            file: Some(file.to_path_buf()),
            tools,
            mcp,
            runtime,
            audit,
            tracing,
            pins,
            cache,
            approve,
            supply,
            trust,
            code,
        })
    }
}

/// On error: the key at fault (`tools.a.memory`) and the mistake.
type KeyError = (String, ConfigProblem);

/// `problem` at `key`.
fn fail(key: String, problem: impl Into<ConfigProblem>) -> KeyError {
    (key, problem.into())
}

fn parse_tool(
    raw: RawTool,
    key: &str,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ToolConfig, KeyError> {
    let at = |sub: &str| format!("{key}.{sub}");
    let mut mounts: Vec<Mount> = Vec::new();
    for (i, m) in raw.mounts.into_iter().enumerate() {
        let mount =
            parse_mount(m, base).map_err(|(sub, e)| (format!("{key}.mounts[{i}].{sub}"), e))?;
        if mounts.iter().any(|other| other.guest == mount.guest) {
            return Err(fail(
                format!("{key}.mounts[{i}].guest"),
                ConfigProblem::MountedTwice(mount.guest),
            ));
        }
        mounts.push(mount);
    }
    let mut network = Vec::new();
    for (i, entry) in raw.network.into_iter().enumerate() {
        let grant = parse_net_entry(entry, env)
            .map_err(|(sub, e)| fail(format!("{key}.network[{i}]{sub}"), e))?;
        network.push(grant);
    }
    for name in raw.env.keys() {
        piton_wit::check_env_name(name).map_err(|e| fail(at("env"), e))?;
    }
    let mut limits = Limits::default();
    let size = |value: Option<String>, sub: &str, slot: &mut u64| -> Result<(), KeyError> {
        if let Some(v) = value {
            *slot = parse_size(&v).map_err(|e| fail(at(sub), e))?;
        }
        Ok(())
    };
    size(raw.memory, "memory", &mut limits.memory)?;
    size(raw.max_output, "max_output", &mut limits.max_output)?;
    size(raw.max_log, "max_log", &mut limits.max_log)?;
    size(raw.max_write, "max_write", &mut limits.max_write)?;
    if let Some(t) = raw.timeout {
        limits.timeout = parse_duration(&t).map_err(|e| fail(at("timeout"), e))?;
    }
    if let Some(name) = &raw.name {
        check_tool_name(name).map_err(|e| fail(at("name"), e))?;
    }
    if let Some(file) = &raw.from {
        crate::name_claims::check_from(file).map_err(|e| fail(at("from"), e))?;
    }
    let approve = raw
        .approve
        .map(|mode| self::approve::AskMode::parse(&mode).map_err(|e| (at("approve"), e.into())))
        .transpose()?;
    Ok(ToolConfig {
        grants: Grants {
            mounts,
            network,
            env: raw.env.into_iter().collect(),
        },
        limits,
        on_trap: raw.on_trap.unwrap_or_default(),
        name: raw.name,
        description: raw.description,
        parallel: raw.parallel,
        hints: HintOverrides {
            read_only: raw.read_only,
            destructive: raw.destructive,
            idempotent: raw.idempotent,
            open_world: raw.open_world,
        },
        from: raw.from,
        approve,
    })
}

fn parse_mount(raw: RawMount, base: &Path) -> Result<Mount, KeyError> {
    let host =
        crate::nolinks::mount_host(&base.join(&raw.host)).map_err(|e| fail("host".into(), e))?;
    let guest = Path::new(&raw.guest);
    let clean = guest.is_absolute()
        && guest
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !clean {
        return Err(fail("guest".into(), ConfigProblem::GuestPath(raw.guest)));
    }
    Ok(Mount {
        host,
        guest: raw.guest,
        mode: raw.mode,
    })
}

#[cfg(test)]
mod tests;
