//! What piton loads or trusts, which no tool may be granted write access to: the
//! plugins folder, every config file on the lookup path, and the compile cache.
//!
//! A tool that could write one of them could change what the next load (a reload
//! of `piton serve`, or the next start) runs: a `piton.toml` of its own (granting
//! itself anything, or starting an `[mcp.x] command` on the host), a new `.wasm`, or
//! precompiled native code in the cache. So [`Loader::load`](crate::loader::Loader::load) refuses a tool
//! whose grants have a "write" mount that
//!
//! - holds one of these places (an ancestor of it, or the place itself),
//! - lies inside one, or
//! - is on the way to one (a folder of its path, after symbolic links, lies in the
//!   mount, or a link the path is resolved through does: a call could swap that
//!   folder for a link, or point that link elsewhere).
//!
//! A mount's folder is taken as walked without links (`nolinks.rs`): a mount
//! (read or write) whose path holds a symbolic link is refused outright, since a tool
//! that may write where the link is could have planted it. A place is compared
//! canonical; one that does not exist yet is taken as its nearest existing ancestor,
//! canonical, with the rest of the path appended. "Read" mounts of these places are
//! allowed.
//!
//! A guest cannot make a mount a way to one of them later: its links never lead
//! outside its mount (wasmtime-wasi resolves every path beneath the mount's folder
//! and refuses absolute link targets), and piton never follows a link inside a mount
//! on its own behalf: it opens the places below by the paths checked here, a mount's
//! path is walked without links at every load, and a mount's folder is checked to be
//! the one loaded on every call.

use std::path::{Component, Path, PathBuf};

pub use crate::nolinks::LinkInPath;

use crate::grants::{Grants, MountMode};
use crate::nolinks::NoLinks;

/// A tool's grants that piton refuses: a mount (by its index in the grants'
/// mounts) whose path passes through a symbolic link, or a "write" mount that
/// reaches a protected place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtectedError {
    /// The mount's path passes through a symbolic link.
    #[error("mounts[{index}]: {link}")]
    Link {
        /// The mount's index.
        index: usize,
        /// The link.
        #[source]
        link: LinkInPath,
    },
    /// The "write" mount holds, lies inside or is on the way to a protected place.
    #[error(
        "mounts[{index}]: {} is granted mode = \"write\" and {how} {what} {}, which piton \
         protects: a call could change what piton loads or trusts; grant it mode = \"read\", \
         or mount a folder that neither holds nor lies inside {}",
        .mount.display(),
        .place.display(),
        .place.display()
    )]
    Write {
        /// The mount's index.
        index: usize,
        /// Its folder, as granted.
        mount: PathBuf,
        /// "holds", "lies inside" or "is on the way to".
        how: &'static str,
        /// What the place is, such as "the plugins folder".
        what: String,
        /// The place.
        place: PathBuf,
    },
}

/// The places piton loads or trusts, each with its absolute path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Protected {
    places: Vec<Place>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Place {
    /// What it is, for messages: "the plugins folder".
    what: String,
    /// The path as given, made absolute.
    path: PathBuf,
}

impl Protected {
    /// Nothing protected.
    pub fn new() -> Self {
        Self::default()
    }

    /// Protects `path` (relative to the current folder when relative), described as
    /// `what` in messages ("the plugins folder", "a config file").
    pub fn add(&mut self, what: &str, path: &Path) {
        let path = absolute(path);
        if !self.places.iter().any(|place| place.path == path) {
            self.places.push(Place {
                what: what.to_owned(),
                path,
            });
        }
    }

    /// The paths protected.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.places.iter().map(|place| place.path.as_path())
    }

    /// `Ok` when no mount of `grants` has a symbolic link in its path (see
    /// `nolinks.rs`) and no "write" mount holds, lies inside or leads to a
    /// protected place; else what is wrong and the fix, naming the mount (by its index
    /// in `grants.mounts`) and the link or the place.
    pub fn check(&self, grants: &Grants) -> Result<(), ProtectedError> {
        for (index, mount) in grants.mounts.iter().enumerate() {
            if let Err(NoLinks::Link { link, target }) = crate::nolinks::real_folder(&mount.host) {
                return Err(ProtectedError::Link {
                    index,
                    link: LinkInPath::new(&mount.host, link, target),
                });
            }
        }
        let Some(reach) = self.reached_by(grants) else {
            return Ok(());
        };
        Err(ProtectedError::Write {
            index: reach.index,
            mount: reach.mount.to_path_buf(),
            how: reach.how,
            what: reach.what.to_owned(),
            place: reach.place.to_path_buf(),
        })
    }

    /// The first "write" mount of `grants` that holds, lies inside or leads to a
    /// protected place, with how.
    pub(crate) fn reached_by<'a>(&'a self, grants: &'a Grants) -> Option<Reach<'a>> {
        for (index, mount) in grants.mounts.iter().enumerate() {
            if mount.mode != MountMode::Write {
                continue;
            }
            // The folder as walked without links (a link is refused by `check`); one
            // missing now is taken as written (a call would fail on its pin).
            let host =
                crate::nolinks::real_folder(&mount.host).unwrap_or_else(|_| absolute(&mount.host));
            for place in &self.places {
                if let Some(how) = relation(&host, &place.path) {
                    return Some(Reach {
                        index,
                        mount: &mount.host,
                        how,
                        what: &place.what,
                        place: &place.path,
                    });
                }
            }
        }
        None
    }
}

/// Whether a call with write access to the folder `mount` can change what is at
/// `place`, or where its path leads: how the mount reaches it ("holds" it, or "is on
/// the way to" it), or `None`. A mount lying inside `place` does not: a call reaches
/// nothing of `place` outside the mount. For folders piton writes into that are not
/// protected from grants, such as `piton call --image-dir`.
pub fn write_mount_reaches(mount: &Path, place: &Path) -> Option<&'static str> {
    let mount = mount.canonicalize().unwrap_or_else(|_| absolute(mount));
    relation(&mount, &absolute(place)).filter(|how| *how != "lies inside")
}

/// A "write" mount that reaches a protected place.
#[derive(Debug)]
pub(crate) struct Reach<'a> {
    /// Its index in the grants' mounts.
    pub(crate) index: usize,
    /// Its folder, as granted.
    pub(crate) mount: &'a Path,
    /// "holds", "lies inside" or "is on the way to".
    pub(crate) how: &'static str,
    /// What the place is, such as "the plugins folder".
    pub(crate) what: &'a str,
    /// The place.
    pub(crate) place: &'a Path,
}

/// How the folder `mount` (canonical) reaches `place`, if it does: it holds it,
/// lies inside it, or holds a folder on its way.
fn relation(mount: &Path, place: &Path) -> Option<&'static str> {
    let resolved = resolve(place);
    if resolved.starts_with(mount) {
        return Some("holds");
    }
    if mount.starts_with(&resolved) {
        return Some("lies inside");
    }
    // Each folder on the way, resolved: one in the mount could be swapped for a
    // link by a call, and the path would lead where the call chose.
    let mut way = place.parent();
    while let Some(folder) = way {
        if resolve(folder).starts_with(mount) {
            return Some("is on the way to");
        }
        way = folder.parent();
    }
    // Each link the path is resolved through (a link's own target's too): one that
    // lies in the mount could be pointed elsewhere by a call.
    if links_crossed(place)
        .iter()
        .any(|link| link.starts_with(mount))
    {
        return Some("is on the way to");
    }
    None
}

/// Where each symbolic link met while resolving `path` lies (its folder resolved, and
/// its name), in the order met; at most 40 links are followed, as the system does.
fn links_crossed(path: &Path) -> Vec<PathBuf> {
    let mut links = Vec::new();
    let mut parts: Vec<std::ffi::OsString> = path
        .components()
        .rev()
        .map(|part| part.as_os_str().to_owned())
        .collect();
    let mut at = PathBuf::new();
    while let Some(part) = parts.pop() {
        let next = match Path::new(&part).components().next() {
            Some(Component::Normal(_)) => at.join(&part),
            Some(Component::ParentDir) => {
                at.pop();
                continue;
            }
            Some(Component::CurDir) | None => continue,
            Some(_) => PathBuf::from(&part),
        };
        let link = std::fs::symlink_metadata(&next).is_ok_and(|meta| meta.is_symlink());
        let target = link.then(|| std::fs::read_link(&next).ok()).flatten();
        match target {
            Some(target) if links.len() < 40 => {
                links.push(next);
                parts.extend(target.components().rev().map(|p| p.as_os_str().to_owned()));
            }
            _ => at = next,
        }
    }
    links
}

/// `path` with links resolved: its nearest existing ancestor canonical, and the rest
/// appended (`..` in the rest taken lexically, as it names nothing yet).
fn resolve(path: &Path) -> PathBuf {
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut out = canonical;
            for part in rest.iter().rev() {
                push(&mut out, part);
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last.as_os_str().to_owned());
                existing = parent;
            }
            _ => return lexical(path),
        }
    }
}

fn push(out: &mut PathBuf, part: &std::ffi::OsStr) {
    match part.to_str() {
        Some("..") => {
            out.pop();
        }
        Some(".") => {}
        _ => out.push(part),
    }
}

/// `path` without `.` and with `..` taken lexically.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` made absolute against the current folder (left as is if that is unknown).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Mount;

    fn grants(host: &Path, mode: MountMode) -> Grants {
        Grants {
            mounts: vec![Mount {
                host: host.to_path_buf(),
                guest: "/data".into(),
                mode,
            }],
            ..Grants::default()
        }
    }

    #[test]
    fn a_write_mount_holding_inside_or_on_the_way_is_refused_and_read_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let plugins = root.join("a/plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        let mut protected = Protected::new();
        protected.add("the plugins folder", &plugins);
        // Not there yet: protected all the same.
        protected.add("a config file", &root.join("b/piton.toml"));

        for (host, how) in [
            (root.clone(), "holds"),
            (root.join("a"), "holds"),
            (plugins.clone(), "holds"),
            (root.join("b"), "holds"),
        ] {
            std::fs::create_dir_all(&host).unwrap();
            let error = protected
                .check(&grants(&host, MountMode::Write))
                .unwrap_err();
            assert!(
                matches!(&error, ProtectedError::Write { index: 0, how: h, .. } if *h == how),
                "{error:?}"
            );
            let shown = error.to_string();
            assert!(shown.contains(how), "{shown}");
            assert!(shown.contains("mode = \"read\""), "{shown}");
            assert!(protected.check(&grants(&host, MountMode::Read)).is_ok());
        }
        let inside = plugins.join("data");
        std::fs::create_dir(&inside).unwrap();
        let error = protected
            .check(&grants(&inside, MountMode::Write))
            .unwrap_err();
        let ProtectedError::Write { how, place, .. } = &error else {
            panic!("{error:?}")
        };
        assert_eq!((*how, place), ("lies inside", &plugins));
        let shown = error.to_string();
        assert!(shown.contains("lies inside"), "{shown}");
        assert!(shown.contains(&plugins.display().to_string()), "{shown}");

        let beside = root.join("c");
        std::fs::create_dir(&beside).unwrap();
        assert!(protected.check(&grants(&beside, MountMode::Write)).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_write_mount_holding_a_link_on_the_way_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let data = root.join("data");
        let real = root.join("real");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(real.join("plugins")).unwrap();
        // data/link -> ../real: the plugins folder is named through the mount.
        std::os::unix::fs::symlink("../real", data.join("link")).unwrap();
        let mut protected = Protected::new();
        protected.add("the plugins folder", &data.join("link/plugins"));
        let error = protected
            .check(&grants(&data, MountMode::Write))
            .unwrap_err();
        assert!(
            matches!(
                error,
                ProtectedError::Write {
                    how: "is on the way to",
                    ..
                }
            ),
            "{error:?}"
        );
        // `real` itself is not on the way through the mount.
        let mut protected = Protected::new();
        protected.add("the plugins folder", &real.join("plugins"));
        assert!(protected.check(&grants(&data, MountMode::Write)).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_write_mount_holding_a_link_that_a_place_is_reached_through_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("w")).unwrap();
        std::fs::create_dir_all(root.join("safe/c/plugins")).unwrap();
        // root/a -> w/hop/c, and w/hop -> ../safe: the plugins folder is reached through
        // a link inside the mount, which a call could point elsewhere.
        std::os::unix::fs::symlink("../safe", root.join("w/hop")).unwrap();
        std::os::unix::fs::symlink("w/hop/c", root.join("a")).unwrap();
        let mut protected = Protected::new();
        protected.add("the plugins folder", &root.join("a/plugins"));
        let error = protected
            .check(&grants(&root.join("w"), MountMode::Write))
            .unwrap_err();
        assert!(
            matches!(
                error,
                ProtectedError::Write {
                    how: "is on the way to",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            protected
                .check(&grants(&root.join("w"), MountMode::Read))
                .is_ok()
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_mount_whose_path_holds_a_link_is_refused_read_or_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        let protected = Protected::new();
        for mode in [MountMode::Read, MountMode::Write] {
            for host in [root.join("link"), root.join("link/sub")] {
                let error = protected.check(&grants(&host, mode)).unwrap_err();
                let ProtectedError::Link { index: 0, link } = &error else {
                    panic!("{error:?}")
                };
                assert_eq!(link.link, root.join("link"));
                assert_eq!(link.target, PathBuf::from("real"));
                let shown = error.to_string();
                assert!(shown.starts_with("mounts[0]: "), "{shown}");
                assert!(
                    shown.contains(&format!("symbolic link {}", root.join("link").display())),
                    "{shown}"
                );
                assert!(
                    shown.contains("point the grant at the real folder"),
                    "{shown}"
                );
                assert!(
                    shown.contains(&root.join("real").display().to_string()),
                    "{shown}"
                );
            }
            assert_eq!(
                protected.check(&grants(&root.join("real/sub"), mode)),
                Ok(())
            );
        }
    }

    #[test]
    fn resolve_appends_what_does_not_exist() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(resolve(&root.join("x/y/../z")), root.join("x/z"));
        assert_eq!(resolve(&root), root);
    }
}
