//! The `[code]` table of piton.toml: code mode, one tool (`run_python`) whose
//! argument is a short Python program that calls the registry's tools as functions
//! (docs/code-mode.md).
//!
//! ```toml
//! [code]
//! enabled = true            # or `piton serve --code-mode`; default false
//! name = "run_python"       # the tool's name
//! tools = ["word_count"]    # which tools a program may call; default all
//! read_only_only = true     # only read-only ones (of those); default false
//! max_calls = 50            # nested calls in one run, at most
//! deadline = "30s"          # wall-clock time of a whole run, nested calls included
//! memory = "128MiB"         # the interpreter's memory
//! max_printed = "64KiB"     # printed output kept in the result; the rest is cut
//! only = false              # true: the registry is served as this one tool
//! ```

use std::time::Duration;

use serde::Deserialize;

use crate::config::values::{ValueError, parse_duration, parse_size};
use crate::tool::{ToolNameError, check_tool_name};

/// The tool's name unless `name` says otherwise.
pub const DEFAULT_NAME: &str = "run_python";

/// What piton.toml's `[code]` table sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeSettings {
    /// Whether the registry has the code-mode tool. Default false.
    pub enabled: bool,
    /// Its name. Default [`DEFAULT_NAME`].
    pub name: String,
    /// The tools a program may call, by served name; `None`: every tool.
    pub tools: Option<Vec<String>>,
    /// Only the read-only ones (by their own hints). Default false.
    pub read_only_only: bool,
    /// The most nested calls one run makes; the next one ends the run. Default 50.
    pub max_calls: u32,
    /// The wall-clock time of one run, its nested calls included. Default 30 s.
    pub deadline: Duration,
    /// The interpreter's memory, in bytes. Default 128 MiB.
    pub memory: u64,
    /// Printed bytes kept in a run's result. Default 64 KiB.
    pub max_printed: u64,
    /// Whether the registry is served as this one tool. Default false.
    pub only: bool,
}

impl Default for CodeSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            name: DEFAULT_NAME.to_owned(),
            tools: None,
            read_only_only: false,
            max_calls: 50,
            deadline: Duration::from_secs(30),
            memory: 128 << 20,
            max_printed: 64 << 10,
            only: false,
        }
    }
}

/// The least memory the interpreter is given: it needs about 16 MiB to start.
pub const MIN_MEMORY: u64 = 32 << 20;

/// The most printed bytes a result keeps: what the result of a call may hold.
const MAX_PRINTED: u64 = 4 << 20;

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCode {
    enabled: Option<bool>,
    name: Option<String>,
    tools: Option<Vec<String>>,
    read_only_only: Option<bool>,
    max_calls: Option<u32>,
    deadline: Option<String>,
    memory: Option<String>,
    max_printed: Option<String>,
    only: Option<bool>,
}

/// What is wrong in the `[code]` table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodeError {
    /// A size or a duration.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A name that is not a tool name.
    #[error(transparent)]
    Name(#[from] ToolNameError),
    /// `max_calls = 0`.
    #[error("0 would let a program call no tool; give at least 1, or leave `tools` empty")]
    NoCalls,
    /// A memory under [`MIN_MEMORY`]: what was written.
    #[error("{0:?} is too little for the interpreter; give at least \"32MiB\"")]
    Memory(String),
    /// A `max_printed` over the most a result keeps: what was written.
    #[error("{0:?} is over the most a result keeps, \"4MiB\"")]
    Printed(String),
    /// `only = true` with `enabled = false`.
    #[error(
        "`only = true` serves the registry as the code-mode tool alone, which `enabled = false` turns off; set enabled = true, or drop `only`"
    )]
    OnlyWithoutTool,
}

impl CodeSettings {
    /// The settings of a `[code]` table; on error the key and what is wrong.
    pub(crate) fn parse(raw: RawCode) -> Result<Self, (String, CodeError)> {
        let at = |key: &str| format!("code.{key}");
        let mut settings = Self::default();
        if let Some(enabled) = raw.enabled {
            settings.enabled = enabled;
        }
        if let Some(name) = raw.name {
            check_tool_name(&name).map_err(|e| (at("name"), e.into()))?;
            settings.name = name;
        }
        if let Some(tools) = raw.tools {
            for (i, name) in tools.iter().enumerate() {
                check_tool_name(name).map_err(|e| (format!("code.tools[{i}]"), e.into()))?;
            }
            settings.tools = Some(tools);
        }
        if let Some(only) = raw.read_only_only {
            settings.read_only_only = only;
        }
        if let Some(n) = raw.max_calls {
            if n == 0 {
                return Err((at("max_calls"), CodeError::NoCalls));
            }
            settings.max_calls = n;
        }
        if let Some(text) = raw.deadline {
            settings.deadline = parse_duration(&text).map_err(|e| (at("deadline"), e.into()))?;
        }
        if let Some(text) = raw.memory {
            let bytes = parse_size(&text).map_err(|e| (at("memory"), e.into()))?;
            if bytes < MIN_MEMORY {
                return Err((at("memory"), CodeError::Memory(text)));
            }
            settings.memory = bytes;
        }
        if let Some(text) = raw.max_printed {
            let bytes = parse_size(&text).map_err(|e| (at("max_printed"), e.into()))?;
            if bytes > MAX_PRINTED {
                return Err((at("max_printed"), CodeError::Printed(text)));
            }
            settings.max_printed = bytes;
        }
        if let Some(only) = raw.only {
            if only && raw.enabled == Some(false) {
                return Err((at("only"), CodeError::OnlyWithoutTool));
            }
            settings.only = only;
            // Serving the registry as this one tool means having it.
            settings.enabled |= only;
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CodeSettings, (String, CodeError)> {
        let raw: RawCode = toml::from_str(text).expect("a [code] table");
        CodeSettings::parse(raw)
    }

    #[test]
    fn defaults_are_off_with_fifty_calls_in_thirty_seconds() {
        let settings = parse("").unwrap();
        assert_eq!(settings, CodeSettings::default());
        assert!(!settings.enabled && !settings.only && !settings.read_only_only);
        assert_eq!(settings.name, "run_python");
        assert_eq!(settings.tools, None, "every tool");
        assert_eq!(settings.max_calls, 50);
        assert_eq!(settings.deadline, Duration::from_secs(30));
        assert_eq!(settings.memory, 128 << 20);
        assert_eq!(settings.max_printed, 64 << 10);
    }

    #[test]
    fn every_key_is_read() {
        let settings = parse(
            "enabled = true\nname = \"py\"\ntools = [\"word_count\"]\nread_only_only = true\n\
             max_calls = 3\ndeadline = \"2s\"\nmemory = \"64MiB\"\nmax_printed = \"1KiB\"\n",
        )
        .unwrap();
        assert!(settings.enabled && settings.read_only_only);
        assert_eq!(settings.name, "py");
        assert_eq!(settings.tools, Some(vec!["word_count".to_owned()]));
        assert_eq!(settings.max_calls, 3);
        assert_eq!(settings.deadline, Duration::from_secs(2));
        assert_eq!(settings.memory, 64 << 20);
        assert_eq!(settings.max_printed, 1024);
        let only = parse("only = true").unwrap();
        assert!(only.only && only.enabled, "only turns the tool on");
    }

    #[test]
    fn mistakes_name_the_key_and_the_fix() {
        let cases = [
            ("max_calls = 0", "code.max_calls", "at least 1"),
            ("memory = \"1MiB\"", "code.memory", "at least \"32MiB\""),
            ("max_printed = \"1GiB\"", "code.max_printed", "\"4MiB\""),
            ("name = \"has space\"", "code.name", "tool name"),
            ("tools = [\"ok\", \"not ok\"]", "code.tools[1]", "tool name"),
            ("deadline = \"soon\"", "code.deadline", "soon"),
            (
                "enabled = false\nonly = true",
                "code.only",
                "set enabled = true",
            ),
        ];
        for (text, key, says) in cases {
            let (at, error) = parse(text).unwrap_err();
            assert_eq!(at, key, "{text}");
            assert!(error.to_string().contains(says), "{text}: {error}");
        }
    }
}
