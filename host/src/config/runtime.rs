//! The `[runtime]` table of piton.toml: how many instances may run at once, the
//! largest memory a tool may be given, and how many calls may wait for an instance.
//! These size the wasm runtime, which is made once per process: they take effect at
//! start, not at a reload.
//!
//! ```toml
//! [runtime]
//! max_instances = 64    # instances at once: the pooling allocator's slots
//! max_memory = "4GiB"   # the largest `memory` any tool may be given
//! max_queued = 256      # calls waiting for an instance; one more is refused as busy
//! made_ahead = 8        # instances made ahead of calls, over all tools; 0: none
//! ```

use serde::Deserialize;

use crate::config::values::{ValueError, parse_size};

/// The most instances a runtime may be sized for. Each reserves two memory slots of
/// 4 GiB of address space (not memory): 1024 instances are 8 TiB of the 128 TiB a
/// 64-bit Linux process has.
pub(crate) const MAX_INSTANCES: u32 = 1024;

/// The most calls that may wait for an instance.
pub(crate) const MAX_QUEUED: u32 = 1 << 20;

/// The largest `max_memory`: a 32-bit WebAssembly memory cannot grow past 4 GiB, and
/// wasmtime reserves 4 GiB per memory slot to check bounds with guard pages.
pub(crate) const MAX_MEMORY: u64 = 4 << 30;

/// The smallest `max_memory`: one WebAssembly page.
const MIN_MEMORY: u64 = 64 << 10;

/// What piton.toml's `[runtime]` table sets; `None` keeps the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeSettings {
    /// `max_instances`: how many instances may exist at once.
    pub max_instances: Option<u32>,
    /// `max_memory`: the largest memory any tool may be given, in bytes.
    pub max_memory: Option<u64>,
    /// `max_queued`: how many calls may wait for an instance.
    pub max_queued: Option<u32>,
    /// `made_ahead`: how many instances may be kept made ahead of calls.
    pub made_ahead: Option<u32>,
}

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRuntime {
    max_instances: Option<i64>,
    max_memory: Option<String>,
    max_queued: Option<i64>,
    made_ahead: Option<i64>,
}

/// A `[runtime]` value out of its range, or not a size.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A count (`max_instances`, `max_queued`) outside `min..=max`.
    #[error("{value} is out of range: give {min} to {max} {what}")]
    Count {
        /// What was written.
        value: i64,
        /// The least allowed.
        min: u32,
        /// The most allowed.
        max: u32,
        /// What is counted: `instances`, `calls`.
        what: &'static str,
    },
    /// `max_memory` outside 64 KiB to 4 GiB: what was written.
    #[error("{0:?} is out of range: give 64KiB to 4GiB (a WebAssembly memory is at most 4 GiB)")]
    Memory(String),
    /// `max_memory` is not a size.
    #[error(transparent)]
    Size(#[from] ValueError),
}

/// On error: the key (`runtime.max_memory`) and what is wrong with it.
type KeyError = (String, RuntimeError);

impl RuntimeSettings {
    /// The settings of a `[runtime]` table, each checked against its bounds.
    pub(crate) fn parse(raw: RawRuntime) -> Result<Self, KeyError> {
        let key = |name: &str| format!("runtime.{name}");
        let max_instances = raw
            .max_instances
            .map(|n| count(n, 1, MAX_INSTANCES, "instances"))
            .transpose()
            .map_err(|e| (key("max_instances"), e))?;
        let max_queued = raw
            .max_queued
            .map(|n| count(n, 0, MAX_QUEUED, "calls"))
            .transpose()
            .map_err(|e| (key("max_queued"), e))?;
        let made_ahead = raw
            .made_ahead
            .map(|n| count(n, 0, MAX_INSTANCES, "instances"))
            .transpose()
            .map_err(|e| (key("made_ahead"), e))?;
        let max_memory = raw
            .max_memory
            .map(|text| {
                let bytes = parse_size(&text)?;
                if !(MIN_MEMORY..=MAX_MEMORY).contains(&bytes) {
                    return Err(RuntimeError::Memory(text));
                }
                Ok(bytes)
            })
            .transpose()
            .map_err(|e| (key("max_memory"), e))?;
        Ok(Self {
            max_instances,
            max_memory,
            max_queued,
            made_ahead,
        })
    }
}

/// `value` as a count from `min` to `max`, or what to write instead.
fn count(value: i64, min: u32, max: u32, what: &'static str) -> Result<u32, RuntimeError> {
    u32::try_from(value)
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or(RuntimeError::Count {
            value,
            min,
            max,
            what,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RuntimeSettings, KeyError> {
        let raw: RawRuntime = toml::from_str(text).expect("a [runtime] table");
        RuntimeSettings::parse(raw)
    }

    #[test]
    fn nothing_given_keeps_every_default() {
        assert_eq!(parse(""), Ok(RuntimeSettings::default()));
    }

    #[test]
    fn each_setting_parses() {
        let settings =
            parse("max_instances = 8\nmax_memory = \"256MiB\"\nmax_queued = 0\nmade_ahead = 0")
                .expect("parses");
        assert_eq!(
            settings,
            RuntimeSettings {
                max_instances: Some(8),
                max_memory: Some(256 << 20),
                max_queued: Some(0),
                made_ahead: Some(0),
            }
        );
        let most = parse("max_instances = 1024\nmax_memory = \"4GiB\"\nmax_queued = 1048576");
        assert!(most.is_ok(), "{most:?}");
    }

    #[test]
    fn errors_name_the_key_and_the_range() {
        let count = |value, min, max, what| RuntimeError::Count {
            value,
            min,
            max,
            what,
        };
        for (text, key, expected) in [
            (
                "max_instances = 0",
                "runtime.max_instances",
                count(0, 1, 1024, "instances"),
            ),
            (
                "max_instances = 5000",
                "runtime.max_instances",
                count(5000, 1, 1024, "instances"),
            ),
            (
                "max_instances = -1",
                "runtime.max_instances",
                count(-1, 1, 1024, "instances"),
            ),
            (
                "made_ahead = -1",
                "runtime.made_ahead",
                count(-1, 0, 1024, "instances"),
            ),
            (
                "max_queued = -3",
                "runtime.max_queued",
                count(-3, 0, 1 << 20, "calls"),
            ),
            (
                "max_memory = \"8GiB\"",
                "runtime.max_memory",
                RuntimeError::Memory("8GiB".into()),
            ),
            (
                "max_memory = \"1KiB\"",
                "runtime.max_memory",
                RuntimeError::Memory("1KiB".into()),
            ),
            (
                "max_memory = \"lots\"",
                "runtime.max_memory",
                RuntimeError::Size(ValueError::Size("lots".into())),
            ),
        ] {
            assert_eq!(parse(text), Err((key.to_owned(), expected)), "{text}");
        }
        assert_eq!(
            count(5000, 1, 1024, "instances").to_string(),
            "5000 is out of range: give 1 to 1024 instances"
        );
        assert_eq!(
            RuntimeError::Memory("8GiB".into()).to_string(),
            "\"8GiB\" is out of range: give 64KiB to 4GiB (a WebAssembly memory is at most 4 GiB)"
        );
        let unknown = toml::from_str::<RawRuntime>("instances = 3").expect_err("unknown key");
        assert!(
            unknown.to_string().contains("unknown field `instances`"),
            "{unknown}"
        );
    }
}
