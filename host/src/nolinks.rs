//! Host folders reached without following a symbolic link in any part of their path.
//!
//! A mount is granted by path, and the path is read again at every load (a restart,
//! a reload of `piton serve`). A tool with write access to a folder on that path can
//! replace a part of it by a link between two loads (`w/sub` becomes
//! `sub -> ../outside`), and a path resolved through links would then lead the grant
//! where the tool chose. So a mount's path is walked one folder at a time from `/`,
//! each opened beneath the last without following a link (`O_NOFOLLOW`), and a link
//! met on the way refuses the path, naming the link. The walk is also the open: the
//! folder pinned at load ([`crate::wasm`]'s pins) is the one the walk reached.
//!
//! Any link is refused, including one the user made on purpose (`/home ->
//! /data/home`, macOS's `/tmp -> /private/tmp`): piton cannot tell it from one a tool
//! planted, so the user writes the real path instead (the error names it).

use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// Why a folder could not be reached without links.
#[derive(Debug)]
pub(crate) enum NoLinks {
    /// A part of the path is a symbolic link.
    Link {
        /// The link: the path up to and with it.
        link: PathBuf,
        /// What it points to, as written in it.
        target: PathBuf,
    },
    /// A part of the path cannot be opened as a folder (missing, not a folder, no
    /// permission).
    Io {
        /// The path up to and with the part that failed.
        at: PathBuf,
        error: std::io::Error,
    },
}

impl NoLinks {
    /// What is wrong with the folder `path` granted as a mount, and the fix.
    pub(crate) fn for_mount(&self, path: &Path) -> String {
        match self {
            Self::Link { link, target } => {
                LinkInPath::new(path, link.clone(), target.clone()).to_string()
            }
            Self::Io { at, error } => format!(
                "{} cannot be used ({}: {error}); create the folder or fix the path",
                path.display(),
                at.display()
            ),
        }
    }
}

/// A mount's folder whose path passes through a symbolic link.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} passes through the symbolic link {} (-> {}); piton follows no link in a mount's path, \
     since a tool that may write where the link is could have made it to lead the grant \
     elsewhere; point the grant at the real folder{}",
    .path.display(),
    .link.display(),
    .target.display(),
    .real.as_ref().map(|real| format!(" ({})", real.display())).unwrap_or_default()
)]
pub struct LinkInPath {
    /// The mount's folder, as granted.
    pub path: PathBuf,
    /// The link: the path up to and with it.
    pub link: PathBuf,
    /// What it points to, as written in it.
    pub target: PathBuf,
    /// The folder the path leads to through the link, if it exists.
    pub real: Option<PathBuf>,
}

impl LinkInPath {
    /// `path`'s link `link` to `target`, with the folder it leads to now.
    pub(crate) fn new(path: &Path, link: PathBuf, target: PathBuf) -> Self {
        Self {
            path: path.to_path_buf(),
            link,
            target,
            real: path.canonicalize().ok(),
        }
    }
}

/// The folder of a mount written `given` in piton.toml, made absolute: as walked
/// without links, or, when a link is met, as given (the tool is then refused at load
/// by [`crate::protected::Protected::check`], which stops that tool and not every
/// tool of the file); an error naming the fix when it cannot be used at all.
pub(crate) fn mount_host(given: &Path) -> Result<PathBuf, MountError> {
    match real_folder(given) {
        Ok(real) => Ok(real),
        Err(NoLinks::Link { .. }) => {
            Ok(std::path::absolute(given).unwrap_or_else(|_| given.to_path_buf()))
        }
        Err(NoLinks::Io { .. }) if given.is_file() => {
            Err(MountError::NotAFolder(given.to_path_buf()))
        }
        Err(NoLinks::Io { at, error }) => Err(MountError::Unusable {
            given: given.to_path_buf(),
            at,
            error,
        }),
    }
}

/// Why a mount's host folder cannot be used at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MountError {
    /// The path is a file.
    #[error("{} is not a folder; mount a folder", .0.display())]
    NotAFolder(PathBuf),
    /// A part of the path is missing, not a folder, or not permitted.
    #[error(
        "{} cannot be used ({}: {error}); create the folder or fix the path (relative paths \
         are relative to piton.toml)",
        .given.display(),
        .at.display()
    )]
    Unusable {
        /// The path as written, joined to piton.toml's folder.
        given: PathBuf,
        /// The path up to and with the part that failed.
        at: PathBuf,
        /// Why that part failed.
        #[source]
        error: std::io::Error,
    },
}

/// `path` made absolute, with each part checked to be a folder and no link: the
/// path as walked (`..` taking the folder walked before it), or why not.
pub(crate) fn real_folder(path: &Path) -> Result<PathBuf, NoLinks> {
    open_folder(path).map(|(_, real)| real)
}

/// Opens the folder `path` by walking it from `/` without following links; the open
/// folder and its path as walked.
pub(crate) fn open_folder(path: &Path) -> Result<(File, PathBuf), NoLinks> {
    let absolute = std::path::absolute(path).map_err(|error| NoLinks::Io {
        at: path.to_path_buf(),
        error,
    })?;
    walk(&absolute)
}

#[cfg(unix)]
fn walk(absolute: &Path) -> Result<(File, PathBuf), NoLinks> {
    use rustix::fs::{Mode, OFlags, openat, readlinkat};
    // Only a place in the tree, not its contents: no read permission needed on the
    // folders above the mount.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let io = |at: &Path, error: rustix::io::Errno| NoLinks::Io {
        at: at.to_path_buf(),
        error: error.into(),
    };
    let root = Path::new("/");
    let mut folders =
        vec![openat(rustix::fs::CWD, root, flags, Mode::empty()).map_err(|e| io(root, e))?];
    let mut real = PathBuf::from("/");
    for part in absolute.components() {
        let name = match part {
            Component::Normal(name) => name,
            Component::ParentDir => {
                if folders.len() > 1 {
                    folders.pop();
                    real.pop();
                }
                continue;
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
        };
        let Some(at) = folders.last() else {
            return Err(io(&real, rustix::io::Errno::NOENT));
        };
        match openat(at, name, flags, Mode::empty()) {
            Ok(folder) => {
                folders.push(folder);
                real.push(name);
            }
            Err(error) => {
                real.push(name);
                if let Ok(target) = readlinkat(at, name, Vec::new()) {
                    use std::os::unix::ffi::OsStrExt as _;
                    let target = std::ffi::OsStr::from_bytes(target.as_bytes());
                    return Err(NoLinks::Link {
                        link: real,
                        target: PathBuf::from(target),
                    });
                }
                return Err(io(&real, error));
            }
        }
    }
    let last = folders
        .pop()
        .ok_or_else(|| io(&real, rustix::io::Errno::NOENT))?;
    Ok((File::from(last), real))
}

#[cfg(not(unix))]
fn walk(absolute: &Path) -> Result<(File, PathBuf), NoLinks> {
    let mut real = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::ParentDir => {
                real.pop();
                continue;
            }
            Component::CurDir => continue,
            other => real.push(other.as_os_str()),
        }
        let meta = std::fs::symlink_metadata(&real).map_err(|error| NoLinks::Io {
            at: real.clone(),
            error,
        })?;
        if meta.is_symlink() {
            let target = std::fs::read_link(&real).unwrap_or_default();
            return Err(NoLinks::Link { link: real, target });
        }
    }
    let file = File::open(&real).map_err(|error| NoLinks::Io {
        at: real.clone(),
        error,
    })?;
    Ok((file, real))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_links_is_walked_and_a_link_anywhere_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("file"), "").unwrap();
        std::os::unix::fs::symlink("a", root.join("link")).unwrap();

        assert_eq!(real_folder(&root.join("a/b")).unwrap(), root.join("a/b"));
        assert_eq!(real_folder(&root.join("a/./b/..")).unwrap(), root.join("a"));
        for (path, link) in [
            (root.join("link"), root.join("link")),
            (root.join("link/b"), root.join("link")),
            // `..` after a link does not skip it.
            (root.join("link/../a"), root.join("link")),
        ] {
            match real_folder(&path) {
                Err(NoLinks::Link {
                    link: found,
                    target,
                }) => {
                    assert_eq!((found, target), (link, PathBuf::from("a")), "{path:?}")
                }
                other => panic!("{path:?}: {other:?}"),
            }
            let message = real_folder(&path).unwrap_err().for_mount(&path);
            assert!(
                message.contains("point the grant at the real folder"),
                "{message}"
            );
        }
        for path in [root.join("missing"), root.join("file")] {
            assert!(
                matches!(real_folder(&path), Err(NoLinks::Io { .. })),
                "{path:?}"
            );
        }
    }
}
