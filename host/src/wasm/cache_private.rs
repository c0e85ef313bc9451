//! Whether the compile cache is private: its entries are native code that piton maps
//! and runs as itself, so whoever can write the folder or an entry can run code as
//! piton. A folder or entry is used only when this user (or root, who can replace
//! piton itself anyway) owns it and no one else can write it: no group or other
//! write bit. Otherwise piton compiles without it and says what to do.

use std::fs::Metadata;
use std::path::Path;

/// Why a folder or entry of the cache is not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotPrivate {
    /// Another user owns it.
    Owner(u32),
    /// Others can write it (its permission bits).
    Writable(u32),
}

impl NotPrivate {
    /// Why, and the fix, for the cache folder `dir`.
    pub(crate) fn of_folder(self, dir: &Path) -> String {
        let dir = dir.display();
        match self {
            Self::Owner(uid) => format!(
                "the compile cache folder {dir} is owned by user {uid}, not by this user ({}): \
                 whoever owns it can run code as piton, so piton compiles without it. Remove \
                 it (piton makes it again, private) or set PITON_CACHE_DIR to a folder of your \
                 own",
                euid()
            ),
            Self::Writable(mode) => format!(
                "the compile cache folder {dir} can be written by others (mode {mode:03o}): \
                 whoever can write it can run code as piton, so piton compiles without it. \
                 Run `chmod 700 {dir}` and `piton cache clean`, or set PITON_CACHE_DIR to a \
                 private folder"
            ),
        }
    }

    /// Why, for the cache entry `path`.
    pub(crate) fn of_entry(self, path: &Path) -> String {
        let path = path.display();
        match self {
            Self::Owner(uid) => format!(
                "not using the compile cache entry {path}: it is owned by user {uid}, not by \
                 this user ({}); it is compiled again and replaced",
                euid()
            ),
            Self::Writable(mode) => format!(
                "not using the compile cache entry {path}: others can write it (mode \
                 {mode:03o}); it is compiled again and replaced"
            ),
        }
    }
}

/// Whether what `meta` describes (of a folder, or of an entry, not followed) is
/// private to this user.
#[cfg(unix)]
pub(crate) fn check(meta: &Metadata) -> Result<(), NotPrivate> {
    use std::os::unix::fs::MetadataExt as _;
    let owner = meta.uid();
    if owner != euid() && owner != 0 {
        return Err(NotPrivate::Owner(owner));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(NotPrivate::Writable(mode));
    }
    Ok(())
}

/// Elsewhere the folder's own access rules stand.
#[cfg(not(unix))]
pub(crate) fn check(_meta: &Metadata) -> Result<(), NotPrivate> {
    Ok(())
}

/// Whether the folder `dir` (followed, if a link) is private to this user; why not,
/// with the fix, as a sentence.
pub(crate) fn check_folder(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(std::io::Error::other(format!(
            "the compile cache {} is not a folder",
            dir.display()
        )));
    }
    check(&meta).map_err(|why| std::io::Error::other(why.of_folder(dir)))
}

#[cfg(unix)]
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

#[cfg(not(unix))]
fn euid() -> u32 {
    0
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn with_mode(path: &Path, mode: u32) -> Metadata {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        std::fs::metadata(path).expect("metadata")
    }

    #[test]
    fn a_folder_or_file_of_ours_is_private_unless_others_can_write_it() {
        let dir = tempfile::tempdir().expect("dir");
        for mode in [0o700, 0o755, 0o500] {
            assert_eq!(check(&with_mode(dir.path(), mode)), Ok(()), "{mode:o}");
        }
        for mode in [0o777, 0o770, 0o720, 0o702, 0o1777] {
            assert_eq!(
                check(&with_mode(dir.path(), mode)),
                Err(NotPrivate::Writable(mode)),
                "{mode:o}"
            );
        }
        let err = check_folder(dir.path()).expect_err("writable");
        assert!(err.to_string().contains("chmod 700"), "{err}");
        with_mode(dir.path(), 0o700);
        let file = dir.path().join("f");
        std::fs::write(&file, "x").expect("write");
        assert_eq!(check(&with_mode(&file, 0o600)), Ok(()));
        assert_eq!(
            check(&with_mode(&file, 0o666)),
            Err(NotPrivate::Writable(0o666))
        );
        assert!(check_folder(&file).is_err());
    }
}
