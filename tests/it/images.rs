//! Where `piton call` saves a returned image. It used to write
//! `piton-NAME-PID-INDEX.EXT` in the temp folder with a plain write, which follows a
//! link: a tool with write access to the temp folder could plant such links for the
//! next process ids, and the save replaced what they pointed at (a protected
//! piton.toml). Now each image is a new file (never a link followed, never one that
//! exists) with an unpredictable name, in a private folder piton makes, or in the
//! `--image-dir` the user gives, which may not lie in any tool's write mount.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use piton_tests::guests;

use crate::support::*;

/// What piton.toml holds before and (unless a save went through a link) after.
const CONFIG: &str = "# the user's grants: protected from every tool\n[tools.test_image_content]\n";

/// A folder holding `plugins/` (the image tool, and fs_write), `piton.toml` and
/// `tmp/`, a temp folder for the call.
struct Setup {
    root: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let plugins = root.path().join("plugins");
        std::fs::create_dir_all(&plugins).expect("plugins folder");
        std::fs::create_dir_all(root.path().join("tmp")).expect("tmp folder");
        std::fs::copy(
            guests::CONFORMANCE_IMAGE_CONTENT,
            plugins.join("image.wasm"),
        )
        .expect("copy");
        std::fs::copy(guests::HOSTILE_FS_WRITE, plugins.join("fs_write.wasm")).expect("copy");
        std::fs::write(root.path().join("piton.toml"), CONFIG).expect("write piton.toml");
        Self { root }
    }

    /// Adds `lines` to piton.toml.
    fn grant(&self, lines: &str) {
        std::fs::write(self.path("piton.toml"), format!("{CONFIG}{lines}")).expect("write");
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// piton.toml still holds what the test wrote (it starts with [`CONFIG`]).
    fn config_unchanged(&self) {
        let now = std::fs::read(self.path("piton.toml")).expect("piton.toml is there");
        let now = String::from_utf8_lossy(&now);
        assert!(
            now.starts_with(CONFIG),
            "piton.toml was overwritten: {now:?}"
        );
    }

    /// Runs `piton call test_image_content --plugins plugins --config piton.toml
    /// EXTRA` with TMPDIR=`tmp`; before it starts, `plant` is given its process id
    /// (the shell that starts it execs piton, keeping its id).
    fn call(&self, extra: &[&std::ffi::OsStr], plant: impl FnOnce(u32)) -> Output {
        let mut command = std::process::Command::new("sh");
        let piton = piton();
        for (key, value) in piton.get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command
            .current_dir(piton.get_current_dir().expect("a folder"))
            .env("TMPDIR", self.path("tmp"))
            .args([
                "-c",
                "read go && exec \"$0\" \"$@\"",
                env!("CARGO_BIN_EXE_piton"),
            ])
            .args(["call", "test_image_content", "--plugins"])
            .arg(self.path("plugins"))
            .arg("--config")
            .arg(self.path("piton.toml"))
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("sh starts");
        plant(child.id());
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "go").expect("start piton");
        drop(stdin);
        child.wait_with_output().expect("piton runs")
    }
}

/// Links at the names the old code would save image 0 of test_image_content of
/// process `pid` (and the next few ids) as, in `dir`, each to `target`.
fn plant_links(dir: &Path, pid: u32, target: &Path) {
    for id in pid..pid + 8 {
        let link = dir.join(format!("piton-test_image_content-{id}-0.png"));
        std::os::unix::fs::symlink(target, link).expect("plant a link");
    }
}

/// The path `piton call` says it saved the image to; the file holds a PNG, is no
/// link, and is none of the planted names.
fn saved(out: &Output) -> PathBuf {
    let text = stdout(out);
    assert!(out.status.success(), "{text}{}", stderr(out));
    let line = text
        .lines()
        .find(|l| l.starts_with("image (image/png,"))
        .unwrap_or_else(|| panic!("{text}"));
    let path = PathBuf::from(line.rsplit(" saved to ").next().expect("a path"));
    let meta =
        std::fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(meta.file_type().is_file(), "{}", path.display());
    let png = std::fs::read(&path).expect("reads");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{text}");
    let name = path
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("piton-test_image_content-") && name.ends_with(".png"),
        "{name}"
    );
    path
}

#[cfg(unix)]
#[test]
fn links_planted_at_the_image_names_in_the_temp_folder_are_not_followed() {
    let setup = Setup::new();
    let out = setup.call(&[], |pid| {
        plant_links(&setup.path("tmp"), pid, Path::new("../piton.toml"))
    });
    setup.config_unchanged();
    let path = saved(&out);
    // In a folder of its own, made for this call and private to the user.
    let folder = path.parent().expect("a folder");
    assert_eq!(
        folder.parent(),
        Some(setup.path("tmp").as_path()),
        "{}",
        path.display()
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(folder).expect("meta").permissions(),
    );
    assert_eq!(mode & 0o777, 0o700, "{}", folder.display());
}

#[cfg(unix)]
#[test]
fn links_planted_in_the_image_dir_are_not_followed_and_the_name_is_not_predictable() {
    let setup = Setup::new();
    let images = setup.path("images");
    std::fs::create_dir(&images).expect("images folder");
    let out = setup.call(&["--image-dir".as_ref(), images.as_os_str()], |pid| {
        plant_links(&images, pid, &setup.path("piton.toml"));
    });
    setup.config_unchanged();
    let path = saved(&out);
    assert_eq!(path.parent(), Some(images.as_path()));
    // Two calls: two names.
    let again = saved(&setup.call(&["--image-dir".as_ref(), images.as_os_str()], |_| {}));
    assert_ne!(path, again);
}

/// piton.toml lines granting fs_write write access to `folder`.
fn fs_write_on(folder: &Path) -> String {
    format!(
        "[tools.fs_write]\nmounts = [{{ host = {:?}, guest = \"/w\", mode = \"write\" }}]\n",
        folder.display().to_string()
    )
}

#[cfg(unix)]
#[test]
fn an_image_dir_in_a_tools_write_mount_is_refused_before_the_call() {
    let setup = Setup::new();
    let work = setup.path("work");
    std::fs::create_dir_all(work.join("images")).expect("folders");
    setup.grant(&fs_write_on(&work));
    for dir in [work.clone(), work.join("images")] {
        let out = setup.call(&["--image-dir".as_ref(), dir.as_os_str()], |_| {});
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}{err}", stdout(&out));
        for says in [
            &dir.display().to_string(),
            "fs_write",
            "write mount",
            "--image-dir",
        ] {
            assert!(err.contains(says), "{says} in {err}");
        }
        assert!(!stdout(&out).contains("saved to"), "{}", stdout(&out));
    }
    let left: Vec<_> = std::fs::read_dir(work.join("images"))
        .expect("reads")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[cfg(unix)]
#[test]
fn no_image_is_saved_in_a_temp_folder_in_a_tools_write_mount() {
    let setup = Setup::new();
    setup.grant(&fs_write_on(&setup.path("tmp")));
    let out = setup.call(&[], |_| {});
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}{err}", stdout(&out));
    for says in [
        &setup.path("tmp").display().to_string(),
        "fs_write",
        "write mount",
        "--image-dir",
    ] {
        assert!(err.contains(says), "{says} in {err}");
    }
    let left: Vec<_> = std::fs::read_dir(setup.path("tmp"))
        .expect("reads")
        .collect();
    assert!(left.is_empty(), "{left:?}");
    setup.config_unchanged();
}
