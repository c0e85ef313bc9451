//! Replacing a file whole, so that a reader, or a restart after a crash, finds the
//! old file or the new one and never a part: what `piton build` writes over a
//! component, piton.lock, a fetched component and the compile cache's entries.

use std::io;
use std::path::Path;

use tempfile::NamedTempFile;

/// Puts `temp`, written in full in `target`'s folder, in `target`'s place: its bytes
/// reach the disk before the rename, so a crash cannot leave `target` empty or short
/// (the compile cache maps its entries as code), and the folder's entry after it, so
/// the rename survives one. A folder whose entries cannot be synced (some
/// filesystems refuse) is only logged: the rename is done by then.
pub(crate) fn replace(temp: NamedTempFile, target: &Path) -> io::Result<()> {
    temp.as_file().sync_all()?;
    temp.persist(target).map_err(|e| e.error)?;
    let folder = folder_of(target);
    if let Err(error) = sync_folder(folder) {
        tracing::debug!(folder = %folder.display(), %error, "cannot sync a folder after a rename");
    }
    Ok(())
}

/// The folder `file` is in, where its temporary file goes: `.` for a bare name.
pub(crate) fn folder_of(file: &Path) -> &Path {
    file.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
}

#[cfg(unix)]
fn sync_folder(folder: &Path) -> io::Result<()> {
    std::fs::File::open(folder)?.sync_all()
}

/// Elsewhere a folder cannot be opened as a file; the rename is what there is.
#[cfg(not(unix))]
fn sync_folder(_folder: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn temp_in(folder: &Path, bytes: &[u8]) -> NamedTempFile {
        let mut temp = NamedTempFile::new_in(folder).unwrap();
        temp.write_all(bytes).unwrap();
        temp
    }

    fn names(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_new_bytes_take_the_old_files_place_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("tool.wasm");
        std::fs::write(&target, b"old").unwrap();
        replace(temp_in(dir.path(), b"new bytes"), &target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new bytes");
        assert_eq!(names(dir.path()), ["tool.wasm"]);
        // A file that did not exist is made.
        let fresh = dir.path().join("piton.lock");
        replace(temp_in(dir.path(), b"lock"), &fresh).unwrap();
        assert_eq!(std::fs::read(&fresh).unwrap(), b"lock");
    }

    #[test]
    fn a_bare_file_name_is_in_the_current_folder() {
        assert_eq!(folder_of(Path::new("piton.lock")), Path::new("."));
        assert_eq!(folder_of(Path::new("plugins/a.wasm")), Path::new("plugins"));
    }

    #[test]
    fn a_target_that_cannot_be_replaced_is_an_error_and_is_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        // A folder with a file in it cannot be renamed over.
        let target = dir.path().join("taken");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("inside"), b"kept").unwrap();
        let error = replace(temp_in(dir.path(), b"new"), &target).unwrap_err();
        assert!(!error.to_string().is_empty());
        assert_eq!(std::fs::read(target.join("inside")).unwrap(), b"kept");
        // The temporary file is removed with the error, not left beside it.
        assert_eq!(names(dir.path()), ["taken"]);
    }
}
