//! Where `piton call` saves the images a tool returns.
//!
//! Each image is a new file, created with `create_new` (`O_CREAT | O_EXCL`) and
//! `O_NOFOLLOW` under a name with random letters in it: an existing file or a link
//! planted at a name piton might use is never written through, and no name can be
//! planted ahead. The folder is `--image-dir` if given, else a folder piton makes
//! for the call in the temp folder, readable by the user alone (0700), with a random
//! name and made only if no such folder exists. Neither may be in a folder a loaded
//! tool can write (a write mount that holds it or a folder on its way): a call could
//! plant links there, or change an image after it was saved.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::grants::FsAccess;
use crate::protected::write_mount_reaches;
use crate::registry::Registry;

/// Where the images of one call go.
pub(super) struct ImageFolder {
    /// `--image-dir`, checked; `None`: a folder made in the temp folder.
    given: Option<PathBuf>,
    /// The folder made in the temp folder, once made.
    made: Option<PathBuf>,
    /// The tools that may write somewhere, each with a folder it may write.
    write_mounts: Vec<(String, PathBuf)>,
}

impl ImageFolder {
    /// The folder for images of `registry`'s tools: `given` (`--image-dir`), or a new
    /// one in the temp folder. Err: `given` is in a tool's write mount, saying which
    /// and the fix.
    pub(super) fn new(registry: &Registry, given: Option<PathBuf>) -> Result<Self, String> {
        let mut write_mounts = Vec::new();
        for name in registry.names() {
            let Some(sandbox) = registry.get(&name).and_then(|tool| tool.sandbox()) else {
                continue;
            };
            for (mount, access) in sandbox.capabilities.mounts {
                if access != FsAccess::ReadOnly {
                    write_mounts.push((name.clone(), mount.host));
                }
            }
        }
        let folder = Self {
            given,
            made: None,
            write_mounts,
        };
        if let Some(dir) = &folder.given {
            folder.not_writable("--image-dir", dir)?;
        }
        Ok(folder)
    }

    /// Saves `data`, image `index` of `tool`'s result, in a new file ending in
    /// `.extension`; its path, or why it could not be saved.
    pub(super) fn save(
        &mut self,
        tool: &str,
        index: usize,
        extension: &str,
        data: &[u8],
    ) -> Result<PathBuf, String> {
        let dir = self.folder()?;
        let tool: String = (tool.chars())
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
                _ => '_',
            })
            .collect();
        let prefix = format!("piton-{tool}-{index}-");
        let suffix = format!(".{extension}");
        let mut file = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(&suffix)
            .rand_bytes(12)
            .make_in(&dir, open_new)
            .map_err(|e| format!("cannot save the image in {}: {e}", dir.display()))?;
        let path = file.path().to_path_buf();
        file.as_file_mut()
            .write_all(data)
            .and_then(|()| file.as_file_mut().flush())
            .map_err(|e| format!("cannot save the image to {}: {e}", path.display()))?;
        // Written: the file stays (until then, a failure removes it).
        file.keep()
            .map(|(_, path)| path)
            .map_err(|e| format!("cannot keep the image {}: {e}", path.display()))
    }

    /// The folder to save in: `--image-dir`, or the one made in the temp folder
    /// (made now if it is not yet).
    fn folder(&mut self) -> Result<PathBuf, String> {
        if let Some(dir) = self.given.as_ref().or(self.made.as_ref()) {
            return Ok(dir.clone());
        }
        let temp = std::env::temp_dir();
        self.not_writable("the temp folder", &temp)
            .map_err(|e| format!("cannot save the image: {e}"))?;
        let mut builder = tempfile::Builder::new();
        builder.prefix("piton-images-").rand_bytes(12);
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
        let made = builder
            .tempdir_in(&temp)
            .map_err(|e| {
                format!(
                    "cannot make a folder for the image in the temp folder {}: {e}; give \
                     --image-dir a folder to save images in",
                    temp.display()
                )
            })?
            .keep();
        self.made = Some(made.clone());
        Ok(made)
    }

    /// `Ok` unless a loaded tool may write `dir` or a folder on its way; else the
    /// error naming `what` (`dir`), the tool, its mount and the fix.
    fn not_writable(&self, what: &str, dir: &Path) -> Result<(), String> {
        for (tool, mount) in &self.write_mounts {
            if let Some(how) = write_mount_reaches(mount, dir) {
                return Err(format!(
                    "{what} {} is not used for images: tool `{tool}`'s write mount {} {how} \
                     it, so a call of that tool could plant links there or change a saved \
                     image; give --image-dir a folder outside every tool's write mount \
                     (`piton inspect NAME` shows a tool's mounts)",
                    dir.display(),
                    mount.display(),
                ));
            }
        }
        Ok(())
    }
}

/// Creates `path` for writing, failing if anything is there: a file, or a link
/// (which is not followed).
fn open_new(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed());
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_new_file_is_never_one_that_exists_nor_a_link() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("piton.toml");
        std::fs::write(&target, "kept").expect("write");
        let link = dir.path().join("link.png");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        let dangling = dir.path().join("dangling.png");
        std::os::unix::fs::symlink(dir.path().join("new"), &dangling).expect("link");
        for path in [&target, &link, &dangling] {
            let error = open_new(path).expect_err("refused");
            assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists, "{path:?}");
        }
        assert_eq!(std::fs::read_to_string(&target).expect("reads"), "kept");
        assert!(
            !dir.path().join("new").exists(),
            "a dangling link was followed"
        );
        let new = dir.path().join("image.png");
        open_new(&new)
            .expect("a new file")
            .write_all(b"png")
            .expect("write");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&new).expect("meta").permissions(),
        );
        assert_eq!(mode & 0o077, 0, "only the user reads it");
    }

    #[test]
    fn each_image_gets_a_new_name_that_a_tool_name_cannot_lead_elsewhere() {
        let registry = Registry::new();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut given = ImageFolder::new(&registry, Some(dir.path().into())).expect("allowed");
        let a = given.save("t/../x", 0, "png", b"a").expect("saved");
        let b = given.save("t/../x", 0, "png", b"b").expect("saved");
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(dir.path()));
        let name = a.file_name().and_then(|n| n.to_str()).expect("a name");
        assert!(
            name.starts_with("piton-t____x-0-") && name.ends_with(".png"),
            "{name}"
        );
        assert_eq!(std::fs::read(&b).expect("reads"), b"b");
    }
}
