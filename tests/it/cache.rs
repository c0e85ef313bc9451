//! The compile cache stays bounded: a load removes the entries no load used for a
//! week and trims the cache to piton.toml's `[cache] max_size`, and `piton cache
//! clean` empties it. Nothing but piton's own entries is counted or removed: not
//! other files, not folders, not links nor where they lead.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use piton_tests::{guests, plugins as examples};

use crate::pins::{entries, list, sha256_of};
use crate::support::*;

const DAY: Duration = Duration::from_secs(24 * 3600);

/// Makes the file at `path` last modified `ago` before now.
fn age(path: &Path, ago: Duration) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("the file opens");
    file.set_modified(SystemTime::now() - ago)
        .expect("set the time");
}

/// The entry of the component `wasm` in `cache`.
pub(crate) fn entry_of(cache: &Path, wasm: &str) -> PathBuf {
    let digest = sha256_of(wasm);
    let found = entries(cache);
    let name = found
        .iter()
        .find(|name| name.starts_with(&digest))
        .unwrap_or_else(|| panic!("no entry for {wasm}: {found:?}"));
    cache.join(name)
}

/// `n` bytes in the file `path`, last modified `ago` before now.
fn file_of(path: &Path, n: usize, ago: Duration) -> PathBuf {
    std::fs::write(path, vec![0; n]).expect("write");
    age(path, ago);
    path.to_path_buf()
}

/// Things in the cache folder `cache` that are not its entries, each unused for a
/// month; a link named as an entry leads to a file in `outside`. Every trim and
/// clean must leave each of them.
fn strangers(cache: &Path, outside: &Path) -> Vec<PathBuf> {
    let entry_like = |pair: &str| cache.join(format!("{}-0123456789abcdef.cwasm", pair.repeat(32)));
    let target = file_of(&outside.join("precious.cwasm"), 4096, DAY * 30);
    let link = entry_like("ab");
    std::os::unix::fs::symlink(&target, &link).expect("link");
    let folder = entry_like("cd");
    std::fs::create_dir(&folder).expect("mkdir");
    let mut found = vec![target, link, folder];
    for name in [
        "notes.txt".to_owned(),
        format!("{}-0123456789ABCDEF.cwasm", "EF".repeat(32)),
        format!("{}-0123456789abcdef.cwasm.bak", "ef".repeat(32)),
        ".tmpabcdef".to_owned(),
    ] {
        found.push(file_of(&cache.join(name), 4096, DAY * 30));
    }
    found
}

fn all_there(paths: &[PathBuf]) {
    for path in paths {
        assert!(
            path.symlink_metadata().is_ok(),
            "{} was removed",
            path.display()
        );
    }
}

#[test]
fn a_load_removes_the_entries_no_load_used_for_a_week_and_nothing_else() {
    let (cache, outside) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let folder = plugins_folder(&[
        ("word_count.wasm", examples::WORD_COUNT),
        ("counter.wasm", guests::HOSTILE_COUNTER),
    ]);
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["counter", "word_count"], "{}", out.said);
    let (kept, gone) = (
        entry_of(cache.path(), examples::WORD_COUNT),
        entry_of(cache.path(), guests::HOSTILE_COUNTER),
    );

    // The counter removed from the folder; neither entry used for 8 days since.
    std::fs::remove_file(folder.path().join("counter.wasm")).expect("remove");
    age(&kept, DAY * 8);
    age(&gone, DAY * 8);
    let strangers = strangers(cache.path(), outside.path());
    let stale_temp = file_of(
        &cache.path().join(".piton-abc123.cwasm.tmp"),
        10,
        Duration::from_secs(2 * 3600),
    );
    let fresh_temp = file_of(
        &cache.path().join(".piton-xyz789.cwasm.tmp"),
        10,
        Duration::ZERO,
    );

    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["word_count"], "{}", out.said);
    assert!(!gone.exists(), "the entry no load used for a week stays");
    assert!(kept.exists(), "the entry this load used is gone");
    let used = kept.metadata().and_then(|m| m.modified()).expect("a time");
    assert!(
        used > SystemTime::now() - DAY,
        "the entry used is not marked used"
    );
    assert!(!stale_temp.exists(), "a temporary file two hours old stays");
    assert!(
        fresh_temp.exists(),
        "a temporary file being written is removed"
    );
    all_there(&strangers);
}

#[test]
fn a_load_trims_the_cache_to_max_size_used_longest_ago_first_keeping_its_own() {
    let (cache, outside) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let folder = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["word_count"], "{}", out.said);
    let own = entry_of(cache.path(), examples::WORD_COUNT);
    let size = own.metadata().expect("the entry").len();

    // Entries of other plugins, 1 MiB each, last used 1, 2 and 3 days ago.
    let others: Vec<PathBuf> = (1..=3_u32)
        .map(|days| {
            let name = format!("{}-0123456789abcdef.cwasm", format!("{days:02}").repeat(32));
            file_of(&cache.path().join(name), 1 << 20, DAY * days)
        })
        .collect();
    let strangers = strangers(cache.path(), outside.path());
    let config = folder.path().join("piton.toml");
    // Room for this load's entry and 1.5 MiB: the two used longest ago go.
    let max = size + (3 << 19);
    std::fs::write(&config, format!("[cache]\nmax_size = \"{max}\"\n")).expect("write");
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["word_count"], "{}", out.said);
    let left: Vec<bool> = others.iter().map(|p| p.exists()).collect();
    assert_eq!(left, [true, false, false], "{:?}", entries(cache.path()));
    assert!(own.exists());
    assert!(!out.said.contains("max_size"), "{}", out.said);
    all_there(&strangers);

    // A size below what the load uses itself: its entry stays, and it says so.
    std::fs::write(&config, "[cache]\nmax_size = \"1KiB\"\n").expect("write");
    let out = list(folder.path(), cache.path());
    assert_eq!(out.names, ["word_count"], "{}", out.said);
    assert!(own.exists() && !others[0].exists());
    assert!(
        out.said.contains("warning: the compile cache holds ")
            && out
                .said
                .contains("of plugins this load uses, over piton.toml's [cache] max_size"),
        "{}",
        out.said
    );
    all_there(&strangers);
}

#[test]
fn cache_shows_its_entries_and_cache_clean_removes_them_and_nothing_else() {
    let (cache, outside) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let folder = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    assert_eq!(list(folder.path(), cache.path()).names, ["word_count"]);
    let own = entry_of(cache.path(), examples::WORD_COUNT);
    let strangers = strangers(cache.path(), outside.path());
    let cache_cmd = |args: &[&str]| {
        run(piton()
            .env("PITON_CACHE_DIR", cache.path())
            .arg("cache")
            .args(args))
    };

    let out = cache_cmd(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.contains(&format!("compile cache: {}\n", cache.path().display())),
        "{shown}"
    );
    assert!(shown.contains("entries:       1 ("), "{shown}");
    assert!(shown.contains("with 1 components' kept specs"), "{shown}");

    let out = cache_cmd(&["clean"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("removed 1 compiled component and 1 kept specs ("),
        "{}",
        stdout(&out)
    );
    assert!(!own.exists());
    all_there(&strangers);
    assert!(stdout(&cache_cmd(&[])).contains("entries:       0 (0 bytes, with 0 "));
    // The next load compiles what it needs again.
    assert_eq!(list(folder.path(), cache.path()).names, ["word_count"]);
    assert!(own.exists());

    // Nowhere to look: a usage error saying what to set.
    let out = run(piton()
        .args(["cache", "clean"])
        .env_remove("PITON_CACHE_DIR")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("set PITON_CACHE_DIR"),
        "{}",
        stderr(&out)
    );
}
