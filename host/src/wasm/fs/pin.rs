//! Each mount's folder as it was at load: held open, so the call that comes later
//! can check that the folder it opens by path is still that one.
//!
//! Mounts are given by path, and a call opens its mounts by path. Between load and a
//! call, anything with write access above a mount (another tool's destructive call,
//! say) can replace the folder by a symbolic link to somewhere else: `w/sub` becomes
//! `w/sub -> ../..`. The path then leads elsewhere, and the call would get that
//! folder with the mount's access. So at load each mount's folder is opened and its
//! identity (device and inode) recorded; the open handle keeps the inode from being
//! reused by another folder while the tool is loaded. Each call compares the folder
//! it opened with that identity twice: by path before opening (a clear error before
//! the guest starts), and on the very handle handed to the guest (no window between
//! a check and an open). A mismatch fails the call. The folder is opened by walking
//! its path without following links ([`crate::nolinks`]), so a link planted before
//! a load (a restart, a reload) is refused there rather than pinned.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a file or folder is: its device and inode, as wasmtime-wasi's metadata hash.
pub(super) type Identity = (u64, u64);

/// One mount's folder, held open since load.
#[derive(Clone, Debug)]
struct Pin {
    host: PathBuf,
    /// The open folder and its identity, or why it could not be opened.
    held: Result<(Arc<std::fs::File>, Option<Identity>), OpenFailed>,
}

/// The folders of a tool's mounts, held open since its grants were set.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pins(Vec<Pin>);

impl Pins {
    /// Opens each folder of `hosts` and records what it is.
    pub(crate) fn new<'a>(hosts: impl IntoIterator<Item = &'a Path>) -> Self {
        Self(
            hosts
                .into_iter()
                .map(|host| Pin {
                    host: host.to_path_buf(),
                    held: open(host),
                })
                .collect(),
        )
    }

    /// The identity `host` had at load; an error when it could not be opened then,
    /// or was never pinned.
    pub(crate) fn identity(&self, host: &Path) -> Result<Option<Identity>, MountRefused> {
        let pin = (self.0.iter())
            .find(|pin| pin.host == host)
            .ok_or_else(|| MountRefused::NotPinned(host.to_path_buf()))?;
        match &pin.held {
            Ok((_, identity)) => Ok(*identity),
            Err(error) => Err(MountRefused::AtLoad(error.clone())),
        }
    }
}

/// Why a mount's folder could not be opened at load.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum OpenFailed {
    /// Walking its path without links failed: a link on the way, or a part missing.
    #[error("{}, then reload", .error.for_mount(.host))]
    Walk {
        /// The folder.
        host: PathBuf,
        /// What the walk met.
        error: Arc<crate::nolinks::NoLinks>,
    },
    /// Its metadata cannot be read.
    #[error(
        "cannot open {} ({error}); create the folder or fix the grant, then reload",
        .host.display()
    )]
    Unreadable {
        /// The folder.
        host: PathBuf,
        /// Why.
        error: Arc<std::io::Error>,
    },
    /// It is not a folder.
    #[error("{} is not a folder; mount a folder", .0.display())]
    NotAFolder(PathBuf),
}

/// Why a call may not use a mount.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum MountRefused {
    /// The folder was not pinned with the tool's grants.
    #[error(
        "{} was not opened when the tool was loaded; set the tool's grants again",
        .0.display()
    )]
    NotPinned(PathBuf),
    /// The folder could not be opened at load.
    #[error(transparent)]
    AtLoad(OpenFailed),
    /// The call cannot open the folder.
    #[error("cannot open {}: {source}", .host.display())]
    Open {
        /// The folder.
        host: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// WASI cannot preopen the folder.
    #[error("cannot open {}: {error}", .host.display())]
    Preopen {
        /// The folder.
        host: PathBuf,
        /// Why.
        error: wasmtime::Error,
    },
    /// The call cannot read what the folder it opened is.
    #[error("cannot read {}: {source}", .host.display())]
    Read {
        /// The folder.
        host: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The folder is not the one loaded.
    #[error(
        "the folder {} mounted at {guest} was replaced since the tool was loaded (by a \
         symbolic link, a move or a new folder), so the call is refused: it would reach \
         another folder than the one granted; check the folder, then reload piton \
         (restart it, or touch piton.toml)",
        .host.display()
    )]
    Replaced {
        /// The folder.
        host: PathBuf,
        /// Where the guest sees it.
        guest: String,
    },
}

fn open(host: &Path) -> Result<(Arc<std::fs::File>, Option<Identity>), OpenFailed> {
    // Walked without links: the folder pinned is the one the path names, not one a
    // link planted since leads to (the load refuses such a mount with the same words).
    let (dir, _) = crate::nolinks::open_folder(host).map_err(|error| OpenFailed::Walk {
        host: host.to_path_buf(),
        error: Arc::new(error),
    })?;
    let meta = dir.metadata().map_err(|error| OpenFailed::Unreadable {
        host: host.to_path_buf(),
        error: Arc::new(error),
    })?;
    if !meta.is_dir() {
        return Err(OpenFailed::NotAFolder(host.to_path_buf()));
    }
    Ok((Arc::new(dir), identity_of(&meta)))
}

/// A folder's device and inode, where the platform has them.
pub(crate) fn identity_of(meta: &std::fs::Metadata) -> Option<Identity> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Why a call may not use a mount: its folder is not the one loaded.
pub(crate) fn replaced(host: &Path, guest: &str) -> MountRefused {
    MountRefused::Replaced {
        host: host.to_path_buf(),
        guest: guest.to_owned(),
    }
}
