//! Per-call resource limits, what a trap does, and how sizes are written.

use std::time::Duration;

/// The limits every call of a tool runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most linear memory the guest may have, in bytes. Default 64 MiB.
    pub memory: u64,
    /// How long a call may run. Default 10 s.
    pub timeout: Duration,
    /// The most bytes a call may return. Default 16 MiB.
    pub max_output: u64,
    /// The most bytes of stdout and of stderr kept for the log, each. Default 64 KiB;
    /// the rest is counted and dropped.
    pub max_log: u64,
    /// The most bytes a call may write into files through its mounts (add-only and
    /// read-write alike). Default 64 MiB; past it the guest gets a `quota` error.
    pub max_write: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory: 64 * MIB,
            timeout: Duration::from_secs(10),
            max_output: 16 * MIB,
            max_log: 64 * KIB,
            max_write: 64 * MIB,
        }
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// `65536` → `64 KiB`: exact binary units where they fit, bytes otherwise.
pub fn format_size(bytes: u64) -> String {
    for (unit, name) in [(GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{} {name}", bytes / unit);
        }
    }
    format!("{bytes} bytes")
}

/// `bytes` to one decimal in the largest unit it fills (`14.2 MiB`), for sizes that
/// are measured rather than set.
pub(crate) fn format_size_about(bytes: u64) -> String {
    for (unit, name) in [(GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if bytes >= unit {
            return format!("{:.1} {name}", bytes as f64 / unit as f64);
        }
    }
    format!("{bytes} bytes")
}

/// What a trap of the tool does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnTrap {
    /// Stop the run: the caller gets an `Err` (the default; a trap is a bug).
    #[default]
    Stop,
    /// Give the model an error result naming the trap, and go on.
    Error,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_documented_values() {
        let l = Limits::default();
        assert_eq!(l.memory, 64 * 1024 * 1024);
        assert_eq!(l.timeout, Duration::from_secs(10));
        assert_eq!(l.max_output, 16 * 1024 * 1024);
        assert_eq!(l.max_log, 64 * 1024);
        assert_eq!(l.max_write, 64 * 1024 * 1024);
    }

    #[test]
    fn sizes() {
        assert_eq!(format_size(64 * MIB), "64 MiB");
        assert_eq!(format_size(GIB), "1 GiB");
        assert_eq!(format_size(1536), "1536 bytes");
        assert_eq!(format_size(0), "0 bytes");
    }
}
