//! The filesystem a call sees: its mounts, each read-only, add-only or read-write.
//!
//! Read-only and read-write mounts are wasmtime-wasi's own `FsPerms`. Add-only has no
//! `FsPerms` of its own: the mount is preopened read-write and every
//! `wasi:filesystem/types` function goes through [`view::FsView`], which applies the
//! add-only rules to the descriptors that come from an add-only mount and passes
//! everything else to wasmtime-wasi unchanged. The rules, per function:
//!
//! | function | in an add-only mount |
//! | --- | --- |
//! | `open-at` with `create` | makes a new file (forced `exclusive`), remembered as created by this call; on an existing file as below |
//! | `open-at` with `write` or `truncate` on an existing file | only a file created by this call |
//! | `open-at` for reading | allowed |
//! | `write`, `write-via-stream`, `append-via-stream`, `set-size`, `set-times` | only on a file created by this call |
//! | `set-times-at` | only on a file created by this call |
//! | `create-directory-at` | allowed (an existing name fails with `exist`) |
//! | `unlink-file-at`, `remove-directory-at`, `symlink-at` | `not-permitted` |
//! | `rename-at`, `link-at` | `not-permitted` when either side is add-only |
//! | reading, listing, stat, readlink, metadata hashes, sync | allowed |
//!
//! "Created by this call" is the identity (wasmtime-wasi's metadata hash of device
//! and inode) of every file made by an add-only `open-at` with `create`; a descriptor
//! is add-only when it is an add-only preopen or was opened beneath one.
//!
//! In every mode, a mount's folder must still be the one loaded ([`pin`]), and the
//! bytes a call writes are bounded by `max_write` ([`quota`]), the entries it makes by
//! [`quota::MAX_NEW_ENTRIES`] and the folder listings it holds by [`quota::MAX_LISTINGS`],
//! each read a part at a time ([`listing`]). Only files and folders are opened
//! ([`special`]).
//!
//! This layer does not know the store's data type: the data implements [`HasFs`],
//! and [`add_to_linker`] is generic over it.

use wasmtime::component::{HasData, Linker};
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::grants::{FsAccess, Mount};

mod listing;
mod pin;
mod quota;
mod special;
mod state;
mod view;

pub(crate) use pin::{MountRefused, Pins};
pub(crate) use state::FsState;
pub(crate) use view::FsView;

#[cfg(test)]
mod tests;

/// Preopens each mount with the access the call has, once its folder is found to
/// be the one `pins` holds since load, and bounds the bytes written to `max_write`.
/// An error says which folder cannot be used, and why.
pub(crate) fn configure(
    wasi: &mut WasiCtxBuilder,
    mounts: &[(Mount, FsAccess)],
    pins: &Pins,
    max_write: u64,
) -> Result<FsState, MountRefused> {
    let mut state = FsState {
        quota: quota::Quota::new(max_write),
        ..FsState::default()
    };
    for (mount, access) in mounts {
        let perms = match access {
            FsAccess::ReadOnly => FsPerms::ReadOnly,
            // Add-only is read-write below, narrowed by `view::FsView` above.
            FsAccess::AddOnly | FsAccess::ReadWrite => FsPerms::ReadWrite,
        };
        let loaded = pins.identity(&mount.host)?;
        // A first look by path, for a clear error before the guest runs; the check
        // that counts is on the opened descriptor (`check_preopen`).
        let now = std::fs::metadata(&mount.host).map_err(|source| MountRefused::Open {
            host: mount.host.clone(),
            source,
        })?;
        if loaded.is_some() && pin::identity_of(&now) != loaded {
            return Err(pin::replaced(&mount.host, &mount.guest));
        }
        wasi.preopened_dir(&mount.host, &mount.guest, perms)
            .map_err(|error| MountRefused::Preopen {
                host: mount.host.clone(),
                error,
            })?;
        state.preopens.push(*access == FsAccess::AddOnly);
        state
            .loaded
            .push((mount.host.clone(), mount.guest.clone(), loaded));
    }
    Ok(state)
}

/// Store data that has a call's filesystem: what this layer needs of it.
pub(crate) trait HasFs {
    /// wasmtime-wasi's filesystem, this layer's state and the call's descriptors.
    fn fs_view(&mut self) -> FsView<'_>;
}

/// Marks [`view::FsView`] as the data `wasi:filesystem` functions get.
struct FsLayer;

impl HasData for FsLayer {
    type Data<'a> = view::FsView<'a>;
}

/// Adds this layer's WASI functions to the linker: all of `wasi:filesystem/types` and
/// `wasi:filesystem/preopens`, shadowing wasmtime-wasi's (the caller allows it). The
/// linker serves every semver-compatible 0.2 import from the one version registered.
pub(crate) fn add_to_linker<T: HasFs + Send + 'static>(
    linker: &mut Linker<T>,
) -> wasmtime::Result<()> {
    types::add_to_linker::<T, FsLayer>(linker, T::fs_view)?;
    preopens::add_to_linker::<T, FsLayer>(linker, T::fs_view)?;
    Ok(())
}
