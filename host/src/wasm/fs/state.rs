//! What the filesystem layer keeps for one call: which descriptors are add-only,
//! the files the call created, the folders it was given as loaded, and what it may
//! still write, make and list.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use super::pin::{self, Identity, MountRefused};
use super::quota;
use crate::call::notes::Denials;

/// An add-only descriptor the guest holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Node {
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
    pub(super) preopens: Vec<bool>,
    /// The add-only descriptors alive in the call's resource table, by table index.
    /// An index is removed when its descriptor is dropped, since the table reuses it.
    pub(super) add_only: HashMap<u32, Node>,
    /// The files created in add-only mounts during this call.
    pub(super) created: HashSet<Identity>,
    /// For each preopen, in the same order: its host folder, guest path and the
    /// identity its folder had at load, checked on the descriptor handed out.
    pub(super) loaded: Vec<(PathBuf, String, Option<Identity>)>,
    /// What the call may still write.
    pub(super) quota: quota::Quota,
    /// The files, folders and links the call made.
    pub(super) new_entries: quota::NewEntries,
    /// The folder listings the call holds open.
    pub(super) listings: quota::Listings,
    /// Where refusals are reported (the call's observer).
    pub(crate) denials: Denials,
}

impl FsState {
    /// The add-only node behind table index `rep`, or `None` for a descriptor of a
    /// read-only or read-write mount.
    pub(super) fn node(&self, rep: u32) -> Option<Node> {
        self.add_only.get(&rep).copied()
    }

    pub(super) fn is_add_only(&self, rep: u32) -> bool {
        self.add_only.contains_key(&rep)
    }

    /// Marks the preopen descriptors handed to the guest: `reps[i]` is preopen `i`.
    /// A preopen this state does not know of is treated as add-only, the stricter
    /// choice, though `configure` makes every preopen there is.
    pub(super) fn adopt_preopens(&mut self, reps: impl IntoIterator<Item = u32>) {
        for (index, rep) in reps.into_iter().enumerate() {
            if self.preopens.get(index).copied().unwrap_or(true) {
                self.add_only.insert(rep, Node::Dir);
            }
        }
    }

    /// Records a descriptor opened beneath an add-only directory.
    pub(super) fn adopt(&mut self, rep: u32, node: Node) {
        self.add_only.insert(rep, node);
    }

    /// Forgets a dropped descriptor, whatever its mount.
    pub(super) fn forget(&mut self, rep: u32) {
        self.add_only.remove(&rep);
    }

    pub(super) fn record_created(&mut self, identity: Identity) {
        self.created.insert(identity);
    }

    pub(super) fn was_created(&self, identity: Identity) -> bool {
        self.created.contains(&identity)
    }

    /// Checks that preopen `index`, opened as `dir`, is the folder loaded: the
    /// check on the very descriptor the guest gets, so nothing can swap the folder
    /// between the check and the use.
    pub(super) fn check_preopen(
        &self,
        index: usize,
        dir: &std::fs::File,
    ) -> Result<(), MountRefused> {
        let Some((host, guest, Some(loaded))) = self.loaded.get(index) else {
            return Ok(());
        };
        let now = dir.metadata().map_err(|source| MountRefused::Read {
            host: host.clone(),
            source,
        })?;
        if pin::identity_of(&now) != Some(*loaded) {
            return Err(pin::replaced(host, guest));
        }
        Ok(())
    }
}
