//! The compile cache holds native code that piton runs as itself: a cache folder or
//! entry that another user owns, or that others can write, is not used. Each test
//! plants an entry (word_count's compiled code under counter's name, as someone who
//! could write there would) and checks that the load compiles counter instead.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use piton_tests::{guests, plugins as examples};

use crate::cache::entry_of;
use crate::pins::{entries, list};
use crate::support::{piton, plugins_folder, run, stderr};

/// A user id that is not ours (nobody's).
const OTHER_UID: u32 = 65534;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A cache folder in which counter's entry holds word_count's code, and a plugins
/// folder of counter alone.
fn planted() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let cache = tempfile::tempdir().expect("dir");
    let both = plugins_folder(&[
        ("word_count.wasm", examples::WORD_COUNT),
        ("counter.wasm", guests::HOSTILE_COUNTER),
    ]);
    let out = list(both.path(), cache.path());
    assert_eq!(out.names, ["counter", "word_count"], "{}", out.said);
    let counter = entry_of(cache.path(), guests::HOSTILE_COUNTER);
    let word_count = entry_of(cache.path(), examples::WORD_COUNT);
    std::fs::copy(&word_count, &counter).expect("plant");
    let only_counter = plugins_folder(&[("counter.wasm", guests::HOSTILE_COUNTER)]);
    (cache, counter, only_counter)
}

/// Whether this process runs as root (only root can give a file to another user).
fn root() -> bool {
    let probe = tempfile::tempfile().expect("a file");
    probe.metadata().expect("its metadata").uid() == 0
}

#[test]
fn a_planted_entry_in_a_private_cache_of_ours_is_used() {
    // The premise of the tests below: what the entry holds is what runs.
    let (cache, _, folder) = planted();
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["word_count"], "{}", out.said);
}

#[test]
fn a_cache_folder_others_can_write_is_not_used() {
    for mode in [0o777, 0o770, 0o702] {
        let (cache, counter, folder) = planted();
        chmod(cache.path(), mode);
        let out = list(folder.path(), cache.path());
        assert_eq!(out.names, ["counter"], "mode {mode:o}: {}", out.said);
        assert!(
            out.said.contains(&cache.path().display().to_string())
                && out.said.contains("chmod 700"),
            "{}",
            out.said
        );
        let shown = run(piton().env("PITON_CACHE_DIR", cache.path()).arg("cache"));
        assert!(stderr(&shown).contains("chmod 700"), "{}", stderr(&shown));
        // Nothing is written there either: the planted entry is as it was.
        assert_eq!(
            std::fs::read(&counter).expect("the entry"),
            std::fs::read(entry_of(cache.path(), examples::WORD_COUNT)).expect("the entry"),
        );
        // Made private again, the cache is used again (entries are checked one by one).
        chmod(cache.path(), 0o700);
        let out = list(folder.path(), cache.path());
        assert_eq!(out.names, ["word_count"], "{}", out.said);
    }
}

#[test]
fn a_cache_entry_others_can_write_is_not_used_and_is_replaced() {
    let (cache, counter, folder) = planted();
    chmod(&counter, 0o666);
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["counter"], "{}", out.said);
    assert!(
        out.said.contains(&counter.display().to_string()),
        "{}",
        out.said
    );
    // The compile stored counter's own code there, private.
    let meta = std::fs::metadata(&counter).expect("the entry");
    assert_eq!(meta.mode() & 0o077, 0, "{:o}", meta.mode());
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["counter"], "{}", out.said);
    assert!(
        !out.said.contains(&counter.display().to_string()),
        "{}",
        out.said
    );
}

#[test]
fn a_cache_folder_or_entry_owned_by_another_user_is_not_used() {
    if !root() {
        eprintln!("skipped: only root can give a folder to another user to test this");
        return;
    }
    let (cache, counter, folder) = planted();
    std::os::unix::fs::chown(cache.path(), Some(OTHER_UID), None).expect("chown");
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["counter"], "{}", out.said);
    assert!(
        out.said.contains(&cache.path().display().to_string())
            && out.said.contains("owned by user 65534"),
        "{}",
        out.said
    );

    let (cache, counter_of_other, folder) = {
        drop((cache, counter, folder));
        planted()
    };
    std::os::unix::fs::chown(&counter_of_other, Some(OTHER_UID), None).expect("chown");
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["counter"], "{}", out.said);
    assert!(
        out.said.contains(&counter_of_other.display().to_string()),
        "{}",
        out.said
    );
}

#[test]
fn a_new_cache_folder_is_private() {
    let base = tempfile::tempdir().expect("dir");
    chmod(base.path(), 0o755);
    let cache = base.path().join("a/b/piton");
    let folder = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    let out = list(folder.path(), &cache);
    assert_eq!(out.names, ["word_count"], "{}", out.said);
    for made in [
        base.path().join("a"),
        base.path().join("a/b"),
        cache.clone(),
    ] {
        let mode = std::fs::metadata(&made).expect("made").mode() & 0o777;
        assert_eq!(mode, 0o700, "{}: {mode:o}", made.display());
    }
    assert_eq!(entries(&cache).len(), 1);
}
