//! The example plugins of this repository (plugins/) and code mode's interpreter
//! (guest-sdk/code/), built into the binary.

#[allow(dead_code, unreachable_pub)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/bundled_plugins.rs"));
}

/// Every bundled example: its package name and component bytes.
pub(crate) fn plugins() -> &'static [(&'static str, &'static [u8])] {
    generated::ALL
}

#[allow(dead_code, unreachable_pub)]
mod code {
    include!(concat!(env!("OUT_DIR"), "/code_guests.rs"));
}

/// Code mode's interpreter component (guest-sdk/code/interpreter).
pub(crate) fn code_interpreter() -> &'static [u8] {
    code::ALL
        .iter()
        .find(|(name, _)| *name == "piton-code-interpreter")
        .map_or(&[], |(_, bytes)| *bytes)
}
