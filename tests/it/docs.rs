//! The README and docs/ stay true: the README is short enough to read in five
//! minutes, every relative link reaches a file (and a heading, when it names one),
//! and every `piton …` command line they show names a command and flags that
//! `piton … --help` lists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The most lines README.md may have: what piton is, the two commands, a short
/// install, a tool in Rust and in Python, the hints × grants table and an index.
const README_LINES: usize = 250;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

/// README.md and every page of docs/, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ reads")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 8, "docs/ has {} pages", docs.len());
    paths.extend(docs);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a page reads");
            (path, text)
        })
        .collect()
}

/// The text of `page` outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    prose(text)
        .lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| anchor(line.trim_start_matches('#')))
        .collect()
}

/// Every `[text](target)` link of `text` outside code.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            found.push(rest[..end].to_owned());
        }
    }
    found
}

#[test]
fn the_readme_is_short() {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README.md reads");
    let lines = text.lines().count();
    assert!(
        lines <= README_LINES,
        "README.md has {lines} lines, over {README_LINES}: move the detail into a page of docs/"
    );
}

#[test]
fn every_relative_link_reaches_a_file_and_its_heading() {
    let mut broken = Vec::new();
    for (page, text) in pages() {
        let folder = page.parent().expect("a page has a folder");
        for link in links(&text) {
            if link.starts_with("http://") || link.starts_with("https://") {
                continue;
            }
            let (file, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                folder.join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", page.display()));
                continue;
            }
            if !fragment.is_empty() {
                let text = std::fs::read_to_string(&target).unwrap_or_default();
                if !anchors(&text).iter().any(|a| a == fragment) {
                    broken.push(format!("{}: {link}: no such heading", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `piton` command lines shown in `text`: lines of code blocks that start with
/// `piton ` (or `$ piton `), with the lines under one that continue it (flags in
/// brackets, or after a line that ends in `\`),
/// and inline code spans that start with `piton `.
fn command_lines(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut fenced = false;
    let mut continuing = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continuing = false;
            continue;
        }
        if fenced {
            let bare = line.trim_start_matches("$ ");
            if bare.starts_with("piton ") {
                found.push(bare.to_owned());
                continuing = true;
            } else if continuing
                && (line.trim_start().starts_with('[')
                    || found.last().is_some_and(|last| last.ends_with('\\')))
            {
                if let Some(last) = found.last_mut() {
                    last.push(' ');
                    last.push_str(line.trim());
                }
            } else if !line.starts_with(' ') {
                continuing = false;
            }
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 && span.starts_with("piton ") {
                found.push(span.to_owned());
            }
        }
    }
    found
}

/// The words of a command line: comments, quoted strings and `[`/`]`/`|` taken out.
fn words(line: &str) -> Vec<String> {
    let line = line.split("  #").next().unwrap_or(line);
    let mut out = String::new();
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '[' | ']' | '|') => out.push(' '),
            (None, c) => out.push(c),
        }
    }
    out.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn every_piton_command_line_shown_uses_commands_and_flags_that_exist() {
    let mut helps: BTreeMap<Vec<String>, Option<String>> = BTreeMap::new();
    let mut help = |path: &[String]| -> Option<String> {
        helps
            .entry(path.to_vec())
            .or_insert_with(|| {
                let output = Command::new(env!("CARGO_BIN_EXE_piton"))
                    .args(path)
                    .arg("--help")
                    .output()
                    .expect("piton runs");
                output
                    .status
                    .success()
                    .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
            })
            .clone()
    };
    let commands = help(&[]).expect("piton --help");
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (page, text) in pages() {
        for line in command_lines(&text) {
            let words = words(&line);
            let Some(command) = words.get(1) else {
                continue;
            };
            let listed = commands
                .lines()
                .any(|l| l.split_whitespace().next() == Some(command.as_str()));
            if !listed {
                wrong.push(format!(
                    "{}: `{line}`: no command {command}",
                    page.display()
                ));
                continue;
            }
            let mut path = vec![command.clone()];
            // A subcommand of the command (`piton cache clean`).
            if let Some(next) = words.get(2)
                && let Some(text) = help(&path)
                && text.contains("Commands:")
                && text
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(next.as_str()))
            {
                path.push(next.clone());
            }
            let text = help(&path).unwrap_or_default();
            for flag in words.iter().filter(|w| w.starts_with('-') && w.len() > 1) {
                let flag = flag.split('=').next().unwrap_or(flag);
                if flag == "-" {
                    continue;
                }
                let known = text
                    .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
                    .any(|w| w == flag || w.split('=').next() == Some(flag));
                if !known {
                    wrong.push(format!(
                        "{}: `{line}`: `piton {} --help` has no {flag}",
                        page.display(),
                        path.join(" ")
                    ));
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 30, "only {checked} command lines found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
