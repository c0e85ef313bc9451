//! Hostile guest: tries to reach host files outside its mount `/data`, by `..`, by
//! absolute paths, and through symbolic links the host's test placed in the mount
//! pointing outside. Its hints are the worst case; `hints-for` narrows them to the
//! `mode` asked for, so one guest probes read-only, add-only and read-write mounts.
//!
//! Each attempt is reported as `what path: ok <content>` or `what path: <error kind>`.

use std::fs::{self, OpenOptions};
use std::io::Write as _;

use piton_guest_sdk::{Hints, tool};

fn mode_hints(args: &piton_guest_sdk::serde_json::Value) -> Option<Hints> {
    match args.get("mode")?.as_str()? {
        "read" => Some(Hints::read_only().open_world(false)),
        "add" => Some(Hints::worst().destructive(false).open_world(false)),
        "write" => Some(Hints::worst().open_world(false)),
        _ => None,
    }
}

/// Try to escape the mount.
///
/// Args:
///     mode: The access the call asks for: read, add or write
///     outside: The host path of a file outside the mount
#[tool(destructive, open_world = false, hints_for = mode_hints)]
fn fs_escape(mode: String, outside: String) -> String {
    let reads = [
        "/data/../outside.txt".to_owned(),
        "/data/../../../../../../etc/passwd".to_owned(),
        "../outside.txt".to_owned(),
        "/etc/passwd".to_owned(),
        outside.clone(),
        "/data/link-out/outside.txt".to_owned(),
        "/data/link-file".to_owned(),
        "/data/link-rel".to_owned(),
    ];
    let mut report = vec![format!("mode {mode}")];
    for path in &reads {
        report.push(match fs::read_to_string(path) {
            Ok(text) => format!("read {path}: ok {text}"),
            Err(e) => format!("read {path}: {:?}", e.kind()),
        });
    }
    let writes = [
        "/data/link-file".to_owned(),
        "/data/link-rel".to_owned(),
        "/data/link-out/new.txt".to_owned(),
        "/data/link-out/outside.txt".to_owned(),
        "/data/../escaped.txt".to_owned(),
        outside,
    ];
    for path in &writes {
        let written = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .and_then(|mut f| f.write_all(b"escaped"));
        report.push(match written {
            Ok(()) => format!("write {path}: ok"),
            Err(e) => format!("write {path}: {:?}", e.kind()),
        });
    }
    let listed = fs::read_dir("/data/link-out").map(|entries| entries.count());
    report.push(match listed {
        Ok(n) => format!("list /data/link-out: ok {n}"),
        Err(e) => format!("list /data/link-out: {:?}", e.kind()),
    });
    report.join("\n")
}
