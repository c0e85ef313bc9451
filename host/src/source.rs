//! Where a tool comes from: a component file, a bundled example, the embedding
//! program, or an upstream MCP server. Listings and every error name it.

use std::fmt;
use std::path::PathBuf;

/// Where a tool comes from, for listings and error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolSource {
    /// A component file in a plugins folder.
    File(PathBuf),
    /// An example plugin built into the piton binary.
    Bundled(String),
    /// A tool written in Rust and added through the library.
    Native,
    /// A tool of the upstream MCP server with this name.
    Mcp(String),
}

impl fmt::Display for ToolSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Bundled(name) => write!(f, "bundled:{name}"),
            Self::Native => f.write_str("native"),
            Self::Mcp(server) => write!(f, "mcp:{server}"),
        }
    }
}
