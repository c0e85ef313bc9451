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
//! let loaded = plugins::load(&runtime, &PluginsAt::Folder("plugins".into())).await?;
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

mod bundled;
pub mod cli;
mod error;
mod fs;
pub mod grants;
mod hints;
mod limits;
mod net;
pub mod plugins;
mod registry;
mod schema;
mod tool;
pub mod wasm;

pub use error::{CallError, LoadError, LoadErrorKind, Trap};
pub use hints::{Hints, HintsError};
pub use limits::{Limits, format_size};
pub use registry::Registry;
pub use tool::{
    Args, Content, DONE, DynTool, HintsTrust, Tool, ToolError, ToolResult, ToolSource, ToolSpec,
    check_tool_name,
};
