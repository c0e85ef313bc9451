//! Write piton tools in Rust: `#[tool]` turns a function into a WASI 0.2
//! component exporting `piton:tool/tool`.
//!
//! ```
//! use piton_guest_sdk::tool;
//!
//! /// Count the words in a text.
//! ///
//! /// Args:
//! ///     text: The text to count
//! #[tool(read_only, open_world = false)]
//! fn word_count(text: String) -> usize {
//!     text.split_whitespace().count()
//! }
//! # fn main() {
//! # use piton_guest_sdk::{Content, Tool};
//! # assert_eq!(word_count("a b".into()), 2);
//! # assert_eq!(WordCountTool::run(r#"{"text": "a b c"}"#), Ok(vec![Content::Json("3".into())]));
//! # }
//! ```
//!
//! The plugin crate is a `cdylib` that depends on this crate alone, built with
//! `cargo build --release --target wasm32-wasip2`:
//!
//! ```toml
//! [lib]
//! crate-type = ["cdylib"]
//!
//! [dependencies]
//! piton-guest-sdk = { path = "..." }
//! ```
//!
//! The dependency must keep the name `piton_guest_sdk` (no `package =` rename):
//! the code `#[tool]` generates names it.
//!
//! # Parameters
//!
//! Each parameter becomes a property of the input schema (see [`tool`]). Types
//! of your own derive `Deserialize` and `JsonSchema`; this crate re-exports
//! [`serde`] and [`schemars`] so that no other dependency is needed:
//!
//! ```
//! use piton_guest_sdk::{schemars, serde};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(crate = "piton_guest_sdk::serde")]
//! #[schemars(crate = "piton_guest_sdk::schemars")]
//! struct Range {
//!     start: u64,
//!     end: u64,
//! }
//! ```
//!
//! Depending on `serde` 1 (feature `derive`) and `schemars` 1 directly works as
//! well, without the `crate` attributes.
//!
//! # Results
//!
//! The return value is sent to the model:
//!
//! | returned | the model gets |
//! | --- | --- |
//! | `String`, `&str`, `Cow<str>` | one text content |
//! | `()` | nothing: the host shows `(done)` |
//! | [`Image`], `Vec<Image>` | image contents |
//! | [`Content`], `Vec<Content>` | those contents |
//! | anything else that is `serde::Serialize` | one JSON content |
//! | `Result<T, ToolError>` | `T` as above, or the error |
//!
//! A value that cannot become JSON (a map whose keys are not strings) panics.
//!
//! # Failures
//!
//! Return `Err(`[`ToolError`]`)` for a failure the model should see and handle.
//! A panic is a bug: the component traps, the host stops the run, and the
//! panic message goes to the component's stderr (std's default panic hook).
//!
//! Tools are synchronous functions; `async fn` is not supported.
//!
//! # Several tools in one component
//!
//! Mark each function `#[tool(export = false)]` and list their tools in one
//! [`toolbox!`]: the component then exports the `piton:tool/toolbox` interface,
//! and piton loads each tool as its own entry (own piton.toml section and grants).
//!
//! ```ignore
//! #[tool(read_only, open_world = false, export = false)]
//! fn count(text: String) -> usize { text.len() }
//!
//! #[tool(read_only, open_world = false, export = false)]
//! fn shout(text: String) -> String { text.to_uppercase() }
//!
//! piton_guest_sdk::toolbox!(CountTool, ShoutTool);
//! ```

mod content;
mod error;
mod tool;
mod toolbox;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// The `piton:tool` bindings that `wit-bindgen` generates; the exports live here.
#[doc(hidden)]
pub mod bindings {
    #![allow(missing_docs, clippy::all)]
    wit_bindgen::generate!({
        world: "plugin",
        path: "../wit",
        // The export macro runs in the plugin crate, not here.
        pub_export_macro: true,
    });
}

/// The `piton:tool` `toolbox-plugin` bindings (several tools in one component),
/// sharing the `types` of [`bindings`].
#[doc(hidden)]
pub mod toolbox_bindings {
    #![allow(missing_docs, clippy::all)]
    wit_bindgen::generate!({
        world: "toolbox-plugin",
        path: "../wit",
        pub_export_macro: true,
        with: { "piton:tool/types@0.1.2": crate::bindings::piton::tool::types },
    });
}

pub use content::{Content, Image};
pub use error::ToolError;
pub use piton_guest_sdk_macros::tool;
pub use piton_wit::Hints;
pub use tool::{Tool, ToolSpec};
pub use toolbox::{Toolbox, ToolboxEntry};

pub use schemars;
pub use serde;
pub use serde_json;
