//! piton runs agent tools as sandboxed WebAssembly components.
//!
//! A tool is a WASI 0.2 component exporting the `piton:tool` interface (see `wit/`).
//! piton loads it, reads its spec and hints, and runs every call in a fresh instance
//! that grants nothing: no files, no network, no environment, under a memory limit
//! and a deadline. Native Rust tools share the same [`Registry`] and call path.
//!
//! A Rust program loads tools as the CLI does, through the [`loader`]:
//!
//! ```no_run
//! use piton_host::loader::Loader;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // --plugins and --config as the CLI takes them: None looks them up.
//! let loader = Loader::from_flags(Some("plugins".into()), None)?;
//! let loaded = loader.load().await?;
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
//! loader.close().await;
//! # Ok(()) }
//! ```

pub mod allocator;
mod approve;
pub mod build;
mod bundled;
pub mod call;
pub mod cli;
pub mod code;
pub mod config;
pub mod consent;
mod error;
pub mod grants;
mod group;
mod limits;
mod load_pins;
pub mod loader;
pub mod name_claims;
mod nolinks;
pub mod observe;
pub mod plugins;
pub mod protected;
mod registry;
mod schema;
mod schema_cost;
#[cfg(test)]
mod schema_cost_tests;
pub mod serve;
mod source;
pub mod supply;
mod term;
mod tls;
mod tool;
pub mod upstream;
pub mod wasm;
mod whole_file;

pub use approve::{AllowByReadOnly, ApprovalRequest, Approver, Decision};
pub use call::CallContext;
pub use config::audit::{AuditSettings, AuditTo};
pub use config::tracing::{OtlpEndpoint, TracingSettings};
pub use error::{Bound, CallError, LoadError, LoadErrorKind, LockedFile, Trap};
pub use group::{
    CheckedTool, DynGroup, GroupNameError, GroupTools, SpecError, ToolGroup, check_group_name,
};
pub use limits::{Limits, OnTrap, format_size};
pub use piton_wit::{Hints, HintsError};
pub use registry::{Listing, Registry};
pub use schema::SchemaError;
pub use schema_cost::CostError;
pub use source::ToolSource;
pub use tool::{
    Args, Caller, ComponentInfo, Content, DONE, DynTool, HintsTrust, MAX_DESCRIPTION,
    MAX_INPUT_SCHEMA, Nested, SandboxReport, SpecSizeError, Tool, ToolError, ToolNameError,
    ToolResult, ToolSpec, check_spec_size, check_tool_name,
};
