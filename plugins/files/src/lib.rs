//! List, read, create and delete files: the example of a tool whose capabilities
//! follow each call. The tool as a whole may delete (destructive), but `hints_for`
//! tells the host what one call does, and the host grants no more: `list` and `read`
//! run with every mount read-only, `create` with write mounts add-only (it can make
//! new files but not change or remove any that were there), and only `delete` gets
//! the write mounts as granted.
//!
//! Run with: `cargo run --release -- call files '{"op":"list","path":"/data"}'`
//! (from the repository root), once a folder is granted in `./piton.toml`:
//!
//! ```toml
//! [tools.files]
//! mounts = [{ host = "./data", guest = "/data", mode = "write" }]
//! ```
//!
//! With nothing granted the tool sees no files, and every call fails.

use std::fs;
use std::io::Write as _;

use piton_guest_sdk::{Content, Hints, ToolError, schemars, serde, tool};

/// What to do.
#[derive(Clone, Copy, Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "piton_guest_sdk::serde", rename_all = "lowercase")]
#[schemars(crate = "piton_guest_sdk::schemars")]
enum Op {
    /// The names in a folder, as a JSON array.
    List,
    /// A file's text.
    Read,
    /// A new file with `content`; an existing file is left alone and the call fails.
    Create,
    /// Delete a file.
    Delete,
}

/// What one call does, so that the host can grant it no more than that.
fn files_hints(args: &serde_json::Value) -> Option<Hints> {
    match args.get("op")?.as_str()? {
        "list" | "read" => Some(Hints::read_only().open_world(false)),
        // Only adds: a new file, never a changed one.
        "create" => Some(Hints::worst().destructive(false).open_world(false)),
        "delete" => Some(Hints::worst().open_world(false)),
        _ => None,
    }
}

/// List, read, create or delete files in the granted folders.
///
/// Args:
///     op: What to do: list a folder, read a file, create a new file, or delete one
///     path: The folder or file, as the tool sees it (such as /data/notes.txt)
///     content: The text of the new file (create only)
#[tool(destructive, open_world = false, hints_for = files_hints)]
fn files(op: Op, path: String, content: Option<String>) -> Result<Content, ToolError> {
    let failed =
        |what: &str, e: std::io::Error| ToolError::failed(format!("cannot {what} {path}: {e}"));
    match op {
        Op::List => {
            let mut names = Vec::new();
            for entry in fs::read_dir(&path).map_err(|e| failed("list", e))? {
                let entry = entry.map_err(|e| failed("list", e))?;
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
            names.sort();
            Content::try_json(&names).map_err(|e| ToolError::failed(e.to_string()))
        }
        Op::Read => fs::read_to_string(&path)
            .map(Content::Text)
            .map_err(|e| failed("read", e)),
        Op::Create => {
            let content = content.ok_or_else(|| ToolError::input("create needs `content`"))?;
            // create_new: the tool itself never overwrites, whatever the host allows.
            fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut file| file.write_all(content.as_bytes()))
                .map_err(|e| failed("create", e))?;
            Ok(Content::text(format!("created {path}")))
        }
        Op::Delete => fs::remove_file(&path)
            .map(|()| Content::text(format!("deleted {path}")))
            .map_err(|e| failed("delete", e)),
    }
}
