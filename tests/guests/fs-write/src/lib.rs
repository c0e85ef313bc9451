//! Hostile guest: uses a write grant against piton itself. Its hints are the worst
//! case; `hints-for` narrows them to the `mode` asked for ("add": add-only mounts,
//! "write": mounts as granted), so one guest probes both.
//!
//! Ops (each reports `ok ...` or `error: ...`):
//! - `write`: write `content` to `path` (create, or truncate and overwrite).
//! - `copy`: copy the file `from` to `path`.
//! - `swap`: move the folder `path` aside (to `path.old`) and put a symbolic link
//!   to `target` in its place.
//! - `fill`: write `size` bytes to the new file `path`, `how`: "std" (std::fs),
//!   "write" (descriptor.write), "stream" (write-via-stream), "append"
//!   (append-via-stream); reports how many bytes went in before the first error.
//! - `many`: make `size` new entries in the folder `path`, `how`: "files" (empty
//!   files) or "folders"; reports how many were made before the first error.
//! - `list`: open `size` listings of the folder `path` and hold them all; reports how
//!   many were open before the first error.

use std::fs;

use piton_guest_sdk::{Hints, tool};
use wasip2::filesystem::preopens;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, OpenFlags, PathFlags};

fn mode_hints(args: &piton_guest_sdk::serde_json::Value) -> Option<Hints> {
    match args.get("mode")?.as_str()? {
        "add" => Some(Hints::worst().destructive(false).open_world(false)),
        "write" => Some(Hints::worst().open_world(false)),
        _ => None,
    }
}

/// Write where the grant allows.
///
/// Args:
///     mode: The access the call asks for: add or write
///     op: write, copy, swap, fill, many or list
///     path: The guest path written (or swapped)
///     content: What `write` writes
///     from: What `copy` copies
///     target: Where `swap`'s link points
///     size: How many bytes `fill` writes, entries `many` makes, listings `list` holds
///     how: How `fill` writes (std, write, stream or append); what `many` makes (files or folders)
#[tool(destructive, open_world = false, hints_for = mode_hints)]
#[allow(clippy::too_many_arguments)]
fn fs_write(
    mode: String,
    op: String,
    path: String,
    content: Option<String>,
    from: Option<String>,
    target: Option<String>,
    size: Option<u64>,
    how: Option<String>,
) -> String {
    let _ = mode;
    let outcome = match op.as_str() {
        "write" => fs::write(&path, content.unwrap_or_default()).map(|()| "ok".to_owned()),
        "copy" => fs::copy(from.unwrap_or_default(), &path).map(|n| format!("ok {n}")),
        "swap" => return swap(&path, &target.unwrap_or_default()),
        "fill" => return fill(&path, size.unwrap_or(0), how.as_deref().unwrap_or("std")),
        "many" => return many(&path, size.unwrap_or(0), how.as_deref().unwrap_or("files")),
        "list" => return list(&path, size.unwrap_or(0)),
        other => return format!("unknown op {other}"),
    };
    match outcome {
        Ok(text) => text,
        Err(e) => format!("error: {:?}: {e}", e.kind()),
    }
}

/// The preopen whose guest path starts `path`, and the rest of `path`.
fn preopen_of(path: &str) -> Option<(Descriptor, String)> {
    preopens::get_directories()
        .into_iter()
        .find_map(|(dir, name)| {
            let rest = path.strip_prefix(&name)?.strip_prefix('/')?.to_owned();
            Some((dir, rest))
        })
}

fn swap(path: &str, target: &str) -> String {
    if let Err(e) = fs::rename(path, format!("{path}.old")) {
        return format!("error: cannot move {path} aside: {e}");
    }
    let Some((dir, rest)) = preopen_of(path) else {
        return format!("error: no preopen holds {path}");
    };
    match dir.symlink_at(target, &rest) {
        Ok(()) => "ok".to_owned(),
        Err(e) => format!("error: symlink: {}", e.name()),
    }
}

/// Writes `size` bytes of `x` in 64 KiB pieces; `ok N` or `error after N: ...`.
fn fill(path: &str, size: u64, how: &str) -> String {
    const PIECE: usize = 64 << 10;
    let piece = vec![b'x'; PIECE];
    let mut written: u64 = 0;
    let report = |written: u64, error: Option<String>| match error {
        None => format!("ok {written}"),
        Some(e) => format!("error after {written}: {e}"),
    };
    if how == "std" {
        use std::io::Write as _;
        let mut file = match fs::File::create_new(path) {
            Ok(file) => file,
            Err(e) => return report(0, Some(format!("create: {e}"))),
        };
        while written < size {
            let n = PIECE.min((size - written) as usize);
            match file.write(&piece[..n]) {
                Ok(0) => return report(written, Some("wrote nothing".into())),
                Ok(n) => written += n as u64,
                Err(e) => return report(written, Some(format!("{:?}: {e}", e.kind()))),
            }
        }
        return report(written, None);
    }
    let Some((dir, rest)) = preopen_of(path) else {
        return format!("error: no preopen holds {path}");
    };
    let file = match dir.open_at(
        PathFlags::empty(),
        &rest,
        OpenFlags::CREATE | OpenFlags::EXCLUSIVE,
        DescriptorFlags::READ | DescriptorFlags::WRITE,
    ) {
        Ok(file) => file,
        Err(e) => return report(0, Some(format!("create: {}", e.name()))),
    };
    match how {
        "write" => {
            while written < size {
                let n = PIECE.min((size - written) as usize);
                match file.write(&piece[..n], written) {
                    Ok(0) => return report(written, Some("wrote nothing".into())),
                    Ok(n) => written += n,
                    Err(e) => return report(written, Some(e.name().to_owned())),
                }
            }
            report(written, None)
        }
        "stream" | "append" => {
            let stream = if how == "stream" {
                file.write_via_stream(0)
            } else {
                file.append_via_stream()
            };
            let stream = match stream {
                Ok(stream) => stream,
                Err(e) => return report(0, Some(format!("stream: {}", e.name()))),
            };
            while written < size {
                let n = 4096.min((size - written) as usize);
                if let Err(e) = stream.blocking_write_and_flush(&piece[..n]) {
                    let code = match e {
                        wasip2::io::streams::StreamError::LastOperationFailed(e) => {
                            wasip2::filesystem::types::filesystem_error_code(&e)
                                .map_or_else(|| e.to_debug_string(), |c| c.name().to_owned())
                        }
                        wasip2::io::streams::StreamError::Closed => "closed".to_owned(),
                    };
                    return report(written, Some(code));
                }
                written += n as u64;
            }
            report(written, None)
        }
        other => format!("unknown how {other}"),
    }
}

/// Makes `count` empty files or folders in `path`; `ok N` or `error after N: ...`.
fn many(path: &str, count: u64, how: &str) -> String {
    for n in 0..count {
        let entry = format!("{path}/{n}");
        let made = match how {
            "folders" => fs::create_dir(&entry),
            _ => fs::File::create_new(&entry).map(drop),
        };
        if let Err(e) = made {
            return format!("error after {n}: {:?}: {e}", e.kind());
        }
    }
    format!("ok {count}")
}

/// Opens `count` listings of the folder `path` and holds them; `ok N` or
/// `error after N: ...`.
fn list(path: &str, count: u64) -> String {
    let Some((dir, rest)) = preopen_of(&format!("{path}/")) else {
        return format!("error: no preopen holds {path}");
    };
    let folder = if rest.is_empty() {
        dir
    } else {
        match dir.open_at(
            PathFlags::empty(),
            &rest,
            OpenFlags::DIRECTORY,
            DescriptorFlags::READ,
        ) {
            Ok(folder) => folder,
            Err(e) => return format!("error: open: {}", e.name()),
        }
    };
    let mut held = Vec::new();
    for n in 0..count {
        match folder.read_directory() {
            Ok(listing) => held.push(listing),
            Err(e) => return format!("error after {n}: {}", e.name()),
        }
    }
    format!("ok {}", held.len())
}
