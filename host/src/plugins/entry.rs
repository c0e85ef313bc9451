//! What a plugins folder's entry is: the file it leads to, which no tool may be able
//! to change.
//!
//! The plugins folder itself is protected ([`crate::protected`]), but an entry in it
//! can be a symbolic link to a file elsewhere, or a hard link: a second name of the
//! same file. If that file, or the other name, lies in a folder some tool may write,
//! that tool can replace the plugin, and the next load (a restart, a reload) runs the
//! code the tool wrote. So an entry is refused when
//!
//! - it has more than one hard link (the other names could be anywhere, and are not
//!   found cheaply), or
//! - it is a link, and a "write" mount of any tool in piton.toml holds, or is on
//!   the way to, the file or a link it passes through.
//!
//! The file checked is the file read: the open file's device and inode are compared
//! with those of the path's target after the checks, so a link swapped meanwhile
//! refuses the entry.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::grants::Grants;
use crate::protected::Protected;
use crate::wasm::FileCheck;

/// The most links followed from one entry, as the system's own bound (`ELOOP`).
const MAX_LINKS: usize = 40;

/// The check of each entry of a plugins folder loaded with `config`.
pub(super) fn check(config: &Config) -> FileCheck {
    let writers: Vec<(String, Grants)> = config
        .tools
        .iter()
        .filter(|(_, tool)| !tool.grants.mounts.is_empty())
        .map(|(name, tool)| (name.clone(), tool.grants.clone()))
        .collect();
    Arc::new(move |path, file| Ok(check_entry(path, file, &writers)?))
}

/// Why an entry of the plugins folder is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
enum EntryError {
    /// Its metadata cannot be read.
    #[error("cannot read what it is ({0})")]
    Unreadable(#[source] std::io::Error),
    /// It has more than one name.
    #[error(
        "it has {0} hard links (names of the same file): another name, in a folder a tool may \
         write, would let that tool change the plugin; copy the file into the plugins folder \
         (cp, not ln) so that it has one name"
    )]
    HardLinks(u64),
    /// It is a link, and a tool's "write" mount reaches the file or a link on the way.
    #[error(
        "it is a symbolic link to {}, and piton.toml [tools.{tool}] mounts[{index}] ({}, mode \
         = \"write\") {how} {}: that tool could replace the plugin, and the next load would \
         run its code; copy the file into the plugins folder instead of linking it, or grant \
         that mount mode = \"read\"",
        .target.display(),
        .mount.display(),
        .place.display()
    )]
    Writable {
        /// The file the links lead to.
        target: PathBuf,
        /// The tool whose mount reaches it.
        tool: String,
        /// The mount's index in that tool's mounts.
        index: usize,
        /// The mount's folder.
        mount: PathBuf,
        /// "holds", "lies inside" or "is on the way to".
        how: &'static str,
        /// The link or file reached.
        place: PathBuf,
    },
    /// The path led elsewhere after the open.
    #[error("it changed while it was being loaded (a link pointed elsewhere); load again")]
    Changed,
    /// More links than the system follows.
    #[error("it leads through over {MAX_LINKS} symbolic links")]
    TooManyLinks,
    /// A link on the way cannot be read.
    #[error("cannot read the link {} ({error})", .at.display())]
    Link {
        /// The link.
        at: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
}

fn check_entry(
    path: &Path,
    file: &std::fs::File,
    writers: &[(String, Grants)],
) -> Result<(), EntryError> {
    let fail = EntryError::Unreadable;
    let meta = file.metadata().map_err(fail)?;
    let links = hard_links(&meta);
    if links > 1 {
        return Err(EntryError::HardLinks(links));
    }
    let chain = link_chain(path)?;
    if let Some(target) = chain.last() {
        let mut places = Protected::new();
        for place in &chain {
            places.add("it", place);
        }
        for (name, grants) in writers {
            let Some(reach) = places.reached_by(grants) else {
                continue;
            };
            return Err(EntryError::Writable {
                target: target.clone(),
                tool: name.clone(),
                index: reach.index,
                mount: reach.mount.to_path_buf(),
                how: reach.how,
                place: reach.place.to_path_buf(),
            });
        }
    }
    // The file read is the one checked: a link changed since the open is refused.
    let now = std::fs::metadata(path).map_err(fail)?;
    if identity(&now) != identity(&meta) {
        return Err(EntryError::Changed);
    }
    Ok(())
}

/// Each path the symbolic links from `path` lead to, in order (none for a file).
fn link_chain(path: &Path) -> Result<Vec<PathBuf>, EntryError> {
    let mut chain = Vec::new();
    let mut at = path.to_path_buf();
    loop {
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|meta| meta.is_symlink());
        if !is_link {
            return Ok(chain);
        }
        if chain.len() == MAX_LINKS {
            return Err(EntryError::TooManyLinks);
        }
        let target = std::fs::read_link(&at).map_err(|error| EntryError::Link {
            at: at.clone(),
            error,
        })?;
        at = match at.parent() {
            Some(folder) => folder.join(target),
            None => target,
        };
        chain.push(at.clone());
    }
}

#[cfg(unix)]
fn hard_links(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    meta.nlink()
}

#[cfg(not(unix))]
fn hard_links(_: &std::fs::Metadata) -> u64 {
    1
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::grants::{Mount, MountMode};

    fn granting(host: &Path, mode: MountMode) -> Vec<(String, Grants)> {
        let mounts = vec![Mount {
            host: host.to_path_buf(),
            guest: "/w".into(),
            mode,
        }];
        vec![(
            "t".to_owned(),
            Grants {
                mounts,
                ..Grants::default()
            },
        )]
    }

    fn checked(path: &Path, writers: &[(String, Grants)]) -> Result<(), EntryError> {
        check_entry(
            path,
            &std::fs::File::open(path).expect("the entry opens"),
            writers,
        )
    }

    #[test]
    fn a_link_into_a_write_mount_and_a_second_name_are_refused_and_the_rest_load() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (plugins, w, elsewhere) = (root.join("plugins"), root.join("w"), root.join("x"));
        for folder in [&plugins, &w, &elsewhere] {
            std::fs::create_dir(folder).unwrap();
        }
        std::fs::write(plugins.join("plain.wasm"), "").unwrap();
        std::fs::write(w.join("a.wasm"), "").unwrap();
        std::fs::write(elsewhere.join("b.wasm"), "").unwrap();
        std::os::unix::fs::symlink(w.join("a.wasm"), plugins.join("a.wasm")).unwrap();
        std::os::unix::fs::symlink("../x/b.wasm", plugins.join("b.wasm")).unwrap();
        // A link to a link in the mount that leads out of it.
        std::os::unix::fs::symlink("../x/b.wasm", w.join("hop.wasm")).unwrap();
        std::os::unix::fs::symlink(w.join("hop.wasm"), plugins.join("c.wasm")).unwrap();
        std::fs::write(elsewhere.join("d.wasm"), "").unwrap();
        std::fs::hard_link(elsewhere.join("d.wasm"), plugins.join("d.wasm")).unwrap();

        let write = granting(&w, MountMode::Write);
        for name in ["plain.wasm", "b.wasm"] {
            let checked = checked(&plugins.join(name), &write);
            assert!(checked.is_ok(), "{name}: {checked:?}");
        }
        for name in ["a.wasm", "c.wasm"] {
            let error = checked(&plugins.join(name), &write).unwrap_err();
            assert!(
                matches!(&error, EntryError::Writable { tool, index: 0, .. } if tool == "t"),
                "{name}: {error:?}"
            );
            let shown = error.to_string();
            assert!(shown.contains("[tools.t] mounts[0]"), "{name}: {shown}");
            assert!(
                shown.contains("copy the file into the plugins folder"),
                "{shown}"
            );
        }
        let error = checked(&plugins.join("d.wasm"), &write).unwrap_err();
        assert!(matches!(error, EntryError::HardLinks(2)), "{error:?}");
        assert!(error.to_string().contains("2 hard links"), "{error}");
        // A "read" mount cannot change the plugin.
        let read = granting(&w, MountMode::Read);
        for name in ["a.wasm", "c.wasm"] {
            let checked = checked(&plugins.join(name), &read);
            assert!(checked.is_ok(), "{name}: {checked:?}");
        }
    }
}
