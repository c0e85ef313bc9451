//! Support for the code that `#[tool]` generates; not a public API.

use std::borrow::Cow;
use std::cell::Cell;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Content, Hints, Image, ToolError};

pub use schemars;
pub use serde;
pub use serde_json;

/// The input schema of a tool whose arguments are the fields of `T`.
///
/// The generated struct's `title` is dropped: its name means nothing to the
/// model. `$schema` is dropped too: the host and the model take JSON Schema
/// 2020-12 (which the `$defs` and `$ref`s follow) without being told.
pub fn input_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.meta_schema = None)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        // Spelled out for zero-parameter tools too: some model APIs want it.
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    schema
}

/// Parses a call's arguments, naming the field at fault when they are wrong.
pub fn parse_args<T: DeserializeOwned>(args: &str) -> Result<T, ToolError> {
    let value: Value = serde_json::from_str(args)
        .map_err(|error| ToolError::input(format!("the arguments are not JSON: {error}")))?;
    if !value.is_object() {
        // Serde would take an array for a struct, field by field in order; the
        // schema says object, so anything else is a mistake worth reporting.
        return Err(ToolError::input(piton_wit::not_an_object(&value)));
    }
    // Going through `Value` keeps serde_json's "at line 1 column 9" out of the
    // message: the model wrote no lines.
    serde_path_to_error::deserialize(value).map_err(ToolError::input)
}

/// Calls the tool's `hints_for` function on parsed arguments, or says `None`
/// for arguments that are not JSON.
pub fn hints_for(args: &str, hints_for: fn(&Value) -> Option<Hints>) -> Option<Hints> {
    serde_json::from_str(args).ok().as_ref().and_then(hints_for)
}

/// A tool's return value on its way to becoming contents.
///
/// The two conversions are picked by autoref specialization on
/// `(&&Wrap::new(value)).__piton_contents(..)`: [`ViaDirect`] is implemented on
/// `&Wrap<T>` and so found first, [`ViaJson`] on `Wrap<T>` after one auto-deref.
/// Both take `&self`, hence the `Cell` to move the value out.
pub struct Wrap<T>(Cell<Option<T>>);

impl<T> Wrap<T> {
    /// Wraps a return value.
    pub fn new(value: T) -> Self {
        Self(Cell::new(Some(value)))
    }

    fn take(&self) -> T {
        match self.0.take() {
            Some(value) => value,
            None => unreachable!("a return value is converted once"),
        }
    }
}

/// Return types that are contents without going through JSON.
pub trait DirectContent {
    /// The contents this value is.
    fn into_contents(self) -> Vec<Content>;
}

impl DirectContent for () {
    fn into_contents(self) -> Vec<Content> {
        Vec::new()
    }
}

impl DirectContent for String {
    fn into_contents(self) -> Vec<Content> {
        vec![Content::Text(self)]
    }
}

impl DirectContent for &str {
    fn into_contents(self) -> Vec<Content> {
        vec![Content::text(self)]
    }
}

impl DirectContent for Cow<'_, str> {
    fn into_contents(self) -> Vec<Content> {
        vec![Content::Text(self.into_owned())]
    }
}

impl DirectContent for Image {
    fn into_contents(self) -> Vec<Content> {
        vec![Content::Image(self)]
    }
}

impl DirectContent for Vec<Image> {
    fn into_contents(self) -> Vec<Content> {
        self.into_iter().map(Content::Image).collect()
    }
}

impl DirectContent for Content {
    fn into_contents(self) -> Vec<Content> {
        vec![self]
    }
}

impl DirectContent for Vec<Content> {
    fn into_contents(self) -> Vec<Content> {
        self
    }
}

/// The first choice: a value that is already contents.
pub trait ViaDirect {
    /// Converts the wrapped value of tool `tool`.
    fn __piton_contents(&self, tool: &str) -> Vec<Content>;
}

impl<T: DirectContent> ViaDirect for &Wrap<T> {
    fn __piton_contents(&self, _tool: &str) -> Vec<Content> {
        self.take().into_contents()
    }
}

/// The fallback: any serializable value becomes one JSON content.
pub trait ViaJson {
    /// Converts the wrapped value of tool `tool`.
    fn __piton_contents(&self, tool: &str) -> Vec<Content>;
}

impl<T: Serialize> ViaJson for Wrap<T> {
    fn __piton_contents(&self, tool: &str) -> Vec<Content> {
        let value = self.take();
        match serde_json::to_string(&value) {
            Ok(json) => vec![Content::Json(json)],
            // As in the seed API, a value that cannot become JSON is a bug in
            // the tool and stops the run: the panic traps.
            Err(error) => panic!(
                "piton-guest-sdk: tool `{tool}` returned a `{}` that cannot become JSON: {error}",
                std::any::type_name::<T>()
            ),
        }
    }
}

/// The error type of a tool returning `Result<T, E>`: `ToolError` alone, so
/// that the model gets exactly the error the tool chose.
#[diagnostic::on_unimplemented(
    message = "a tool returns `Result<T, ToolError>`, and `{Self}` is not `ToolError`",
    label = "not `piton_guest_sdk::ToolError`",
    note = "turn other errors into a `ToolError` in the tool, as in `.map_err(ToolError::failed)?`"
)]
pub trait IsToolError {
    /// The error itself.
    fn into_tool_error(self) -> ToolError;
}

impl IsToolError for ToolError {
    fn into_tool_error(self) -> ToolError {
        self
    }
}

#[cfg(test)]
#[path = "private_tests.rs"]
mod tests;
