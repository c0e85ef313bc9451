//! piton runs agent tools as sandboxed WebAssembly components.
//!
//! A tool is a WASI 0.2 component exporting the `piton:tool` interface (see `wit/`).
//! piton loads it, reads its spec and hints, and runs every call in a fresh instance
//! that grants nothing: no files, no network, no environment, under a memory limit
//! and a deadline. Native Rust tools share the same [`Registry`] and call path.
//!
//! ```no_run
//! use piton_host::plugins::{self, PluginsAt};
//! use piton_host::wasm::{RuntimeConfig, WasmRuntime};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = WasmRuntime::new(RuntimeConfig::default())?;
//! let config = piton_host::config::Config::load("plugins/piton.toml".as_ref())?;
//! let loaded = plugins::load(&runtime, &PluginsAt::Folder("plugins".into()), &config).await?;
//! for error in &loaded.errors {
//!     eprintln!("not loaded: {error}");
//! }
//! let result = loaded
//!     .registry
//!     .call("word_count", serde_json::json!({"text": "a b c"}))
//!     .await?; // Err: the call stops the run (a trap)
//! match result {
//!     Ok(content) => println!("{}", content[0].to_model_text()), // "3"
//!     Err(error) => println!("{error}"), // an error result the model sees
//! }
//! # Ok(()) }
//! ```

mod approve;
mod bundled;
pub mod cli;
pub mod config;
mod error;
pub mod grants;
mod limits;
mod parse;
pub mod plugins;
pub mod protected;
mod registry;
mod schema;
pub mod serve;
mod term;
mod tool;
pub mod upstream;
pub mod wasm;

pub use approve::{AllowByReadOnly, ApprovalRequest, Approver, Decision};
pub use error::{CallError, LoadError, LoadErrorKind, Trap};
pub use limits::{Limits, format_size};
pub use piton_wit::{Hints, HintsError};
pub use registry::{Listing, Registry};
pub use tool::{
    Args, Content, DONE, DynTool, HintsTrust, MAX_DESCRIPTION, MAX_INPUT_SCHEMA, Tool, ToolError,
    ToolResult, ToolSource, ToolSpec, check_spec_size, check_tool_name,
};

/// A path from the environment variable `name`; unset or empty is `None`.
fn env_path(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}
