//! WebAssembly tools: the engine, loading with a compile cache, and a fresh
//! sandboxed instance for every call.

mod awaited;
mod bindings;
pub mod cache;
mod cache_private;
pub mod check;
mod code;
mod diagnose;
mod engine;
pub(crate) mod fds;
pub(crate) mod fs;
mod instance;
mod load;
pub(crate) mod net;
mod optimise;
mod output;
mod queue;
mod read;
mod ready;
mod runtime;
pub(crate) mod sandbox;
mod section;
mod specs;
mod tool;
pub(crate) mod trap;

pub use load::LoadFrom;
pub(crate) use load::{FileCheck, Sections};
pub use optimise::OptimisingHeld;
pub use ready::MadeAhead;
pub use runtime::{Compiles, RuntimeConfig, RuntimeError, WasmRuntime};
pub use tool::WasmTool;
