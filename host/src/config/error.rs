//! What is wrong with a piton.toml: the file, the key at fault and the mistake, each
//! mistake a variant whose message says how to fix it.

use std::path::PathBuf;

use crate::config::approve::ApproveError;
use crate::config::audit::AuditError;
use crate::config::code::CodeError;
use crate::config::mcp::McpError;
use crate::config::pins::PinError;
use crate::config::runtime::RuntimeError;
use crate::config::tracing::TracingError;
use crate::config::trust::TrustError;
use crate::config::values::ValueError;
use crate::name_claims::NotAPluginFile;
use crate::nolinks::MountError;

/// A piton.toml that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}{problem}", .file.display(), Key(.key))]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The key, such as `tools.read_file.mounts[0].host`; empty for the whole file.
    pub key: String,
    /// What is wrong and how to fix it.
    #[source]
    pub problem: ConfigProblem,
}

/// A key as the message shows it: `KEY: `, or nothing for the whole file.
struct Key<'a>(&'a str);

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "{}: ", self.0)
        }
    }
}

/// The mistake in a [`ConfigError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigProblem {
    /// The file cannot be read.
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
    /// Not TOML, or a table or key piton.toml does not have, or a value of the wrong
    /// type: the TOML parser's message, its lines indented.
    #[error("{0}")]
    Toml(String),
    /// A size, duration, `${VAR}` template, network grant or command line.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A `name` that is not a tool name.
    #[error(transparent)]
    ToolName(#[from] piton_wit::ToolNameError),
    /// An `env` variable name that cannot be one.
    #[error(transparent)]
    EnvName(#[from] piton_wit::EnvNameError),
    /// A `from` that is not a plugins folder file name.
    #[error(transparent)]
    FromFile(#[from] NotAPluginFile),
    /// A mount's `host` folder that cannot be used.
    #[error(transparent)]
    MountHost(#[from] MountError),
    /// A mount's `guest` path that is not absolute and clean: what was written.
    #[error("{0:?} must be an absolute path without `.` or `..`, such as \"/data\"")]
    GuestPath(String),
    /// Two mounts of one tool at one guest path.
    #[error("{0} is mounted twice; give each mount its own guest path")]
    MountedTwice(String),
    /// A `sha256` pin or a `[plugins."FILE.wasm"]` section.
    #[error(transparent)]
    Pin(#[from] PinError),
    /// The `[runtime]` table.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The `[audit]` table.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// The `[approve]` table, or a tool's `approve`.
    #[error(transparent)]
    Approve(#[from] ApproveError),
    /// The `[tracing]` table.
    #[error(transparent)]
    Tracing(#[from] TracingError),
    /// The `[trust]` table.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// An `[mcp.NAME]` section.
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// The `[code]` table.
    #[error(transparent)]
    Code(#[from] CodeError),
}
