//! Filesystem grants: read-only, add-only and read-write mounts, and escapes.
//!
//! Every hostile case checks two things: the guest reports the denial, and the host
//! folder is exactly as it was (names, bytes, modification times), apart from the new
//! files the case is allowed to add.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use piton_host::grants::{Grants, Mount, MountMode};
use piton_host::{Limits, Registry};
use piton_tests::{guests, plugins};
use serde_json::json;

use crate::support::*;

/// What the host sees at one path of a folder.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>, SystemTime),
    Link(PathBuf),
}

/// Every path below `root` (relative, `/`-separated), without following links.
type Tree = BTreeMap<String, Entry>;

fn tree(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for entry in std::fs::read_dir(dir).expect("test folder") {
            let path = entry.expect("test folder").path();
            let name = path
                .strip_prefix(root)
                .expect("test folder")
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).expect("test folder");
            let value = if meta.is_symlink() {
                Entry::Link(std::fs::read_link(&path).expect("test folder"))
            } else if meta.is_dir() {
                walk(root, &path, out);
                Entry::Dir
            } else {
                Entry::File(
                    std::fs::read(&path).expect("test folder"),
                    meta.modified().expect("test folder"),
                )
            };
            out.insert(name, value);
        }
    }
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

/// A folder to mount: `existing.txt`, `sub/inner.txt` and an empty `empty/`.
fn mount_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("test folder");
    std::fs::write(dir.path().join("existing.txt"), "original").expect("test folder");
    std::fs::create_dir(dir.path().join("sub")).expect("test folder");
    std::fs::write(dir.path().join("sub/inner.txt"), "inner").expect("test folder");
    std::fs::create_dir(dir.path().join("empty")).expect("test folder");
    dir
}

/// A registry holding the component at `path` with `grants`.
async fn registry_granting(path: &str, grants: Grants) -> Registry {
    let tool = with_settings(load(path).await, grants, Limits::default());
    let mut registry = Registry::new();
    registry.add(tool).expect("one tool");
    registry
}

/// Runs one attack of the add-only guest on a fresh mount; returns its report, and
/// the folder before and after.
async fn add_only_attack(attack: &str) -> (String, Tree, Tree) {
    let dir = mount_dir();
    let before = tree(dir.path());
    let registry = registry_granting(guests::HOSTILE_FS_ADD_ONLY, write_grant(dir.path())).await;
    let report = call_ok(&registry, "fs_add_only", json!({ "attack": attack })).await;
    (report.join("\n"), before, tree(dir.path()))
}

/// The attack was refused with `kind`, and the folder is unchanged but for `added`.
async fn assert_refused(attack: &str, kind: &str, added: &[(&str, &str)]) {
    let (report, before, after) = add_only_attack(attack).await;
    assert!(
        report.starts_with(&format!("denied: {kind}")),
        "{attack}: {report}"
    );
    assert_only_added(&before, &after, added);
}

/// `after` is `before` plus the files in `added` (name, text).
fn assert_only_added(before: &Tree, after: &Tree, added: &[(&str, &str)]) {
    let mut after = after.clone();
    for (name, text) in added {
        match after.remove(*name) {
            Some(Entry::File(bytes, _)) => assert_eq!(bytes, text.as_bytes(), "{name}"),
            other => panic!("{name}: expected a new file, found {other:?}"),
        }
    }
    assert_eq!(before, &after);
}

#[tokio::test]
async fn add_only_cannot_overwrite_an_existing_file() {
    assert_refused("create_truncate", "PermissionDenied", &[]).await;
    assert_refused("open_write", "PermissionDenied", &[]).await;
    assert_refused("nested_overwrite", "PermissionDenied", &[]).await;
}

#[tokio::test]
async fn add_only_cannot_append_to_an_existing_file() {
    assert_refused("append", "PermissionDenied", &[]).await;
    assert_refused("create_append", "PermissionDenied", &[]).await;
}

#[tokio::test]
async fn add_only_cannot_truncate_or_redate_an_existing_file() {
    assert_refused("set_len", "PermissionDenied", &[]).await;
    assert_refused("set_times", "PermissionDenied", &[]).await;
}

#[tokio::test]
async fn add_only_cannot_rename() {
    assert_refused("rename_over", "PermissionDenied", &[("new.txt", "new")]).await;
    assert_refused("rename_existing", "PermissionDenied", &[]).await;
}

#[tokio::test]
async fn add_only_cannot_delete_files_old_or_new_nor_folders() {
    assert_refused("delete_existing", "PermissionDenied", &[]).await;
    assert_refused("delete_new", "PermissionDenied", &[("new.txt", "new")]).await;
    assert_refused("remove_dir", "PermissionDenied", &[]).await;
}

#[tokio::test]
async fn add_only_cannot_make_a_folder_over_an_existing_name() {
    assert_refused("mkdir_existing", "AlreadyExists", &[]).await;
    assert_refused("mkdir_over_file", "AlreadyExists", &[]).await;
}

#[tokio::test]
async fn add_only_cannot_link() {
    assert_refused("hard_link", "PermissionDenied", &[]).await;
    assert_refused("symlink", "not-permitted", &[]).await;
}

#[tokio::test]
async fn add_only_holds_for_descriptors_opened_beneath_the_mount() {
    let (report, before, after) = add_only_attack("subdir").await;
    let outcomes: BTreeMap<&str, &str> = report
        .lines()
        .filter_map(|line| line.split_once(": "))
        .collect();
    for step in [
        "open-truncate",
        "open-write",
        "open-create",
        "write",
        "set-size",
        "set-times",
        "write-via-stream",
        "append-via-stream",
        "set-times-at",
        "unlink-file-at",
        "rename-at",
        "link-at",
        "symlink-at",
        "set-times-dir",
        "remove-directory-at",
    ] {
        assert_eq!(
            outcomes.get(step),
            Some(&"not-permitted"),
            "{step}: {report}"
        );
    }
    assert_eq!(
        outcomes.get("open-create-exclusive"),
        Some(&"exist"),
        "{report}"
    );
    for step in [
        "read",
        "create-fresh",
        "reopen-fresh-truncate",
        "set-times-at-fresh",
    ] {
        assert_eq!(outcomes.get(step), Some(&"ok"), "{step}: {report}");
    }
    assert_only_added(&before, &after, &[("sub/fresh.txt", "fresh")]);
}

#[tokio::test]
async fn add_only_creates_folders_and_files_and_writes_its_own() {
    let (report, before, after) = add_only_attack("add").await;
    assert_eq!(report, "allowed: hello world | original");
    let mut after = after;
    assert_eq!(after.remove("newdir"), Some(Entry::Dir));
    let Some(Entry::File(_, modified)) = after.get("added.txt") else {
        panic!("added.txt: {after:?}");
    };
    assert_eq!(
        *modified,
        SystemTime::UNIX_EPOCH,
        "its own file may be re-dated"
    );
    assert_only_added(
        &before,
        &after,
        &[("added.txt", "hello world"), ("newdir/deep.txt", "deeper")],
    );
}

#[tokio::test]
async fn a_read_only_tool_with_a_write_grant_reads_and_cannot_write() {
    let dir = mount_dir();
    let before = tree(dir.path());
    let registry = registry_granting(guests::HOSTILE_FS_READ_ONLY, write_grant(dir.path())).await;
    let report = call_ok(&registry, "fs_read_only", json!({}))
        .await
        .join("\n");
    let outcomes: BTreeMap<&str, &str> = report
        .lines()
        .filter_map(|line| line.split_once(": "))
        .collect();
    assert_eq!(outcomes["read"], "ok", "{report}");
    assert_eq!(outcomes["list"], "ok", "{report}");
    assert_eq!(outcomes["content"], "original", "{report}");
    for step in [
        "overwrite",
        "append",
        "set_len",
        "create",
        "mkdir",
        "rename",
        "delete",
    ] {
        assert!(
            outcomes[step].starts_with("denied"),
            "{step} must be denied: {report}"
        );
    }
    assert_eq!(before, tree(dir.path()));
}

/// A mount inside a parent folder that holds `outside.txt`, with links in the mount
/// pointing out: `link-out` to the parent, `link-file` to the file (both absolute),
/// `link-rel` to `../outside.txt`.
#[cfg(unix)]
fn mount_with_links_out() -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::symlink;
    let parent = tempfile::tempdir().expect("test folder");
    let outside = parent.path().join("outside.txt");
    std::fs::write(&outside, "secret outside").expect("test folder");
    let mount = parent.path().join("mount");
    std::fs::create_dir(&mount).expect("test folder");
    std::fs::write(mount.join("existing.txt"), "original").expect("test folder");
    symlink(parent.path(), mount.join("link-out")).expect("test folder");
    symlink(&outside, mount.join("link-file")).expect("test folder");
    symlink("../outside.txt", mount.join("link-rel")).expect("test folder");
    (parent, mount)
}

#[cfg(unix)]
#[tokio::test]
async fn nothing_outside_the_mount_is_reachable_in_any_mode() {
    for mode in ["read", "add", "write"] {
        let (parent, mount) = mount_with_links_out();
        let outside = parent.path().join("outside.txt");
        let before = tree(parent.path());
        let grants = write_grant(&mount);
        let registry = registry_granting(guests::HOSTILE_FS_ESCAPE, grants).await;
        let args = json!({ "mode": mode, "outside": outside.to_string_lossy() });
        let report = call_ok(&registry, "fs_escape", args).await.join("\n");
        assert!(report.starts_with(&format!("mode {mode}\n")), "{report}");
        assert!(!report.contains("secret"), "{mode}: {report}");
        assert!(!report.contains("root:"), "{mode}: {report}");
        for line in report.lines().skip(1) {
            assert!(!line.contains(": ok"), "{mode}: {line}\n{report}");
        }
        assert_eq!(before, tree(parent.path()), "{mode}: {report}");
    }
}

#[tokio::test]
async fn files_reads_and_lists_a_granted_folder() {
    let dir = mount_dir();
    let registry = registry_granting(plugins::FILES, write_grant(dir.path())).await;
    let text = call_ok(
        &registry,
        "files",
        json!({"op": "read", "path": "/data/existing.txt"}),
    );
    assert_eq!(text.await, ["original"]);
    let list = call_ok(&registry, "files", json!({"op": "list", "path": "/data"})).await;
    assert_eq!(list, [r#"["empty","existing.txt","sub"]"#]);
}

#[tokio::test]
async fn files_create_adds_a_file_and_cannot_overwrite() {
    let dir = mount_dir();
    let registry = registry_granting(plugins::FILES, write_grant(dir.path())).await;
    let before = tree(dir.path());
    let args = json!({"op": "create", "path": "/data/notes.txt", "content": "hi"});
    assert_eq!(
        call_ok(&registry, "files", args).await,
        ["created /data/notes.txt"]
    );
    let args = json!({"op": "create", "path": "/data/existing.txt", "content": "pwned"});
    let piton_host::ToolError::Failed(message) = call_error(&registry, "files", args).await else {
        panic!("expected a failure");
    };
    assert!(message.contains("/data/existing.txt"), "{message}");
    assert_only_added(&before, &tree(dir.path()), &[("notes.txt", "hi")]);
}

#[tokio::test]
async fn files_delete_deletes_as_granted() {
    let dir = mount_dir();
    let registry = registry_granting(plugins::FILES, write_grant(dir.path())).await;
    let args = json!({"op": "delete", "path": "/data/existing.txt"});
    assert_eq!(
        call_ok(&registry, "files", args).await,
        ["deleted /data/existing.txt"]
    );
    assert!(!dir.path().join("existing.txt").exists());
}

#[tokio::test]
async fn with_no_grant_a_tool_sees_no_files() {
    let registry = registry_of(&[plugins::FILES], Limits::default()).await;
    for op in ["list", "read"] {
        for path in ["/data", "/", ".", "/etc/passwd"] {
            let args = json!({"op": op, "path": path});
            let piton_host::ToolError::Failed(message) = call_error(&registry, "files", args).await
            else {
                panic!("{op} {path}: expected a failure");
            };
            assert!(
                message.contains(&format!("cannot {op} {path}")),
                "{message}"
            );
        }
    }
}

/// `host` granted for reading, seen by the guest as `guest`.
fn mount(host: &Path, guest: &str, mode: MountMode) -> Mount {
    Mount {
        host: host.canonicalize().expect("test folder"),
        guest: guest.into(),
        mode,
    }
}

/// Two tools: W may write `root/w` (as `/w`), R may read `root/w/sub` (as `/sub`).
/// W replaces `sub` by a link to `..` (`root`, which holds `outside.txt`); R's next
/// call must not see `root` through its mount.
#[cfg(unix)]
#[tokio::test]
async fn a_nested_mount_swapped_for_a_symlink_does_not_lead_outside() {
    let root = tempfile::tempdir().expect("test folder");
    std::fs::write(root.path().join("outside.txt"), "secret outside").expect("test folder");
    let w = root.path().join("w");
    std::fs::create_dir_all(w.join("sub")).expect("test folder");
    std::fs::write(w.join("sub/inner.txt"), "inner").expect("test folder");

    let writer = with_settings(
        load(guests::HOSTILE_FS_WRITE).await,
        Grants {
            mounts: vec![mount(&w, "/w", MountMode::Write)],
            ..Default::default()
        },
        Limits::default(),
    );
    let reader = with_settings(
        load(plugins::READ_FILE).await,
        Grants {
            mounts: vec![mount(&w.join("sub"), "/sub", MountMode::Read)],
            ..Default::default()
        },
        Limits::default(),
    );
    let mut registry = Registry::new();
    registry.add(writer).expect("one name");
    registry.add(reader).expect("another name");

    let sub = w.join("sub").canonicalize().expect("test folder");
    let read = json!({"path": "/sub/inner.txt"});
    assert_eq!(
        call_ok(&registry, "read_file", read.clone()).await,
        ["inner"]
    );
    let swap = json!({"mode": "write", "op": "swap", "path": "/w/sub", "target": ".."});
    assert_eq!(call_ok(&registry, "fs_write", swap).await, ["ok"]);
    assert!(
        std::fs::symlink_metadata(w.join("sub"))
            .expect("the link")
            .is_symlink()
    );

    let outside = json!({"path": "/sub/outside.txt"});
    let result = registry.call("read_file", outside).await;
    let shown = format!("{result:?}");
    assert!(
        !shown.contains("secret"),
        "R read outside its mount: {shown}"
    );
    let Err(error) = result else {
        panic!("the call must fail, not read elsewhere: {shown}");
    };
    let message = error.to_string();
    assert!(message.contains(&sub.display().to_string()), "{message}");
    assert!(message.contains("was replaced"), "{message}");
    // The call failed, not the host.
    assert_host_alive().await;
}

/// Writes `size` bytes into a fresh add-only mount with `how`; the report and the
/// size of the file made.
async fn fill(how: &str, size: u64, limits: Limits) -> (String, u64) {
    let dir = tempfile::tempdir().expect("test folder");
    let tool = with_settings(
        load(guests::HOSTILE_FS_WRITE).await,
        write_grant(dir.path()),
        limits,
    );
    let mut registry = Registry::new();
    registry.add(tool).expect("one tool");
    let args = json!({"mode": "add", "op": "fill", "path": "/data/big", "size": size, "how": how});
    let report = call_ok(&registry, "fs_write", args).await.join("\n");
    let len = std::fs::metadata(dir.path().join("big"))
        .expect("the file was made")
        .len();
    (report, len)
}

#[tokio::test]
async fn add_only_writes_stop_at_max_write() {
    // The default, 64 MiB, with descriptor.write.
    let limit: u64 = 64 << 20;
    let (report, len) = fill("write", limit + (64 << 10), Limits::default()).await;
    assert_eq!(len, limit, "{report}");
    assert!(
        report.starts_with(&format!("error after {limit}: quota")),
        "{report}"
    );
    // A limit set per tool, with every way of writing.
    let limit: u64 = 100_000;
    let limits = Limits {
        max_write: limit,
        ..Limits::default()
    };
    for how in ["write", "stream", "append", "std"] {
        let (report, len) = fill(how, 3 * limit, limits).await;
        assert!(len <= limit, "{how}: {len} bytes: {report}");
        assert!(report.starts_with("error after"), "{how}: {report}");
        // wasi-libc (under std) reports any stream error as EIO.
        if how != "std" {
            assert!(report.contains(": quota"), "{how}: {report}");
        }
    }
    // Within the limit, writing works.
    let (report, len) = fill("stream", limit, limits).await;
    assert_eq!(
        (report.as_str(), len),
        (format!("ok {limit}").as_str(), limit)
    );
}

/// A call's new entries (files, folders, links) are bounded, like its bytes: empty
/// files cost no `max_write` but each takes an inode and a directory slot.
#[tokio::test]
async fn a_call_makes_at_most_10000_new_entries() {
    // Making 10 000 entries took 9.7 s of the default 10 s deadline on 2 busy cores,
    // and a CI run once hit it: the deadline is not what is tested here.
    let limits = Limits {
        timeout: std::time::Duration::from_secs(120),
        ..Limits::default()
    };
    for how in ["files", "folders"] {
        let dir = tempfile::tempdir().expect("test folder");
        let tool = with_settings(
            load(guests::HOSTILE_FS_WRITE).await,
            write_grant(dir.path()),
            limits,
        );
        let mut registry = Registry::new();
        registry.add(tool).expect("one tool");
        let args =
            json!({"mode": "add", "op": "many", "path": "/data", "size": 10_050, "how": how});
        let report = call_ok(&registry, "fs_write", args).await.join("\n");
        let made = std::fs::read_dir(dir.path()).expect("listed").count();
        assert_eq!(made, 10_000, "{how}: {report}");
        assert!(report.starts_with("error after 10000"), "{how}: {report}");
        // The next call has its own count.
        let args = json!({"mode": "add", "op": "many", "path": "/data/0x", "size": 0, "how": how});
        assert_eq!(call_ok(&registry, "fs_write", args).await, ["ok 0"]);
    }
}

/// Each open listing holds the whole folder's names on the host: a call holds at most
/// 16 at once, so listing a large folder over and over cannot fill the host's memory.
#[tokio::test]
async fn a_call_holds_at_most_16_folder_listings_at_once() {
    let dir = tempfile::tempdir().expect("test folder");
    let tool = with_settings(
        load(guests::HOSTILE_FS_WRITE).await,
        write_grant(dir.path()),
        Limits::default(),
    );
    let mut registry = Registry::new();
    registry.add(tool).expect("one tool");
    let args = json!({"mode": "add", "op": "list", "path": "/data", "size": 100});
    let report = call_ok(&registry, "fs_write", args).await.join("\n");
    assert_eq!(report, "error after 16: insufficient-memory");
    // Listings given back are counted no more.
    let args = json!({"mode": "add", "op": "list", "path": "/data", "size": 16});
    assert_eq!(call_ok(&registry, "fs_write", args).await, ["ok 16"]);
}
