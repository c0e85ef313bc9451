//! Support for piton's end-to-end tests: the hostile guests in `guests/` and the
//! example plugins in `../plugins`, built to components by this crate's build script,
//! one constant (a `.wasm` path) each.

/// Paths of the built hostile guests.
pub mod guests {
    include!(concat!(env!("OUT_DIR"), "/guests.rs"));
}

/// Paths of the built example plugins.
pub mod plugins {
    include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
}
