//! Where plugins come from and how they get into the plugins folder: references
//! (`oci://…`, `https://…`, a path), fetching them with every byte checked, OCI
//! registries (pull and publish, logged in as [`login`] finds and only where
//! [`handshake`] says), and `piton.lock`,
//! the record of what was added from where, which the loader holds each file of the
//! plugins folder to; and what trusting a component means: its permission profile
//! (its tools, hints, input schemas and the capabilities its imports could use,
//! with what piton.toml grants each tool), and the permission diff between two
//! versions of a component that `piton update` shows before it replaces one; and the
//! signatures on a component ([`trust`]): every way in ends in the same check, the
//! bytes hash to the digest recorded and, if the policy says so, a signature over
//! that digest verifies.
//!
//! ```no_run
//! use piton_host::supply::{add::Add, reference::Reference};
//! use piton_host::wasm::{RuntimeConfig, WasmRuntime};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let given = "oci://127.0.0.1:5000/tools/word-count:1.0";
//! let reference = Reference::parse(given, None)?;
//! let runtime = WasmRuntime::new(RuntimeConfig::default())?;
//! let trust = Default::default(); // piton.toml's [trust]: here, digests only
//! let add = Add::new(runtime, "plugins".into(), "plugins/piton.lock".into(), trust);
//! let added = add.run(&reference, given, None, None).await?;
//! println!("{}: {} ({})", added.name, added.entry.file, added.entry.digest);
//! # Ok(()) }
//! ```

pub mod add;
pub mod artifact;
pub mod at_load;
pub mod capability;
pub mod diff;
#[cfg(test)]
mod diff_tests;
pub mod fetch;
pub mod fetched;
pub mod grant;
pub mod handshake;
mod http;
pub mod lock;
pub mod login;
pub mod oci;
pub mod profile;
pub mod reference;
pub mod schema_diff;
pub mod signatures;
pub mod trust;
pub mod update;
