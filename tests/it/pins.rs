//! Pinned plugins: piton.toml's `sha256` for a plugin file or a tool. A component
//! whose digest is another is refused with both digests, at start and at a reload;
//! `piton inspect` prints the lines that pin it.

use std::path::Path;

use piton_tests::{guests, plugins as examples};
use serde_json::Value;
use sha2::Digest as _;

use crate::mcp_client::StdioPiton;
use crate::support::*;

/// The SHA-256 of the file at `path`, as `sha256sum` prints it.
pub(crate) fn sha256_of(path: impl AsRef<Path>) -> String {
    hex::encode(sha2::Sha256::digest(
        std::fs::read(path).expect("the file reads"),
    ))
}

/// What `piton list` said.
pub(crate) struct Listed {
    /// Its exit code.
    pub(crate) code: Option<i32>,
    /// The tools listed, by name.
    pub(crate) names: Vec<String>,
    /// Its stderr.
    pub(crate) said: String,
}

/// `piton list --json` of `folder` (its piton.toml applies) with the compile cache
/// `cache`.
pub(crate) fn list(folder: &Path, cache: &Path) -> Listed {
    let out = run(piton()
        .env("PITON_CACHE_DIR", cache)
        .args(["list", "--json", "--plugins"])
        .arg(folder));
    let text = stdout(&out);
    let names = match text.trim() {
        "" => Vec::new(),
        json => serde_json::from_str::<Vec<Value>>(json)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {json}"))
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect(),
    };
    Listed {
        code: out.status.code(),
        names,
        said: stderr(&out),
    }
}

/// The names of the cache entries in `cache`.
pub(crate) fn entries(cache: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".cwasm"))
        .collect();
    names.sort();
    names
}

/// A plugins folder of word_count and counter whose piton.toml pins word_count.wasm
/// (its digest written in capitals, which piton takes too), and the digest.
fn pinned_folder() -> (tempfile::TempDir, String) {
    let folder = plugins_folder(&[
        ("word_count.wasm", examples::WORD_COUNT),
        ("counter.wasm", guests::HOSTILE_COUNTER),
    ]);
    let pinned = sha256_of(examples::WORD_COUNT);
    std::fs::write(
        folder.path().join("piton.toml"),
        format!(
            "[plugins.\"word_count.wasm\"]\nsha256 = \"{}\"\n",
            pinned.to_uppercase()
        ),
    )
    .expect("write piton.toml");
    (folder, pinned)
}

#[test]
fn a_pinned_file_loads_when_its_digest_matches_and_else_is_refused_naming_both() {
    let (folder, pinned) = pinned_folder();
    let cache = tempfile::tempdir().expect("temp dir");
    let out = list(folder.path(), cache.path());
    assert_eq!(out.code, Some(0), "{}", out.said);
    assert_eq!(out.names, ["counter", "word_count"], "{}", out.said);
    assert!(!out.said.contains("warning"), "{}", out.said);

    // Replaced by another component: refused, the others still load.
    let file = folder.path().join("word_count.wasm");
    std::fs::copy(examples::READ_FILE, &file).expect("replace the file");
    let actual = sha256_of(&file);
    let cache = tempfile::tempdir().expect("temp dir");
    let out = list(folder.path(), cache.path());
    assert_eq!(out.code, Some(0), "{}", out.said);
    assert_eq!(out.names, ["counter"], "{}", out.said);
    let line = out
        .said
        .lines()
        .find(|line| line.contains("refused"))
        .unwrap_or_else(|| panic!("no refusal: {}", out.said));
    assert_eq!(
        line,
        format!(
            "warning: plugin not loaded: {}: refused: its sha256 is {actual}, but piton.toml's \
             [plugins.\"word_count.wasm\"] pins sha256 = \"{pinned}\"; if this file is the one \
             to run, pin it with sha256 = \"{actual}\" (as `piton inspect` prints it), else put \
             the pinned file back",
            file.display()
        )
    );
    // Refused before it was compiled: the cache has the counter's code, not its.
    let cached = entries(cache.path());
    assert!(
        cached
            .iter()
            .any(|name| name.starts_with(&sha256_of(guests::HOSTILE_COUNTER))),
        "{cached:?}"
    );
    assert!(
        !cached.iter().any(|name| name.starts_with(&actual)),
        "{cached:?}"
    );
}

#[test]
fn a_tool_pin_refuses_the_whole_component_that_gives_the_tool() {
    let folder = plugins_folder(&[
        ("notes.wasm", guests::TOOLBOX_NOTES),
        ("word_count.wasm", examples::WORD_COUNT),
    ]);
    let config = folder.path().join("piton.toml");
    let notes = sha256_of(guests::TOOLBOX_NOTES);
    std::fs::write(&config, format!("[tools.count]\nsha256 = \"{notes}\"\n")).expect("write");
    let out = list(folder.path(), &cache_dir());
    assert_eq!(out.code, Some(0), "{}", out.said);
    assert_eq!(out.names, ["count", "wipe", "word_count"], "{}", out.said);

    let other = sha256_of(examples::WORD_COUNT);
    std::fs::write(&config, format!("[tools.count]\nsha256 = \"{other}\"\n")).expect("write");
    let out = list(folder.path(), &cache_dir());
    assert_eq!(out.names, ["word_count"], "{}", out.said);
    let said = out.said;
    assert!(
        said.contains("notes.wasm: refused: its sha256 is "),
        "{said}"
    );
    assert!(said.contains("piton.toml's [tools.count] pins"), "{said}");
    assert!(said.contains(&notes) && said.contains(&other), "{said}");
}

#[test]
fn a_malformed_digest_is_an_error_naming_the_file_the_key_and_the_fix() {
    let folder = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    let config = folder.path().join("piton.toml");
    for (text, key, says) in [
        (
            "[tools.word_count]\nsha256 = \"abc\"\n".to_owned(),
            "tools.word_count.sha256",
            "is 3 characters",
        ),
        (
            format!(
                "[plugins.\"word_count.wasm\"]\nsha256 = \"sha256:{}\"\n",
                "a".repeat(57)
            ),
            "plugins.\"word_count.wasm\".sha256",
            "not hexadecimal",
        ),
        (
            "[plugins.\"sub/word_count.wasm\"]\nsha256 = \"\"\n".to_owned(),
            "plugins.\"sub/word_count.wasm\"",
            "by its file name alone",
        ),
    ] {
        std::fs::write(&config, &text).expect("write piton.toml");
        let out = list(folder.path(), &cache_dir());
        assert_eq!(out.code, Some(2), "{text}: {}", out.said);
        let said = out.said;
        assert!(
            said.contains(&format!("{}: {key}: ", config.display())),
            "{said}"
        );
        assert!(said.contains(says), "{said}");
        if key.ends_with("sha256") {
            assert!(said.contains("piton inspect"), "{said}");
        }
    }
}

#[test]
fn a_pin_of_a_file_or_tool_that_is_not_there_is_a_warning_and_the_rest_loads() {
    let folder = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    let digest = sha256_of(examples::WORD_COUNT);
    std::fs::write(
        folder.path().join("piton.toml"),
        format!(
            "[plugins.\"gone.wasm\"]\nsha256 = \"{digest}\"\n\
             [tools.gone]\nsha256 = \"{digest}\"\nmemory = \"8MiB\"\n"
        ),
    )
    .expect("write piton.toml");
    let out = list(folder.path(), &cache_dir());
    assert_eq!(out.code, Some(0), "{}", out.said);
    assert_eq!(out.names, ["word_count"], "{}", out.said);
    let said = out.said;
    assert!(
        said.contains(&format!(
            "warning: piton.toml's [plugins.\"gone.wasm\"] pins sha256 = \"{digest}\", but the \
             plugins folder {} has no such file",
            folder.path().display()
        )),
        "{said}"
    );
    assert!(
        said.contains("warning: piton.toml's [tools.gone] pins sha256 = ")
            && said.contains("no plugin read gives a tool named gone, so it is not served"),
        "{said}"
    );
    assert!(
        !said.contains("but no tool is called gone"),
        "said twice: {said}"
    );
}

#[test]
fn inspect_prints_the_lines_that_pin_the_file_and_they_pin_it() {
    let folder = plugins_folder(&[("word_count.wasm", examples::WORD_COUNT)]);
    let out = run(piton()
        .args(["inspect", "word_count", "--plugins"])
        .arg(folder.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    let digest = sha256_of(examples::WORD_COUNT);
    let lines: Vec<&str> = shown
        .lines()
        .skip_while(|line| !line.starts_with("pin it:"))
        .skip(1)
        .take(2)
        .map(str::trim)
        .collect();
    assert_eq!(
        lines,
        [
            "[plugins.\"word_count.wasm\"]".to_owned(),
            format!("sha256 = \"{digest}\"")
        ],
        "{shown}"
    );
    let out = run(piton()
        .args(["inspect", "word_count", "--json", "--plugins"])
        .arg(folder.path()));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(report["pin"], lines.join("\n"));

    // Pasted into piton.toml, they pin it: the file loads, another in its place not.
    std::fs::write(folder.path().join("piton.toml"), lines.join("\n")).expect("write");
    let out = list(folder.path(), &cache_dir());
    assert_eq!(out.names, ["word_count"], "{}", out.said);
    assert!(!out.said.contains("warning"), "{}", out.said);
    std::fs::copy(
        guests::HOSTILE_COUNTER,
        folder.path().join("word_count.wasm"),
    )
    .expect("copy");
    let out = list(folder.path(), &cache_dir());
    assert!(out.said.contains("refused: its sha256 is"), "{}", out.said);
    assert!(out.names.is_empty(), "{:?}", out.names);
}

#[test]
fn a_reload_refuses_a_pinned_file_replaced_and_stops_serving_its_tool() {
    let (folder, pinned) = pinned_folder();
    let mut piton = StdioPiton::start(folder.path());
    assert_eq!(piton.tools(1), ["counter", "word_count"]);

    // Another component in the pinned file's place: refused, and its tool is no
    // longer served (the old one is not kept: a restart would not serve it either).
    let file = folder.path().join("word_count.wasm");
    std::fs::copy(examples::READ_FILE, &file).expect("replace the file");
    piton.list_changed();
    assert_eq!(piton.tools(2), ["counter"]);
    let line = piton.running.stderr.wait_for("refused");
    assert!(line.contains(&sha256_of(examples::READ_FILE)), "{line}");
    assert!(line.contains(&pinned), "{line}");
    let answer = piton.request(
        3,
        "tools/call",
        serde_json::json!({"name": "word_count", "arguments": {"text": "a b"}}),
    );
    assert!(answer["error"]["message"].is_string(), "{answer}");

    // The pinned file put back is served again.
    std::fs::copy(examples::WORD_COUNT, &file).expect("put the file back");
    piton.list_changed();
    assert_eq!(piton.tools(4), ["counter", "word_count"]);
    drop(piton.stdin.take());
    assert_eq!(piton.running.exit_code(), Some(0));
}
