//! The names and header texts the contract and piton.toml accept: tool names
//! (`[A-Za-z0-9_-]{1,64}`), environment variable names, and HTTP header names and
//! values, each checked here once for every side that takes them.

use std::fmt;

/// The most bytes a tool name may have.
pub const MAX_TOOL_NAME: usize = 64;

/// A tool name outside `[A-Za-z0-9_-]{1,64}`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolNameError {
    /// Over [`MAX_TOOL_NAME`] bytes: the length, not the name, which may be
    /// megabytes long.
    TooLong(usize),
    /// Empty, or with a character other than an ASCII letter, digit, `_` or `-`.
    NotAllowed(String),
}

impl fmt::Display for ToolNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong(len) => write!(
                f,
                "tool name of {len} bytes is not allowed: use 1 to 64 letters, digits, '_' or '-'"
            ),
            Self::NotAllowed(name) => write!(
                f,
                "tool name {name:?} is not allowed: use 1 to 64 letters, digits, '_' or '-'"
            ),
        }
    }
}

impl std::error::Error for ToolNameError {}

/// Checks a tool name against `[A-Za-z0-9_-]{1,64}`, the `name` of `tool-spec`.
pub fn check_tool_name(name: &str) -> Result<(), ToolNameError> {
    if name.len() > MAX_TOOL_NAME {
        return Err(ToolNameError::TooLong(name.len()));
    }
    let allowed = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if allowed {
        Ok(())
    } else {
        Err(ToolNameError::NotAllowed(name.to_owned()))
    }
}

/// An environment variable name that cannot be set: empty, or with `=` or NUL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvNameError(pub String);

impl fmt::Display for EnvNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a variable name: no '=' or NUL, not empty",
            self.0
        )
    }
}

impl std::error::Error for EnvNameError {}

/// Checks the name of an environment variable given to a guest or an upstream
/// server: not empty, without `=` or NUL (which the environment cannot hold).
pub fn check_env_name(name: &str) -> Result<(), EnvNameError> {
    if name.is_empty() || name.contains(['=', '\0']) {
        Err(EnvNameError(name.to_owned()))
    } else {
        Ok(())
    }
}

/// Whether `name` is an HTTP header name: 1 to 65 535 token characters (ASCII
/// letters, digits and ``!#$%&'*+-.^_`|~``), as the `http` crate takes them.
pub fn is_header_name(name: &str) -> bool {
    (1..=0xffff).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `value` can be an HTTP header value: no control character but tab
/// (no line break, no NUL), as the `http` crate takes it.
pub fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        for good in ["a", "word_count", "files-v2", "A-z_09", &"x".repeat(64)] {
            assert_eq!(check_tool_name(good), Ok(()), "{good}");
        }
        for bad in ["", "has space", "dot.name", "ü", "résumé", &"x".repeat(65)] {
            assert!(check_tool_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_tool_name("a b").unwrap_err().to_string(),
            "tool name \"a b\" is not allowed: use 1 to 64 letters, digits, '_' or '-'"
        );
        let long = check_tool_name(&"x".repeat(1 << 20))
            .unwrap_err()
            .to_string();
        assert!(
            long.starts_with("tool name of 1048576 bytes"),
            "{long:.100}"
        );
        assert!(long.len() < 200, "a long name is not echoed: {long:.100}");
    }

    #[test]
    fn env_names() {
        for good in ["A", "LANG", "lower_case", "x-y"] {
            assert_eq!(check_env_name(good), Ok(()), "{good}");
        }
        for bad in ["", "A=B", "A\0"] {
            assert!(check_env_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_env_name("A=B").unwrap_err().to_string(),
            "\"A=B\" is not a variable name: no '=' or NUL, not empty"
        );
    }

    #[test]
    fn header_names_and_values() {
        for good in ["Authorization", "x-api-key", "A!#$%&'*+-.^_`|~9"] {
            assert!(is_header_name(good), "{good}");
        }
        for bad in ["", "has space", "colon:", "ü", "a\nb", &"x".repeat(0x10000)] {
            assert!(!is_header_name(bad), "{bad:.20?}");
        }
        for good in ["", "Bearer abc", "tab\there", "caf\u{e9}"] {
            assert!(is_header_value(good), "{good:?}");
        }
        for bad in ["line\nbreak", "cr\r", "nul\0", "bell\x07", "del\x7f"] {
            assert!(!is_header_value(bad), "{bad:?}");
        }
    }
}
