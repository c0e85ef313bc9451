//! The rules of the `piton:tool` contract (`tool.wit`, beside this crate), in one
//! place for the three sides that apply them: the host (`piton-host`), the guest SDK
//! (`piton-guest-sdk`) and its `#[tool]` macro. It owns what the WIT types cannot say
//! themselves: [`Hints`], valid by construction, and the one rule that narrows them;
//! the tool-name rule and the sizes a spec may carry; and the checks of environment
//! variable names, HTTP headers and call arguments that more than one place makes.
//! It builds for `wasm32-wasip2` and for the host, with no required dependencies.

mod hints;
#[cfg(feature = "json")]
mod json;
mod names;

pub use hints::{Hint, Hints, HintsError, NarrowError};
#[cfg(feature = "json")]
pub use json::{json_kind, not_an_object};
pub use names::{
    EnvNameError, MAX_TOOL_NAME, ToolNameError, check_env_name, check_tool_name, is_header_name,
    is_header_value,
};

/// The most bytes a tool's description may have: 64 KiB. The host refuses a longer
/// one at load (a wasm plugin is not loaded; an upstream server's tool is left out).
pub const MAX_DESCRIPTION: usize = 64 * 1024;

/// The most bytes a tool's input schema may have as JSON text: 256 KiB.
pub const MAX_INPUT_SCHEMA: usize = 256 * 1024;
