//! Hostile guest: creates host resources of one kind in a loop and keeps them all, to
//! grow the host's heap or use up its file descriptors. The kinds:
//! - `fields`: wasi:http `fields.from-list`, each with one header of `size` bytes;
//! - `bodies`: outgoing requests with a body stream filled as far as the host accepts;
//! - `pollables`: clock pollables;
//! - `streams`: stdout streams;
//! - `files`: the file at `path` opened again and again;
//! - `sockets`: TCP sockets (needs a network grant);
//! - `listings`: listings of the folder `path`, each read one entry into (the answer
//!   then says how many entries the first lists, read to its end);
//! - `random`: `get-random-bytes` of `size` bytes, each kept.
//!
//! After the loop (or the first error) it keeps everything for `hold_ms`, then
//! answers how many it made, or the error it met.

use std::time::Duration;

use piton_guest_sdk::{ToolError, tool};
use wasip2::filesystem::preopens;
use wasip2::filesystem::types::DirectoryEntryStream;
use wasip2::http::types::{Fields, OutgoingRequest};
use wasip2::sockets::network::IpAddressFamily;

/// Hoard host resources of one kind.
///
/// Args:
///     kind: fields, bodies, pollables, streams, files, sockets, listings or random
///     count: How many to make at most
///     size: Bytes per header value (fields), per body write (bodies) or per request (random)
///     path: The file to open (files) or the folder to list (listings)
///     hold_ms: How long to keep them before answering
#[tool(read_only, open_world = true)]
fn hoard(
    kind: String,
    count: u32,
    size: u32,
    path: String,
    hold_ms: u64,
) -> Result<String, ToolError> {
    let mut kept: Vec<Box<dyn std::any::Any>> = Vec::new();
    // The bytes of a header value or a body write (`size` means another thing to
    // `random`).
    let value = match kind.as_str() {
        "fields" | "bodies" => vec![b'a'; size as usize],
        _ => Vec::new(),
    };
    let mut failure = None;
    for i in 0..count {
        let made: Result<Box<dyn std::any::Any>, String> = match kind.as_str() {
            "fields" => Fields::from_list(&[("x-hoard".to_owned(), value.clone())])
                .map(|f| Box::new(f) as Box<dyn std::any::Any>)
                .map_err(|e| format!("{e:?}")),
            "bodies" => body(&value),
            "pollables" => Ok(Box::new(
                wasip2::clocks::monotonic_clock::subscribe_duration(60_000_000_000),
            )),
            "streams" => Ok(Box::new(wasip2::cli::stdout::get_stdout())),
            "files" => std::fs::File::open(&path)
                .map(|f| Box::new(f) as Box<dyn std::any::Any>)
                .map_err(|e| e.to_string()),
            "listings" => listing(&path),
            "random" => Ok(Box::new(wasip2::random::random::get_random_bytes(
                u64::from(size),
            ))),
            "sockets" => {
                wasip2::sockets::tcp_create_socket::create_tcp_socket(IpAddressFamily::Ipv4)
                    .map(|s| Box::new(s) as Box<dyn std::any::Any>)
                    .map_err(|e| format!("{e:?}"))
            }
            other => return Err(ToolError::input(format!("unknown kind {other}"))),
        };
        match made {
            Ok(resource) => kept.push(resource),
            Err(error) => {
                failure = Some(format!("{kind} #{i}: {error}"));
                break;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(hold_ms));
    let first = kept
        .first()
        .and_then(|first| (**first).downcast_ref::<DirectoryEntryStream>());
    let listed = match first {
        Some(first) => format!(", the first lists {}", count_rest(first)?),
        None => String::new(),
    };
    match failure {
        Some(error) => Err(ToolError::failed(format!(
            "made {} {kind}{listed}, then {error}",
            kept.len()
        ))),
        None => Ok(format!("made {} {kind}{listed}", kept.len())),
    }
}

/// A listing of the preopened folder `path`, one entry into it.
fn listing(path: &str) -> Result<Box<dyn std::any::Any>, String> {
    let dir = preopens::get_directories()
        .into_iter()
        .find_map(|(dir, name)| (name == path).then_some(dir))
        .ok_or_else(|| format!("no preopen {path}"))?;
    let listing = dir.read_directory().map_err(|e| e.name().to_owned())?;
    listing
        .read_directory_entry()
        .map_err(|e| e.name().to_owned())?;
    Ok(Box::new(listing))
}

/// The entries of `listing` from the one read at its opening to its end.
fn count_rest(listing: &DirectoryEntryStream) -> Result<u64, ToolError> {
    let mut n = 1;
    loop {
        match listing.read_directory_entry() {
            Ok(Some(_)) => n += 1,
            Ok(None) => return Ok(n),
            Err(e) => {
                return Err(ToolError::failed(format!(
                    "after {n} entries: {}",
                    e.name()
                )));
            }
        }
    }
}

/// An outgoing request whose body stream holds as much as the host lets it buffer.
fn body(chunk: &[u8]) -> Result<Box<dyn std::any::Any>, String> {
    let request = OutgoingRequest::new(Fields::new());
    let body = request.body().map_err(|()| "no body".to_owned())?;
    let stream = body.write().map_err(|()| "no stream".to_owned())?;
    loop {
        let room = stream.check_write().map_err(|e| format!("{e:?}"))?;
        if room == 0 {
            break;
        }
        let n = chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if n == 0 {
            break;
        }
        stream
            .write(chunk.get(..n).unwrap_or_default())
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(Box::new((stream, body, request)))
}
