//! `piton publish` to a real registry, `piton add` from it (by tag and by digest),
//! the tool called, `piton list --sources`, what `add` will not overwrite, and
//! `piton remove`.

use piton_host::supply::lock::Lock;
use piton_tests::plugins;

use super::{Registry, digest, files_in, piton_in};
use crate::support::{piton, run, stderr, stdout};

#[test]
fn a_published_component_is_added_called_listed_and_removed() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let wasm = std::fs::read(plugins::WORD_COUNT).expect("word_count.wasm reads");
    let tagged = format!("oci://{}/tools/word-count:1.0", registry.addr);
    let out = run(piton().args(["publish", plugins::WORD_COUNT, &tagged]));
    let text = stdout(&out);
    assert!(out.status.success(), "{}{text}", stderr(&out));
    let manifest = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("manifest: "))
        .unwrap_or_else(|| panic!("no manifest digest in {text}"))
        .to_owned();
    assert!(
        text.contains(&format!("layer:    {}", digest(&wasm))),
        "{text}"
    );

    let folder = tempfile::tempdir().expect("temp dir");
    let out = piton_in(folder.path(), &["add", &tagged]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}{text}", stderr(&out));
    assert!(
        text.contains(&format!("added word-count from {tagged}")),
        "{text}"
    );
    assert!(
        text.contains("tool word_count: read_only, closed_world"),
        "{text}"
    );
    assert_eq!(files_in(folder.path()), ["piton.lock", "word-count.wasm"]);
    assert_eq!(
        std::fs::read(folder.path().join("word-count.wasm")).expect("reads"),
        wasm
    );
    let lock = Lock::load(&folder.path().join("piton.lock")).expect("the lock reads");
    let entry = &lock.components["word-count"];
    assert_eq!(
        (
            entry.file.as_str(),
            entry.source.as_str(),
            entry.digest.clone()
        ),
        ("word-count.wasm", tagged.as_str(), digest(&wasm))
    );
    assert_eq!(entry.resolved.as_deref(), Some(manifest.as_str()));
    assert_eq!(entry.signer, None);

    let out = piton_in(
        folder.path(),
        &["call", "word_count", r#"{"text":"a b c"}"#],
    );
    assert_eq!(stdout(&out).trim(), "3", "{}", stderr(&out));

    // By digest, under another name; and a file copied by hand beside them.
    let pinned = format!("oci://{}/tools/word-count@{manifest}", registry.addr);
    let out = piton_in(folder.path(), &["add", &pinned, "--name", "wc-pinned"]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::copy(plugins::READ_FILE, folder.path().join("read_file.wasm")).expect("copy");
    let out = piton_in(folder.path(), &["list", "--sources", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let sources: Vec<(String, String, String)> = listed
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| {
            let field = |k: &str| t[k].as_str().unwrap_or("-").to_owned();
            (field("file"), field("source"), field("digest"))
        })
        .collect();
    let read_file = std::fs::read(plugins::READ_FILE).expect("reads");
    // word_count is given by two files: neither serves it (a load error says so).
    assert_eq!(
        sources,
        [(
            "read_file.wasm".into(),
            "not recorded".into(),
            digest(&read_file)
        )],
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(folder.path().join("wc-pinned.wasm")).expect("remove");
    let out = piton_in(folder.path(), &["list", "--sources"]);
    let table = stdout(&out);
    assert!(table.starts_with("NAME"), "{table}");
    let short = &digest(&wasm)[..19];
    assert!(
        table
            .lines()
            .any(|l| l.contains("word-count.wasm") && l.contains(&tagged) && l.contains(short)),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.contains("read_file.wasm") && l.contains("not recorded")),
        "{table}"
    );

    // What add will not replace without --force: a file copied by hand, a name
    // added from another source.
    let out = piton_in(folder.path(), &["add", &tagged, "--name", "read_file"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("read_file.wasm is there already and piton.lock does not record it"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(folder.path().join("read_file.wasm")).expect("reads"),
        read_file
    );
    let out = piton_in(folder.path(), &["add", &pinned, "--name", "word-count"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("records word-count as added from {tagged}")),
        "{}",
        stderr(&out)
    );
    let out = piton_in(
        folder.path(),
        &["add", &tagged, "--name", "read_file", "--force"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(", replaced"), "{}", stdout(&out));

    let out = piton_in(folder.path(), &["remove", "word-count"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = piton_in(folder.path(), &["remove", "read_file"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lock = Lock::load(&folder.path().join("piton.lock")).expect("the lock reads");
    assert_eq!(lock.components.keys().collect::<Vec<_>>(), ["wc-pinned"]);
    assert_eq!(files_in(folder.path()), ["piton.lock"]);
    let out = piton_in(folder.path(), &["remove", "word-count"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("records no component named word-count"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn publish_refuses_what_does_not_load_and_refs_that_are_not_a_tag() {
    let junk = tempfile::tempdir().expect("temp dir");
    let file = junk.path().join("junk.wasm");
    std::fs::write(&file, b"not wasm").expect("write");
    let out = run(piton()
        .arg("publish")
        .arg(&file)
        .arg("oci://127.0.0.1:1/a/b:1"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("it was not published"),
        "{}",
        stderr(&out)
    );
    let by_digest = format!("oci://127.0.0.1:1/a/b@{}", digest(b"x"));
    let out = run(piton().args(["publish", plugins::WORD_COUNT, &by_digest]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("publish to a tag"),
        "{}",
        stderr(&out)
    );
}
