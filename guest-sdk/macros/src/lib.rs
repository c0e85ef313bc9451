//! The `#[tool]` attribute of `piton-guest-sdk`; use it through that crate.

mod args;
mod docs;
mod expand;
mod signature;

use proc_macro::TokenStream;

/// Turns a function into the tool a piton component exports.
///
/// ```ignore
/// use piton_guest_sdk::tool;
///
/// /// Count the words in a text.
/// ///
/// /// Args:
/// ///     text: The text to count
/// #[tool(read_only, open_world = false)]
/// fn word_count(text: String) -> usize {
///     text.split_whitespace().count()
/// }
/// ```
///
/// A crate (one component) exports one `#[tool]`; a second one is a compile
/// error naming `only_one_piton_tool_per_crate`. For several tools in one
/// component, mark each `#[tool(export = false)]` and list their `XTool` structs
/// in one `piton_guest_sdk::toolbox!(ATool, BTool)`. The function is synchronous
/// (no `async`), not generic, and free (no `self`). It stays a plain Rust
/// function that native tests can call.
///
/// # What it generates
///
/// Besides the function, a unit struct named after it in `UpperCamelCase`
/// with a `Tool` suffix (`word_count` gives `WordCountTool`), with the
/// function's visibility, implementing `piton_guest_sdk::Tool`; and the
/// component export of that struct (`piton_guest_sdk::export!`). Native tests
/// can call `WordCountTool::run(r#"{"text": "a b"}"#)` to see what the host gets.
///
/// # Parameters
///
/// Each parameter is a plain name with an owned type that implements
/// `serde::Deserialize` and `schemars::JsonSchema`, and becomes a property of
/// the input schema, an object schema. `Option<T>` parameters are optional (not
/// in `required`). `#[serde(...)]` and `#[schemars(...)]` attributes on a
/// parameter apply to its property, as in `#[serde(default)] limit: u32`.
///
/// # Description
///
/// The first paragraph of the doc comment, its lines joined with spaces, unless
/// `description = "..."` is given; a tool without either is a compile error.
/// The doc comment describes parameters in an `Args:` section (each line
/// `name: description`, continued on more indented lines) or a rustdoc
/// `# Arguments` list (``* `name` - description``); describing a name that is
/// not a parameter is a compile error.
///
/// # Options
///
/// | option | meaning | default |
/// | --- | --- | --- |
/// | `name = "..."` | the name the model calls, `[A-Za-z0-9_-]{1,64}` | the function's name |
/// | `description = "..."` | what the model reads | the doc comment's first paragraph |
/// | `parallel = false` | the host runs the tool alone, after a batch's other calls | `true` |
/// | `read_only` | the tool does not change its environment; sets `destructive = false` and `idempotent = true` | `false` |
/// | `destructive` | it may delete or overwrite something | `true` unless read-only |
/// | `idempotent` | calling it again with the same arguments has no further effect | `false` unless read-only |
/// | `open_world` | it reaches outside its own domain (web, shell, other systems) | `true` |
/// | `hints_for = path` | a `fn(&serde_json::Value) -> Option<Hints>` telling the hints of one call | none |
/// | `export = false` | not exported alone: listed in the crate's `toolbox!` with other tools | true |
///
/// A hint is written bare (`read_only`, meaning true) or `= true`/`= false`. A
/// hint left out assumes the worst; `read_only` with `destructive = true` or
/// `idempotent = false` is a compile error. `hints_for` gets the call's
/// arguments parsed from JSON but not checked against the schema (it is not
/// called for arguments that are not JSON); it returns `None` when unsure.
///
/// # Return value
///
/// `String`/`&str` becomes text, `()` nothing, `Image` an image, `Content` and
/// `Vec<Content>` are sent as they are, and any other `serde::Serialize` value
/// becomes JSON. A return type spelled `Result<T, ToolError>` (recognized by
/// its last segment `Result` with two type arguments) sends `T` as above, or the
/// error; other error types are a compile error. Arguments that do not fit
/// the parameters give the model an input error naming the field.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse::<syn::ItemFn>(item.clone());
    let expanded =
        args::Options::parse(attr.into()).and_then(|options| expand::expand(options, function?));
    expanded
        .unwrap_or_else(|error| error_with_item(error, item.into()))
        .into()
}

/// On error the function is kept, so that its callers do not report errors of their own.
fn error_with_item(error: syn::Error, item: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let mut tokens = error.to_compile_error();
    tokens.extend(item);
    tokens
}
