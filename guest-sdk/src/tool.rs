//! The tool a component exports, and how it becomes the `piton:tool/tool` export.

use crate::bindings::exports::piton::tool::tool::Guest;
use crate::bindings::piton::tool::types as wit;
use crate::{Content, Hints, ToolError};

/// The tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls: `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// What the model reads about the tool.
    pub description: String,
    /// The JSON Schema of the arguments: an object schema.
    pub input_schema: serde_json::Value,
    /// False: the host runs this tool alone, after a batch's other calls.
    pub parallel: bool,
}

/// A tool: what a piton component exports, in the SDK's own types.
///
/// `#[tool]` implements it for a unit struct named after the function
/// (`word_count` gives `WordCountTool`), which lets a native test call the tool
/// as the host does:
///
/// ```ignore
/// use piton_guest_sdk::Tool;
///
/// let out = WordCountTool::run(r#"{"text": "a b c"}"#).unwrap();
/// assert_eq!(out, vec![piton_guest_sdk::Content::Json("3".into())]);
/// ```
///
/// A tool whose schema is only known at run time can implement it by hand and
/// export it with [`export!`](crate::export).
pub trait Tool {
    /// The tool's name, description, input schema and parallel flag.
    fn spec() -> ToolSpec;

    /// The tool's own hints: the worst case for any call.
    fn hints() -> Hints;

    /// Whether [`Tool::hints_for`] can answer anything but `None`. A toolbox tells
    /// the host so, and the host then skips the instance it would start to ask.
    /// `#[tool]` sets it from its `hints_for` option; by hand, leave it `true`
    /// unless `hints_for` is the default.
    const HAS_HINTS_FOR: bool = true;

    /// The hints of one call, given its arguments as JSON text not yet checked
    /// against the input schema, or `None` when unsure (the default).
    fn hints_for(args: &str) -> Option<Hints> {
        let _ = args;
        None
    }

    /// Runs one call with its arguments as a JSON object text.
    ///
    /// An empty list means the call succeeded with nothing to say.
    fn run(args: &str) -> Result<Vec<Content>, ToolError>;
}

/// Exports a type implementing [`Tool`] as the component's `piton:tool/tool`
/// interface. `#[tool]` calls it for you.
///
/// A component exports one tool: a second `export!` in the same crate is a
/// compile error naming `only_one_piton_tool_per_crate`.
///
/// ```ignore
/// struct Echo;
///
/// impl piton_guest_sdk::Tool for Echo {
///     // ...
/// }
///
/// piton_guest_sdk::export!(Echo);
/// ```
#[macro_export]
macro_rules! export {
    ($tool:ident) => {
        $crate::bindings::export!($tool with_types_in $crate::bindings);

        // Two tools would export the same symbols; this duplicate name turns that
        // link error into a compile error that says what is wrong.
        #[doc(hidden)]
        #[macro_export]
        macro_rules! only_one_piton_tool_per_crate {
            () => {};
        }
    };
}

impl<T: Tool> Guest for T {
    fn spec() -> wit::ToolSpec {
        let spec = T::spec();
        wit::ToolSpec {
            name: spec.name,
            description: spec.description,
            input_schema: spec.input_schema.to_string(),
            parallel: spec.parallel,
        }
    }

    fn hints() -> wit::ToolHints {
        T::hints().into()
    }

    fn hints_for(args: String) -> Option<wit::ToolHints> {
        T::hints_for(&args).map(Into::into)
    }

    fn run(args: String) -> Result<Vec<wit::Content>, wit::ToolError> {
        match T::run(&args) {
            Ok(contents) => Ok(contents.into_iter().map(Into::into).collect()),
            Err(ToolError::Input(message)) => Err(wit::ToolError::Input(message)),
            Err(ToolError::Failed(message)) => Err(wit::ToolError::Failed(message)),
        }
    }
}

impl From<Hints> for wit::ToolHints {
    fn from(hints: Hints) -> Self {
        Self {
            read_only: hints.is_read_only(),
            destructive: hints.is_destructive(),
            idempotent: hints.is_idempotent(),
            open_world: hints.is_open_world(),
        }
    }
}

impl From<Content> for wit::Content {
    fn from(content: Content) -> Self {
        match content {
            Content::Text(text) => Self::Text(text),
            Content::Json(json) => Self::Json(json),
            Content::Image(image) => Self::Image(wit::Image {
                mime_type: image.mime_type,
                data: image.data,
            }),
        }
    }
}
