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
//! `[tracing]`, spans of calls sent over OTLP ([`TracingSettings`]), and `[cache]`
//! bounding the compile cache ([`CacheSettings`]).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

pub mod audit;
pub mod cache;
mod hint_overrides;
pub mod mcp;
pub mod pins;
pub mod runtime;
pub mod tracing;
pub(crate) mod values;

use self::audit::{AuditSettings, RawAudit};
pub use self::cache::CacheSettings;
use self::cache::RawCache;
pub use self::hint_overrides::HintOverrides;
use self::mcp::{RawMcp, parse_mcp};
pub use self::mcp::{UpstreamConfig, UpstreamConnect};
use self::pins::{Pins, RawPlugin, Sha256};
use self::runtime::RawRuntime;
pub use self::runtime::RuntimeSettings;
use self::tracing::{RawTracing, TracingSettings};
use self::values::{parse_duration, parse_net_entry, parse_size};
use crate::grants::{Grants, Mount, MountMode};
use crate::limits::Limits;
pub use crate::limits::OnTrap;
use crate::tool::check_tool_name;

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
}

/// A piton.toml that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {key}: {message}", .file.display())]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The key, such as `tools.read_file.mounts[0].host`; empty for the whole file.
    pub key: String,
    /// What is wrong and how to fix it.
    pub message: String,
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
            message: format!("cannot read it: {e}"),
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
        let fail = |key: String, message: String| ConfigError {
            file: file.to_path_buf(),
            key,
            message,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            fail(
                String::new(),
                e.to_string().trim_end().replace('\n', "\n    "),
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
        Ok(Self {
            file: Some(file.to_path_buf()),
            tools,
            mcp,
            runtime,
            audit,
            tracing,
            pins,
            cache,
        })
    }
}

type KeyError = (String, String);

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
            parse_mount(m, base).map_err(|(sub, msg)| (format!("{key}.mounts[{i}].{sub}"), msg))?;
        if mounts.iter().any(|other| other.guest == mount.guest) {
            return Err((
                format!("{key}.mounts[{i}].guest"),
                format!(
                    "{} is mounted twice; give each mount its own guest path",
                    mount.guest
                ),
            ));
        }
        mounts.push(mount);
    }
    let mut network = Vec::new();
    for (i, entry) in raw.network.into_iter().enumerate() {
        let grant = parse_net_entry(entry, env)
            .map_err(|(sub, msg)| (format!("{key}.network[{i}]{sub}"), msg))?;
        network.push(grant);
    }
    for name in raw.env.keys() {
        piton_wit::check_env_name(name).map_err(|e| (at("env"), e.to_string()))?;
    }
    let mut limits = Limits::default();
    let size = |value: Option<String>, sub: &str, slot: &mut u64| -> Result<(), KeyError> {
        if let Some(v) = value {
            *slot = parse_size(&v).map_err(|m| (at(sub), m))?;
        }
        Ok(())
    };
    size(raw.memory, "memory", &mut limits.memory)?;
    size(raw.max_output, "max_output", &mut limits.max_output)?;
    size(raw.max_log, "max_log", &mut limits.max_log)?;
    size(raw.max_write, "max_write", &mut limits.max_write)?;
    if let Some(t) = raw.timeout {
        limits.timeout = parse_duration(&t).map_err(|m| (at("timeout"), m))?;
    }
    if let Some(name) = &raw.name {
        check_tool_name(name).map_err(|m| (at("name"), m))?;
    }
    if let Some(file) = &raw.from {
        crate::name_claims::check_from(file).map_err(|m| (at("from"), m))?;
    }
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
    })
}

fn parse_mount(raw: RawMount, base: &Path) -> Result<Mount, KeyError> {
    let host =
        crate::nolinks::mount_host(&base.join(&raw.host)).map_err(|m| ("host".to_owned(), m))?;
    let guest = Path::new(&raw.guest);
    let clean = guest.is_absolute()
        && guest
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !clean {
        return Err((
            "guest".to_owned(),
            format!(
                "{:?} must be an absolute path without `.` or `..`, such as \"/data\"",
                raw.guest
            ),
        ));
    }
    Ok(Mount {
        host,
        guest: raw.guest,
        mode: raw.mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        let dir = std::env::temp_dir();
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        Config::parse(text, &dir.join("piton.toml"), &env)
    }

    #[test]
    fn an_empty_file_grants_nothing() {
        assert_eq!(parse("").unwrap().tools.len(), 0);
        let tool = &parse("[tools.a]").unwrap().tools["a"];
        assert_eq!(tool, &ToolConfig::default());
    }

    #[test]
    fn a_full_tool_section_parses_into_types() {
        let config = parse(
            r#"
            [tools.fetch_url]
            mounts = [{ host = ".", guest = "/tmp", mode = "write" }]
            network = ["api.example.com:443", { host = "127.0.0.1:8080", headers = { Authorization = "Bearer ${TOKEN}" } }, { host = "db.example.com:5432", tcp = true }]
            env = { LANG = "C" }
            memory = "32MiB"
            timeout = "5s"
            max_output = "1MiB"
            max_log = "4KiB"
            max_write = "2MiB"
            on_trap = "error"
            name = "fetch"
            description = "Fetch a page"
            parallel = false
            open_world = true
            destructive = false
            "#,
        )
        .unwrap();
        let tool = &config.tools["fetch_url"];
        assert_eq!(tool.grants.mounts[0].guest, "/tmp");
        assert_eq!(tool.grants.mounts[0].mode, MountMode::Write);
        assert!(tool.grants.mounts[0].host.is_absolute());
        assert_eq!(tool.grants.network[0].to_string(), "api.example.com:443");
        assert_eq!(
            tool.grants.network[1].headers[0].1.expose(),
            "Bearer s3cret"
        );
        assert!(!tool.grants.network[1].tcp);
        assert!(tool.grants.network[2].tcp);
        assert_eq!(
            tool.grants.network[2].to_string(),
            "db.example.com:5432 +tcp"
        );
        assert_eq!(tool.grants.env, [("LANG".to_owned(), "C".to_owned())]);
        assert_eq!(tool.limits.memory, 32 << 20);
        assert_eq!(tool.limits.timeout, std::time::Duration::from_secs(5));
        assert_eq!(tool.limits.max_output, 1 << 20);
        assert_eq!(tool.limits.max_log, 4 << 10);
        assert_eq!(tool.limits.max_write, 2 << 20);
        assert_eq!(tool.on_trap, OnTrap::Error);
        assert_eq!(tool.name.as_deref(), Some("fetch"));
        assert_eq!(tool.parallel, Some(false));
        assert_eq!(tool.hints.destructive, Some(false));
    }

    #[test]
    fn errors_name_the_key_and_the_fix() {
        let cases = [
            ("[tools.a]\nmount = []", "", "unknown field `mount`"),
            ("[tool.a]", "", "unknown field `tool`"),
            (
                "[tools.a]\nmounts = [{ host = \"/no/such/dir\", guest = \"/d\", mode = \"read\" }]",
                "tools.a.mounts[0].host",
                "create the folder",
            ),
            (
                "[tools.a]\nmounts = [{ host = \".\", guest = \"d\", mode = \"read\" }]",
                "tools.a.mounts[0].guest",
                "absolute path",
            ),
            (
                "[tools.a]\nmounts = [{ host = \".\", guest = \"/d/../e\", mode = \"read\" }]",
                "tools.a.mounts[0].guest",
                "without `.` or `..`",
            ),
            (
                "[tools.a]\nmounts = [{ host = \".\", guest = \"/d\", mode = \"rw\" }]",
                "",
                "use \"read\" or \"write\"",
            ),
            (
                "[tools.a]\nmounts = [{ host = \".\", guest = \"/d\", mode = \"read\" }, { host = \".\", guest = \"/d\", mode = \"read\" }]",
                "tools.a.mounts[1].guest",
                "mounted twice",
            ),
            (
                "[tools.a]\nnetwork = [\"example.com\"]",
                "tools.a.network[0]",
                "has no port",
            ),
            (
                "[tools.a]\nnetwork = [{ host = \"a.com:1\", headers = { X = \"${NOPE}\" } }]",
                "tools.a.network[0].headers.X",
                "NOPE is not set",
            ),
            (
                "[tools.a]\nnetwork = [{ host = \"a.com:1\", tpc = true }]",
                "tools.a.network[0].tpc",
                "unknown key \"tpc\"",
            ),
            (
                "[tools.a]\nnetwork = [{ host = \"a.com:1\", tcp = \"yes\" }]",
                "tools.a.network[0].tcp",
                "tcp = true",
            ),
            (
                "[tools.a]\nnetwork = [{ tcp = true }]",
                "tools.a.network[0].host",
                "host = ",
            ),
            (
                "[tools.a]\nnetwork = [{ host = \"a.com:1\", headers = { X = 1 } }]",
                "tools.a.network[0].headers.X",
                "a string",
            ),
            (
                "[tools.a]\nnetwork = [5]",
                "tools.a.network[0]",
                "\"host:port\"",
            ),
            (
                "[tools.a]\nmemory = \"lots\"",
                "tools.a.memory",
                "such as \"64MiB\"",
            ),
            (
                "[tools.a]\ntimeout = \"5\"",
                "tools.a.timeout",
                "such as \"5s\"",
            ),
            (
                "[tools.a]\non_trap = \"ignore\"",
                "",
                "unknown variant `ignore`",
            ),
            (
                "[tools.a]\nname = \"two words\"",
                "tools.a.name",
                "is not allowed",
            ),
            (
                "[tools.a]\nenv = { \"A=B\" = \"x\" }",
                "tools.a.env",
                "not a variable name",
            ),
            ("[tools.a", "", "piton.toml"),
            (
                "[tools.a]\nsha256 = \"ab\"",
                "tools.a.sha256",
                "not the 64 hexadecimal",
            ),
            ("[plugins.\"a.wasm\"]\nsha256 = 1", "", "invalid type"),
            (
                "[plugins.\"a.wasm\"]",
                "plugins.\"a.wasm\".sha256",
                "is missing",
            ),
            (
                "[plugins.\"a\"]\nsha256 = \"\"",
                "plugins.\"a\"",
                "ending in .wasm",
            ),
            (
                "[cache]\nmax_size = \"lots\"",
                "cache.max_size",
                "such as \"64MiB\"",
            ),
        ];
        for (text, key, message) in cases {
            let error = parse(text).unwrap_err();
            assert_eq!(error.key, key, "{text}: {error}");
            let shown = error.to_string();
            assert!(shown.contains(message), "{text}: {shown}");
            assert!(shown.contains("piton.toml"), "{shown}");
        }
    }

    #[test]
    fn pins_of_files_and_tools_parse_and_a_pin_alone_configures_nothing() {
        let digest = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";
        let config = parse(&format!(
            "[plugins.\"a.wasm\"]\nsha256 = \"{digest}\"\n[tools.b]\nsha256 = \"{digest}\"\n"
        ))
        .unwrap();
        assert_eq!(
            config.pins.files["a.wasm"].to_string(),
            digest.to_lowercase()
        );
        assert_eq!(config.pins.tools["b"].to_string(), digest.to_lowercase());
        assert_eq!(config.tools["b"], ToolConfig::default());
        assert_eq!(config.cache, CacheSettings::default());
    }
}
