//! Failures the model sees and can handle.

use std::fmt;

/// A failure the model sees and can handle; it does not stop the run.
///
/// A panic is not a `ToolError`: it traps the component, which the host takes
/// as a bug that stops the run. Return a `ToolError` for anything the model
/// could fix or work around.
///
/// ```
/// use piton_guest_sdk::ToolError;
///
/// fn read(path: &str) -> Result<String, ToolError> {
///     if path.starts_with('/') {
///         return Err(ToolError::input("path must be relative"));
///     }
///     std::fs::read_to_string(path).map_err(ToolError::failed)
/// }
/// # let _ = read("x");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments are wrong; the model gets `(input error: ...)`.
    Input(String),
    /// The tool could not do what was asked; the model gets an error result.
    Failed(String),
}

impl ToolError {
    /// The arguments are wrong: the model gets `(input error: <message>)`.
    ///
    /// Takes anything printable, so `.map_err(ToolError::input)` works on most errors.
    pub fn input(message: impl fmt::Display) -> Self {
        Self::Input(message.to_string())
    }

    /// The tool could not do what was asked: the model gets `<message>` as an
    /// error result.
    ///
    /// Takes anything printable, so `.map_err(ToolError::failed)` works on most errors.
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }

    /// The message, without the `input error: ` prefix that `Display` adds.
    pub fn message(&self) -> &str {
        match self {
            Self::Input(message) | Self::Failed(message) => message,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Input(message) => write!(f, "input error: {message}"),
            Self::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::ToolError;

    #[test]
    fn display_marks_input_errors() {
        assert_eq!(
            ToolError::input("bad path").to_string(),
            "input error: bad path"
        );
        assert_eq!(ToolError::failed("HTTP 500").to_string(), "HTTP 500");
        assert_eq!(ToolError::input("bad path").message(), "bad path");
    }

    #[test]
    fn constructors_take_any_error() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        assert_eq!(
            ToolError::failed(io),
            ToolError::Failed("no such file".to_owned())
        );
    }
}
