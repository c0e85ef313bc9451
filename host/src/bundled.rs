//! The example plugins of this repository (plugins/), built into the binary.

#[allow(dead_code, unreachable_pub)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/bundled_plugins.rs"));
}

/// Every bundled example: its package name and component bytes.
pub(crate) fn plugins() -> &'static [(&'static str, &'static [u8])] {
    generated::ALL
}
