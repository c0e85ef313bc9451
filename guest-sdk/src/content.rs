//! What a tool returns to the model.

use serde::Serialize;

/// An image returned to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The media type, such as `image/png`.
    pub mime_type: String,
    /// The encoded image bytes.
    pub data: Vec<u8>,
}

impl Image {
    /// An image of any media type, such as `image/jpeg`.
    pub fn new(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }

    /// A PNG image.
    pub fn png(data: impl Into<Vec<u8>>) -> Self {
        Self::new("image/png", data)
    }
}

/// One block of a tool's result.
///
/// A `#[tool]` function may return `Content` or `Vec<Content>` to mix text,
/// JSON and images:
///
/// ```
/// use piton_guest_sdk::{Content, Image};
///
/// let result = vec![
///     Content::text("Page loaded"),
///     Content::json(&[1, 2, 3]),
///     Image::png(vec![0x89, b'P', b'N', b'G']).into(),
/// ];
/// # assert_eq!(result.len(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text given to the model as is.
    Text(String),
    /// A JSON document, as JSON text.
    Json(String),
    /// An image.
    Image(Image),
}

impl Content {
    /// Text given to the model as is.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// `value` as a JSON document.
    ///
    /// # Panics
    ///
    /// If `value` cannot become JSON, such as a map whose keys are not strings.
    /// As in the seed API, that is a bug in the tool: the panic traps and stops
    /// the run. Use [`Content::try_json`] to handle it instead.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Self {
        match Self::try_json(value) {
            Ok(content) => content,
            Err(error) => panic!(
                "piton-guest-sdk: a `{}` cannot become JSON: {error}",
                std::any::type_name::<T>()
            ),
        }
    }

    /// `value` as a JSON document, or why it cannot become JSON.
    pub fn try_json<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).map(Self::Json)
    }
}

impl From<Image> for Content {
    fn from(image: Image) -> Self {
        Self::Image(image)
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::{Content, Image};
    use std::collections::BTreeMap;

    #[test]
    fn json_is_compact_text() {
        let value = serde_json::json!({"a": [1, 2], "b": null});
        assert_eq!(
            Content::json(&value),
            Content::Json(r#"{"a":[1,2],"b":null}"#.to_owned())
        );
    }

    #[test]
    fn try_json_reports_non_string_keys() {
        let map = BTreeMap::from([((1, 2), "x")]);
        assert!(Content::try_json(&map).is_err());
    }

    #[test]
    #[should_panic(expected = "cannot become JSON")]
    fn json_panics_on_non_string_keys() {
        let map = BTreeMap::from([((1, 2), "x")]);
        let _ = Content::json(&map);
    }

    #[test]
    fn image_constructors() {
        let png = Image::png(vec![1, 2]);
        assert_eq!(png.mime_type, "image/png");
        assert_eq!(Image::new("image/jpeg", [3u8]).data, vec![3]);
        assert_eq!(Content::from(png.clone()), Content::Image(png));
    }
}
