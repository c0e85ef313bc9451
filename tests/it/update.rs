//! `piton update`: three versions of one `lookup` component (tests/guests/lookup-*)
//! added from a local file that then changes. A version that drops read_only and
//! imports the network shows both in its diff and is not taken by `--yes`; one with
//! only a schema change is. The old file stays until the new one has been checked,
//! and what was taken loads in a new process and in a running `piton serve`.

use std::path::{Path, PathBuf};
use std::process::Output;

use piton_tests::guests;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use crate::mcp_client::StdioPiton;
use crate::support::{piton, run, run_in_terminal_with, stderr, stdout};

/// A folder with `src/lookup.wasm` (the source) and `plugins/`, where it was added.
struct Added {
    dir: tempfile::TempDir,
}

impl Added {
    /// `lookup` v1 added from `src/lookup.wasm`.
    fn v1() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("src")).expect("src");
        let added = Self { dir };
        added.source_is(guests::LOOKUP_V1);
        let out = added.piton(&["add"], &[added.source().as_os_str()]);
        assert!(
            out.status.success(),
            "add: {}{}",
            stdout(&out),
            stderr(&out)
        );
        added
    }

    fn source(&self) -> PathBuf {
        self.dir.path().join("src/lookup.wasm")
    }

    fn plugins(&self) -> PathBuf {
        self.dir.path().join("plugins")
    }

    fn source_is(&self, component: &str) {
        std::fs::copy(component, self.source()).expect("the new version in place");
    }

    fn piton(&self, args: &[&str], more: &[&std::ffi::OsStr]) -> Output {
        run(piton()
            .args(args)
            .args(more)
            .arg("--plugins")
            .arg(self.plugins()))
    }

    fn update(&self, flags: &[&str]) -> Output {
        let mut args = vec!["update"];
        args.extend(flags);
        self.piton(&args, &[])
    }

    /// The SHA-256 piton.lock records for lookup.
    fn locked(&self) -> String {
        let lock = std::fs::read_to_string(self.plugins().join("piton.lock")).expect("lock");
        let lock: toml::Value = toml::from_str(&lock).expect("lock parses");
        lock["components"]["lookup"]["digest"]
            .as_str()
            .expect("a digest")
            .to_owned()
    }

    /// Whether the plugins folder holds `component`'s bytes as lookup, recorded so,
    /// and nothing else (no temporary file left).
    fn holds(&self, component: &str) -> bool {
        let mut names: Vec<String> = std::fs::read_dir(self.plugins())
            .expect("plugins")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["lookup.wasm", "piton.lock"], "nothing else is left");
        let file = sha256(&self.plugins().join("lookup.wasm"));
        file == sha256(Path::new(component)) && self.locked() == format!("sha256:{file}")
    }
}

fn sha256(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).expect("read")))
}

fn said(out: &Output) -> String {
    format!("{}{}", stdout(out), stderr(out))
}

#[test]
fn a_weaker_version_shows_what_it_may_newly_do_and_yes_does_not_take_it() {
    let added = Added::v1();
    added.source_is(guests::LOOKUP_V2_NET);
    let out = added.update(&["--yes"]);
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for line in [
        "lookup: a new version from",
        "! weaker    tool lookup: read_only true → false",
        "! weaker    network: now imports wasi:http/outgoing-handler",
        "which --yes does not take without --allow-weaker",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
    assert!(added.holds(guests::LOOKUP_V1), "{text}");

    let out = added.update(&["--yes", "--allow-weaker"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("lookup: updated sha256:"),
        "{}",
        said(&out)
    );
    assert!(added.holds(guests::LOOKUP_V2_NET));
    // A new process loads what was taken: the lock matches the file.
    let listed = added.piton(&["list", "--json"], &[]);
    assert!(listed.status.success(), "{}", said(&listed));
    assert!(stdout(&listed).contains("\"lookup\""), "{}", said(&listed));
    let again = added.update(&[]);
    assert!(
        said(&again).contains("lookup: up to date"),
        "{}",
        said(&again)
    );
}

#[test]
fn a_schema_change_alone_is_taken_by_yes_and_nothing_unasked_without_it() {
    let added = Added::v1();
    added.source_is(guests::LOOKUP_V3_SCHEMA);
    // No terminal, no --yes: shown, not taken, and the run fails so a script sees it.
    let out = added.update(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("0 weaker"), "{}", said(&out));
    assert!(
        said(&out).contains("not asked: no terminal"),
        "{}",
        said(&out)
    );
    assert!(added.holds(guests::LOOKUP_V1));

    let out = added.update(&["--yes"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("schema    tool lookup: input + lang"),
        "{}",
        said(&out)
    );
    assert!(added.holds(guests::LOOKUP_V3_SCHEMA));
}

#[test]
fn a_new_version_that_does_not_load_is_refused_and_the_old_file_kept() {
    let added = Added::v1();
    std::fs::write(added.source(), b"\0asm not a component").expect("write");
    let out = added.update(&["--yes", "--allow-weaker"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let text = said(&out);
    assert!(text.contains("does not load as a piton tool"), "{text}");
    assert!(text.contains("the file in place is kept"), "{text}");
    assert!(added.holds(guests::LOOKUP_V1));
}

#[test]
fn a_person_at_a_terminal_is_asked_before_the_file_is_replaced() {
    let added = Added::v1();
    added.source_is(guests::LOOKUP_V2_NET);
    let plugins = added.plugins();
    let ask = |answer: &str| {
        let args = [
            std::ffi::OsStr::new("update"),
            std::ffi::OsStr::new("--plugins"),
            plugins.as_os_str(),
        ];
        run_in_terminal_with(&args, &[("ANSWER", std::ffi::OsStr::new(answer))])
    };
    let out = ask("n");
    let text = said(&out);
    assert!(
        text.contains("It may do more than before (the ! lines). Replace lookup? [y/N]"),
        "{text}"
    );
    assert!(text.contains("lookup: not updated"), "{text}");
    assert!(added.holds(guests::LOOKUP_V1));
    let out = ask("y");
    assert!(said(&out).contains("lookup: updated"), "{}", said(&out));
    assert!(added.holds(guests::LOOKUP_V2_NET));
}

#[test]
fn a_running_server_serves_the_update() {
    let added = Added::v1();
    let mut served = StdioPiton::start(&added.plugins());
    let lookup = |served: &mut StdioPiton, id| {
        let listed = served.request(id, "tools/list", json!({}));
        listed["result"]["tools"]
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t["name"] == "lookup").cloned())
    };
    let first = lookup(&mut served, 1).expect("lookup served");
    assert!(first["inputSchema"]["properties"].get("lang").is_none());
    added.source_is(guests::LOOKUP_V3_SCHEMA);
    let out = added.update(&["--yes"]);
    assert!(out.status.success(), "{}", said(&out));
    // The reload that follows serves the new version, not none.
    served.list_changed();
    let mut id = 2;
    let now = loop {
        let tool = lookup(&mut served, id).expect("lookup still served");
        if tool["inputSchema"]["properties"].get("lang").is_some() || id > 4 {
            break tool;
        }
        served.list_changed();
        id += 1;
    };
    assert!(
        now["inputSchema"]["properties"].get("lang").is_some(),
        "{now}; stderr: {}",
        served.running.stderr.text()
    );
}
