//! Hostile guest: an add-only tool (not read-only, not destructive) that tries to
//! change what its mount `/data` held before the call, one attack per call.
//!
//! The host's test lays out `/data` as `existing.txt` ("original"), `sub/inner.txt`
//! ("inner") and an empty folder `empty/`. Each attack reports what happened:
//! `denied: <kind>: <error>` when the first forbidden step failed, `allowed: ...`
//! when everything it tried worked (for the attacks the host must allow).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::time::SystemTime;

use piton_guest_sdk::tool;
use wasip2::filesystem::preopens;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, NewTimestamp, OpenFlags, PathFlags};

const EXISTING: &str = "/data/existing.txt";

/// Attack an add-only mount.
///
/// Args:
///     attack: Which attack to run
#[tool(destructive = false, open_world = false)]
fn fs_add_only(attack: String) -> String {
    let outcome = match attack.as_str() {
        "subdir" => return subdir_attacks(),
        "create_truncate" => File::create(EXISTING).and_then(|mut f| f.write_all(b"pwned")),
        "open_write" => OpenOptions::new()
            .write(true)
            .open(EXISTING)
            .and_then(|mut f| f.write_all(b"pwned")),
        "append" => OpenOptions::new()
            .append(true)
            .open(EXISTING)
            .and_then(|mut f| f.write_all(b"pwned")),
        "create_append" => OpenOptions::new()
            .create(true)
            .append(true)
            .open(EXISTING)
            .and_then(|mut f| f.write_all(b"pwned")),
        "set_len" => File::open(EXISTING).and_then(|f| f.set_len(0)),
        "set_times" => File::open(EXISTING).and_then(|f| f.set_modified(SystemTime::UNIX_EPOCH)),
        "rename_over" => {
            fs::write("/data/new.txt", "new").and_then(|()| fs::rename("/data/new.txt", EXISTING))
        }
        "rename_existing" => fs::rename(EXISTING, "/data/moved.txt"),
        "delete_existing" => fs::remove_file(EXISTING),
        "delete_new" => {
            fs::write("/data/new.txt", "new").and_then(|()| fs::remove_file("/data/new.txt"))
        }
        "remove_dir" => fs::remove_dir("/data/empty"),
        "mkdir_existing" => fs::create_dir("/data/sub"),
        "mkdir_over_file" => fs::create_dir(EXISTING),
        "hard_link" => fs::hard_link(EXISTING, "/data/link.txt").and_then(|()| {
            OpenOptions::new()
                .write(true)
                .open("/data/link.txt")
                .and_then(|mut f| f.write_all(b"pwned"))
        }),
        // std has no stable symlink on WASI: the raw call.
        "symlink" => {
            return match data_dir().map(|data| data.symlink_at("existing.txt", "sym")) {
                Some(Ok(())) => "allowed".into(),
                Some(Err(e)) => format!("denied: {}", e.name()),
                None => "no /data preopen".into(),
            };
        }
        "nested_overwrite" => fs::write("/data/sub/inner.txt", "pwned"),
        "add" => return add(),
        other => return format!("unknown attack {other}"),
    };
    match outcome {
        Ok(()) => "allowed".into(),
        Err(e) => denied(&e),
    }
}

fn denied(e: &io::Error) -> String {
    format!("denied: {:?}: {e}", e.kind())
}

/// What an add-only call may do: make a file and a folder, and write, append to,
/// truncate and re-date the file it made.
fn add() -> String {
    let steps = || -> io::Result<String> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open("/data/added.txt")?;
        file.write_all(b"hello")?;
        drop(file);
        let mut file = OpenOptions::new().append(true).open("/data/added.txt")?;
        file.write_all(b" world, and more")?;
        drop(file);
        let file = OpenOptions::new().write(true).open("/data/added.txt")?;
        file.set_len(11)?;
        file.set_modified(SystemTime::UNIX_EPOCH)?;
        drop(file);
        fs::create_dir("/data/newdir")?;
        fs::write("/data/newdir/deep.txt", "deep")?;
        // File::create truncates: allowed on a file this call made.
        File::create("/data/newdir/deep.txt")?.write_all(b"deeper")?;
        let mut text = String::new();
        File::open("/data/added.txt")?.read_to_string(&mut text)?;
        let existing = fs::read_to_string(EXISTING)?;
        Ok(format!("allowed: {text} | {existing}"))
    };
    steps().unwrap_or_else(|e| denied(&e))
}

/// The preopen of `/data`.
fn data_dir() -> Option<Descriptor> {
    preopens::get_directories()
        .into_iter()
        .find_map(|(dir, name)| (name == "/data").then_some(dir))
}

/// The raw calls, on a descriptor opened beneath the preopen: each line is one call
/// and its outcome.
fn subdir_attacks() -> String {
    let Some(data) = data_dir() else {
        return "no /data preopen".into();
    };
    let sub = match data.open_at(
        PathFlags::empty(),
        "sub",
        OpenFlags::DIRECTORY,
        DescriptorFlags::READ | DescriptorFlags::MUTATE_DIRECTORY,
    ) {
        Ok(sub) => sub,
        Err(e) => return format!("cannot open sub: {}", e.name()),
    };
    let mut report = Vec::new();
    let mut line = |name: &str, outcome: Result<(), wasip2::filesystem::types::ErrorCode>| {
        report.push(format!(
            "{name}: {}",
            match outcome {
                Ok(()) => "ok".to_owned(),
                Err(e) => e.name().to_owned(),
            }
        ));
    };
    let open = |d: &Descriptor, path: &str, o: OpenFlags, f: DescriptorFlags| {
        d.open_at(PathFlags::empty(), path, o, f)
    };
    line(
        "open-truncate",
        open(
            &sub,
            "inner.txt",
            OpenFlags::TRUNCATE,
            DescriptorFlags::READ,
        )
        .map(drop),
    );
    line(
        "open-write",
        open(
            &sub,
            "inner.txt",
            OpenFlags::empty(),
            DescriptorFlags::WRITE,
        )
        .map(drop),
    );
    line(
        "open-create",
        open(&sub, "inner.txt", OpenFlags::CREATE, DescriptorFlags::WRITE).map(drop),
    );
    line(
        "open-create-exclusive",
        open(
            &sub,
            "inner.txt",
            OpenFlags::CREATE | OpenFlags::EXCLUSIVE,
            DescriptorFlags::WRITE,
        )
        .map(drop),
    );
    match open(&sub, "inner.txt", OpenFlags::empty(), DescriptorFlags::READ) {
        Ok(file) => {
            line("write", file.write(b"pwned", 0).map(drop));
            line("set-size", file.set_size(0));
            line(
                "set-times",
                file.set_times(NewTimestamp::NoChange, NewTimestamp::Now),
            );
            line("write-via-stream", file.write_via_stream(0).map(drop));
            line("append-via-stream", file.append_via_stream().map(drop));
            line("read", file.read(100, 0).map(drop));
        }
        Err(e) => line("open-read", Err(e)),
    }
    line(
        "set-times-at",
        sub.set_times_at(
            PathFlags::empty(),
            "inner.txt",
            NewTimestamp::Now,
            NewTimestamp::Now,
        ),
    );
    line("unlink-file-at", sub.unlink_file_at("inner.txt"));
    line("rename-at", sub.rename_at("inner.txt", &sub, "renamed.txt"));
    line(
        "link-at",
        sub.link_at(PathFlags::empty(), "inner.txt", &sub, "linked.txt"),
    );
    line("symlink-at", sub.symlink_at("inner.txt", "sym"));
    line(
        "set-times-dir",
        sub.set_times(NewTimestamp::Now, NewTimestamp::Now),
    );
    line("remove-directory-at", data.remove_directory_at("empty"));
    // What the call may do beneath the subfolder: a new file, written and truncated.
    let fresh = open(&sub, "fresh.txt", OpenFlags::CREATE, DescriptorFlags::WRITE).and_then(|f| {
        f.write(b"fresh!", 0)?;
        f.set_size(5)?;
        f.set_times(NewTimestamp::Now, NewTimestamp::Now)
    });
    line("create-fresh", fresh);
    line(
        "reopen-fresh-truncate",
        open(
            &sub,
            "fresh.txt",
            OpenFlags::TRUNCATE,
            DescriptorFlags::WRITE,
        )
        .and_then(|f| f.write(b"fresh", 0).map(drop)),
    );
    line(
        "set-times-at-fresh",
        sub.set_times_at(
            PathFlags::empty(),
            "fresh.txt",
            NewTimestamp::Now,
            NewTimestamp::Now,
        ),
    );
    report.join("\n")
}
