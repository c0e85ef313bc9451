//! `piton list`: every tool with its hints, how far they are enforced, its
//! description and source, as a table that fits the terminal or as JSON; with
//! `--sources`, where each tool's file came from, its signer and its digest, from
//! piton.lock.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::out::{Outcome, pretty, say};
use crate::registry::Registry;
use crate::source::ToolSource;
use crate::supply::at_load;
use crate::supply::lock::Lock;
use crate::term::{self, Shown};

pub(super) async fn list(registry: &Registry, as_json: bool) -> io::Result<Outcome> {
    let listing = registry.list().await;
    for error in &listing.errors {
        say(format_args!("warning: {error}"));
    }
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if as_json {
        let tools: Vec<Value> = listing
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.spec().name,
                    "description": tool.spec().description,
                    "hints": tool.hints(),
                    "hints_are": tool.hints_trust(),
                    "parallel": tool.spec().parallel,
                    "source": tool.source().to_string(),
                })
            })
            .collect();
        writeln!(out, "{}", shown.text(&pretty(&Value::Array(tools))))?;
        return Ok(Outcome::Success);
    }
    if listing.tools.is_empty() {
        writeln!(out, "no tools")?;
        return Ok(Outcome::Success);
    }
    // How far each tool's hints hold: enforced by a sandbox, declared by an MCP
    // server, the program's own (native), or unenforced (raw TCP).
    let rows: Vec<[String; 5]> = listing
        .tools
        .iter()
        .map(|tool| {
            [
                term::cut_end(&shown.cell(&tool.spec().name), MAX_NAME_CELL).into_owned(),
                tool.hints().to_string(),
                tool.hints_trust().as_str().to_owned(),
                shown
                    .cell(first_line(&tool.spec().description))
                    .into_owned(),
                term::cut_start(&shown.cell(&tool.source().to_string()), MAX_SOURCE_CELL)
                    .into_owned(),
            ]
        })
        .collect();
    let header = ["NAME", "HINTS", "HINTS ARE", "DESCRIPTION", "SOURCE"].map(str::to_owned);
    for line in table(&header, rows, DESCRIPTION_COLUMN, term::stdout_width()) {
        writeln!(out, "{line}")?;
    }
    Ok(Outcome::Success)
}

/// `piton list --sources`: each tool, its file, where `lock` says the file came
/// from ("not recorded" when it does not record it, with the command that records
/// it), who signed it, and its digest.
pub(super) async fn sources(
    registry: &Registry,
    lock: &Lock,
    as_json: bool,
) -> io::Result<Outcome> {
    let listing = registry.list().await;
    for error in &listing.errors {
        say(format_args!("warning: {error}"));
    }
    let rows: Vec<SourceRow> = listing
        .tools
        .iter()
        .map(|tool| SourceRow::of(tool.as_ref(), lock))
        .collect();
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if as_json {
        let tools: Vec<Value> = rows
            .iter()
            .map(|row| {
                json!({
                    "name": row.name,
                    "file": row.file,
                    "source": row.source.as_deref().unwrap_or(NOT_RECORDED),
                    "signer": row.signer,
                    "digest": row.digest,
                    "resolved": row.resolved,
                    "record": row.record,
                })
            })
            .collect();
        writeln!(out, "{}", shown.text(&pretty(&Value::Array(tools))))?;
        return Ok(Outcome::Success);
    }
    if rows.is_empty() {
        writeln!(out, "no tools")?;
        return Ok(Outcome::Success);
    }
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|row| {
            [
                term::cut_end(&shown.cell(&row.name), MAX_NAME_CELL).into_owned(),
                term::cut_start(&shown.cell(&row.file), MAX_SOURCE_CELL).into_owned(),
                shown
                    .cell(row.source.as_deref().unwrap_or(NOT_RECORDED))
                    .into_owned(),
                term::cut_end(
                    &shown.cell(row.signer.as_deref().unwrap_or("-")),
                    MAX_SIGNER_CELL,
                )
                .into_owned(),
                row.digest
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), short_digest),
            ]
        })
        .collect();
    let header = ["NAME", "FILE", "FROM", "SIGNER", "DIGEST"].map(str::to_owned);
    for line in table(&header, cells, 2, term::stdout_width()) {
        writeln!(out, "{line}")?;
    }
    // A file of a toolbox gives several rows: its command once.
    let mut records: Vec<&str> = rows
        .iter()
        .filter_map(|row| row.record.as_deref())
        .collect();
    records.dedup();
    if !records.is_empty() {
        writeln!(
            out,
            "\n{NOT_RECORDED}: copied by hand, so loaded with whatever bytes they have; \
             record each (its digest, then held to it) with:"
        )?;
        for record in records {
            writeln!(out, "  {}", shown.cell(record))?;
        }
    }
    Ok(Outcome::Success)
}

/// What `piton list --sources` says of a file piton.lock does not record.
const NOT_RECORDED: &str = "not recorded";

/// One tool of `piton list --sources`.
struct SourceRow {
    name: String,
    /// Its file (a plugins folder's file name), or its source for other tools.
    file: String,
    /// Where the file came from, as the lock records it; `None`: not recorded.
    source: Option<String>,
    /// Who signed it, as the lock records it.
    signer: Option<String>,
    digest: Option<String>,
    /// The manifest digest an OCI source resolved to.
    resolved: Option<String>,
    /// For a file not recorded: the command that records it (or how to).
    record: Option<String>,
}

impl SourceRow {
    fn of(tool: &dyn crate::tool::Tool, lock: &Lock) -> Self {
        let digest = tool
            .sandbox()
            .map(|s| format!("sha256:{}", s.component.sha256));
        let row = Self {
            name: tool.spec().name.clone(),
            file: tool.source().to_string(),
            source: Some("-".to_owned()),
            signer: None,
            digest,
            resolved: None,
            record: None,
        };
        let ToolSource::File(path) = tool.source() else {
            return row;
        };
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
        let file = file.unwrap_or_default();
        match lock.by_file(&file) {
            Some((_, entry)) => Self {
                file,
                source: Some(entry.source.clone()),
                signer: entry.signer.clone(),
                digest: Some(entry.digest.clone()),
                resolved: entry.resolved.clone(),
                ..row
            },
            None => Self {
                file,
                source: None,
                record: Some(
                    at_load::record_command(&path).unwrap_or_else(|| at_load::how_to_record(&path)),
                ),
                ..row
            },
        }
    }
}

/// `sha256:` and the first 12 hex digits (`--json` gives them all).
fn short_digest(digest: &str) -> String {
    match digest.strip_prefix("sha256:") {
        Some(hex) => format!("sha256:{}", &hex[..hex.len().min(12)]),
        None => digest.to_owned(),
    }
}

/// The widest NAME and SOURCE cells of `piton list`; a longer source keeps its end.
const MAX_NAME_CELL: usize = 64;
const MAX_SOURCE_CELL: usize = 48;
/// The widest SIGNER cell of `piton list --sources` (`--json` gives it whole).
const MAX_SIGNER_CELL: usize = 40;
/// The column of `piton list` that gives up room so that lines fit the width.
const DESCRIPTION_COLUMN: usize = 3;
/// The narrowest the description column gets, however wide the others are.
const MIN_DESCRIPTION_CELL: usize = 16;

/// The lines of a table with `header` and `rows`: columns two spaces apart, each as
/// wide as its widest cell, except column `flexible`, whose cells are cut (ending
/// in `…`) so that lines fit in `width` columns when the others leave room. Cells
/// are counted in characters and padded by hand (no formatting widths).
fn table<const N: usize>(
    header: &[String; N],
    mut rows: Vec<[String; N]>,
    flexible: usize,
    width: usize,
) -> Vec<String> {
    let natural = |rows: &[[String; N]], i: usize| {
        rows.iter()
            .chain([header])
            .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
            .max()
            .unwrap_or(0)
    };
    let mut widths: Vec<usize> = (0..N).map(|i| natural(&rows, i)).collect();
    let others: usize = widths
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != flexible)
        .map(|(_, w)| w + 2)
        .sum();
    let room = width.saturating_sub(others).max(MIN_DESCRIPTION_CELL);
    if let Some(w) = widths.get_mut(flexible)
        && *w > room
    {
        *w = room;
        for row in &mut rows {
            if let Some(cell) = row.get_mut(flexible) {
                *cell = term::cut_end(cell, room).into_owned();
            }
        }
    }
    std::iter::once(header)
        .chain(&rows)
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                line.push_str(cell);
                let pad = w.saturating_sub(cell.chars().count());
                line.extend(std::iter::repeat_n(' ', pad));
            }
            line.trim_end().to_owned()
        })
        .collect()
}

/// The first line of `text`.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
