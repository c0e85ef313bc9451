//! The `[supply]` table of piton.toml: how `piton add` (and `piton update`) bound
//! what they fetch.
//!
//! ```toml
//! [supply]
//! max_size = "256MiB"   # the default: the most bytes a fetched component may have
//! ```

use serde::Deserialize;

use crate::config::values::{ValueError, parse_size};

/// The default `max_size`.
pub const DEFAULT_MAX_SIZE: u64 = 256 << 20;

/// What piton.toml's `[supply]` table sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SupplySettings {
    /// `max_size`: the most bytes a fetched component (an OCI layer, a URL's body, a
    /// local file) may have; a larger one is refused before it is read in full.
    pub max_size: u64,
}

impl Default for SupplySettings {
    fn default() -> Self {
        Self {
            max_size: DEFAULT_MAX_SIZE,
        }
    }
}

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSupply {
    max_size: Option<String>,
}

impl SupplySettings {
    /// The settings of a `[supply]` table; on error the key and what is wrong.
    pub(crate) fn parse(raw: RawSupply) -> Result<Self, (String, ValueError)> {
        let mut settings = Self::default();
        if let Some(text) = raw.max_size {
            settings.max_size = parse_size(&text).map_err(|e| ("supply.max_size".to_owned(), e))?;
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SupplySettings, (String, ValueError)> {
        let raw: RawSupply = toml::from_str(text).expect("a [supply] table");
        SupplySettings::parse(raw)
    }

    #[test]
    fn the_default_is_256_mib_and_max_size_sets_it() {
        assert_eq!(parse("").map(|s| s.max_size), Ok(256 << 20));
        assert_eq!(parse("max_size = \"1KiB\"").map(|s| s.max_size), Ok(1024));
        assert_eq!(
            parse("max_size = \"huge\""),
            Err((
                "supply.max_size".to_owned(),
                ValueError::Size("huge".into())
            ))
        );
    }
}
