//! The `[cache]` table of piton.toml: the most the compile cache may hold. Unlike
//! `[runtime]`, it applies at every load, a reload too: each load of the plugins
//! trims the cache to it (see `wasm::cache`).
//!
//! ```toml
//! [cache]
//! max_size = "2GiB"   # the default; the entries used longest ago go first
//! ```

use serde::Deserialize;

use crate::config::values::{ValueError, parse_size};

/// The default `max_size`: room for a few dozen compiled Python or JavaScript
/// components (tens of MiB each) and hundreds of Rust or C ones.
pub(crate) const DEFAULT_MAX_SIZE: u64 = 2 << 30;

/// What piton.toml's `[cache]` table sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    /// `max_size`: the most bytes of compiled code the cache keeps.
    pub max_size: u64,
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            max_size: DEFAULT_MAX_SIZE,
        }
    }
}

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCache {
    max_size: Option<String>,
}

impl CacheSettings {
    /// The settings of a `[cache]` table; on error the key and what is wrong.
    pub(crate) fn parse(raw: RawCache) -> Result<Self, (String, ValueError)> {
        let mut settings = Self::default();
        if let Some(text) = raw.max_size {
            settings.max_size = parse_size(&text).map_err(|e| ("cache.max_size".to_owned(), e))?;
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CacheSettings, (String, ValueError)> {
        let raw: RawCache = toml::from_str(text).expect("a [cache] table");
        CacheSettings::parse(raw)
    }

    #[test]
    fn the_default_is_2_gib_and_max_size_sets_it() {
        assert_eq!(parse("").map(|s| s.max_size), Ok(2 << 30));
        assert_eq!(
            parse("max_size = \"64MiB\"").map(|s| s.max_size),
            Ok(64 << 20)
        );
    }

    #[test]
    fn errors_name_the_key() {
        let key = "cache.max_size".to_owned();
        assert_eq!(
            parse("max_size = \"big\""),
            Err((key.clone(), ValueError::Size("big".into())))
        );
        assert_eq!(
            parse("max_size = \"0\""),
            Err((key, ValueError::ZeroSize("0".into())))
        );
        let unknown = toml::from_str::<RawCache>("size = \"1GiB\"").expect_err("unknown key");
        assert!(
            unknown.to_string().contains("unknown field `size`"),
            "{unknown}"
        );
    }
}
