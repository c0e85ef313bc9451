//! `piton call`: one call of one tool, its arguments from the command line or stdin,
//! its result printed (images saved to files) and its kind of ending as the exit code.

use std::io::{self, Read as _, Write};
use std::path::PathBuf;

use serde_json::Value;

use super::images::ImageFolder;
use super::out::{Outcome, pretty, say};
use crate::error::CallError;
use crate::registry::Registry;
use crate::term::Shown;
use crate::tool::{Content, DONE, ToolError};

pub(super) async fn call(
    registry: &Registry,
    name: &str,
    args: Option<&str>,
    image_dir: Option<PathBuf>,
) -> io::Result<Outcome> {
    let text = match args {
        Some("-") => {
            let mut text = String::new();
            if let Err(e) = io::stdin().read_to_string(&mut text) {
                eprintln!("error: cannot read the arguments from stdin: {e}");
                return Ok(Outcome::Usage);
            }
            text
        }
        Some(text) => text.to_owned(),
        None => "{}".to_owned(),
    };
    let args: Value = match serde_json::from_str(&text) {
        Ok(args) => args,
        Err(e) => {
            if let Err(CallError::UnknownTool { .. }) = registry.find(name).await {
                return unknown(registry, name);
            }
            eprintln!(
                "{}",
                ToolError::Input(format!("the arguments are not valid JSON: {e}"))
            );
            return Ok(Outcome::ErrorResult);
        }
    };
    // Checked before the call: nothing runs for a result that could not be saved.
    let mut images = match ImageFolder::new(registry, image_dir) {
        Ok(images) => images,
        Err(error) => {
            say(format_args!("error: {error}"));
            return Ok(Outcome::Usage);
        }
    };
    match registry.call(name, args).await {
        Ok(Ok(content)) => print_content(name, &content, &mut images),
        Ok(Err(error)) => {
            say(format_args!("{error}"));
            Ok(Outcome::ErrorResult)
        }
        Err(CallError::UnknownTool { .. }) => unknown(registry, name),
        Err(error) => {
            say(format_args!("error: {error}"));
            Ok(Outcome::Stopped)
        }
    }
}

pub(super) fn unknown(registry: &Registry, name: &str) -> io::Result<Outcome> {
    let error = CallError::UnknownTool {
        name: name.to_owned(),
        known: registry.names(),
    };
    say(format_args!("error: {error}"));
    Ok(Outcome::Usage)
}

/// Prints `content`, saving its images in `images`; `Usage` when one could not be
/// saved (the rest is printed all the same).
fn print_content(tool: &str, content: &[Content], images: &mut ImageFolder) -> io::Result<Outcome> {
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if content.is_empty() {
        writeln!(out, "{DONE}")?;
        return Ok(Outcome::Success);
    }
    let mut outcome = Outcome::Success;
    for (index, block) in content.iter().enumerate() {
        match block {
            Content::Text { text } => writeln!(out, "{}", shown.text(text))?,
            Content::Json { json } => writeln!(out, "{}", shown.text(&pretty(json)))?,
            Content::Image { mime_type, data } => {
                let extension = mime_type
                    .rsplit('/')
                    .next()
                    .filter(|e| e.chars().all(char::is_alphanumeric))
                    .unwrap_or("bin");
                match images.save(tool, index, extension, data) {
                    Ok(path) => writeln!(
                        out,
                        "image ({}, {} bytes) saved to {}",
                        shown.cell(mime_type),
                        data.len(),
                        path.display()
                    )?,
                    Err(error) => {
                        say(format_args!("error: {error}"));
                        outcome = Outcome::Usage;
                    }
                }
            }
        }
    }
    Ok(outcome)
}
