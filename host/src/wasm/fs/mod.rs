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
//! [`quota::MAX_NEW_ENTRIES`] and the folder listings it holds by [`quota::MAX_LISTINGS`].
//!
//! This layer does not know the store's data type: the data implements [`HasFs`],
//! and [`add_to_linker`] is generic over it.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use wasmtime::component::{HasData, Linker};
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::grants::{FsAccess, Mount};

mod pin;
mod quota;
mod view;

pub(crate) use pin::Pins;
pub(crate) use view::FsView;

#[cfg(test)]
mod tests;

/// What a file is, for the add-only rules: its identity as the metadata hash.
type Identity = (u64, u64);

/// An add-only descriptor the guest holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    /// A directory: new entries may be made in it, none changed or removed.
    Dir,
    /// A file; `created` when this call created it, and so may write it.
    File {
        /// Created by this call.
        created: bool,
    },
}

/// What the filesystem layer keeps for one call.
#[derive(Debug, Default)]
pub(crate) struct FsState {
    /// For each preopen, in the order they were given to WASI: is it add-only?
    preopens: Vec<bool>,
    /// The add-only descriptors alive in the call's resource table, by table index.
    /// An index is removed when its descriptor is dropped, since the table reuses it.
    add_only: HashMap<u32, Node>,
    /// The files created in add-only mounts during this call.
    created: HashSet<Identity>,
    /// For each preopen, in the same order: its host folder, guest path and the
    /// identity its folder had at load, checked on the descriptor handed out.
    loaded: Vec<(PathBuf, String, Option<Identity>)>,
    /// What the call may still write.
    quota: quota::Quota,
    /// The files, folders and links the call made.
    new_entries: quota::NewEntries,
    /// The folder listings the call holds open.
    listings: quota::Listings,
}

impl FsState {
    /// The add-only node behind table index `rep`, or `None` for a descriptor of a
    /// read-only or read-write mount.
    fn node(&self, rep: u32) -> Option<Node> {
        self.add_only.get(&rep).copied()
    }

    fn is_add_only(&self, rep: u32) -> bool {
        self.add_only.contains_key(&rep)
    }

    /// Marks the preopen descriptors handed to the guest: `reps[i]` is preopen `i`.
    /// A preopen this state does not know of is treated as add-only, the stricter
    /// choice, though `configure` makes every preopen there is.
    fn adopt_preopens(&mut self, reps: impl IntoIterator<Item = u32>) {
        for (index, rep) in reps.into_iter().enumerate() {
            if self.preopens.get(index).copied().unwrap_or(true) {
                self.add_only.insert(rep, Node::Dir);
            }
        }
    }

    /// Records a descriptor opened beneath an add-only directory.
    fn adopt(&mut self, rep: u32, node: Node) {
        self.add_only.insert(rep, node);
    }

    /// Forgets a dropped descriptor, whatever its mount.
    fn forget(&mut self, rep: u32) {
        self.add_only.remove(&rep);
    }

    fn record_created(&mut self, identity: Identity) {
        self.created.insert(identity);
    }

    fn was_created(&self, identity: Identity) -> bool {
        self.created.contains(&identity)
    }

    /// Checks that preopen `index`, opened as `dir`, is the folder loaded: the
    /// check on the very descriptor the guest gets, so nothing can swap the folder
    /// between the check and the use.
    fn check_preopen(&self, index: usize, dir: &std::fs::File) -> Result<(), String> {
        let Some((host, guest, Some(loaded))) = self.loaded.get(index) else {
            return Ok(());
        };
        let now = dir
            .metadata()
            .map_err(|e| format!("cannot read {}: {e}", host.display()))?;
        if pin::identity_of(&now) != Some(*loaded) {
            return Err(pin::replaced(host, guest));
        }
        Ok(())
    }
}

/// Preopens each mount with the access the call has, once its folder is found to
/// be the one `pins` holds since load, and bounds the bytes written to `max_write`.
/// An error says which folder cannot be used, and why.
pub(crate) fn configure(
    wasi: &mut WasiCtxBuilder,
    mounts: &[(Mount, FsAccess)],
    pins: &Pins,
    max_write: u64,
) -> Result<FsState, String> {
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
        let now = std::fs::metadata(&mount.host)
            .map_err(|e| format!("cannot open {}: {e}", mount.host.display()))?;
        if loaded.is_some() && pin::identity_of(&now) != loaded {
            return Err(pin::replaced(&mount.host, &mount.guest));
        }
        wasi.preopened_dir(&mount.host, &mount.guest, perms)
            .map_err(|e| format!("cannot open {}: {e}", mount.host.display()))?;
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
