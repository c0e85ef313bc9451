//! `piton call`: one call of one tool, its arguments from the command line or stdin,
//! its result printed (images saved to files) and its kind of ending as the exit code.

use std::io::{self, Read as _, Write};
use std::path::PathBuf;

use serde_json::Value;

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
    match registry.call(name, args).await {
        Ok(Ok(content)) => {
            print_content(name, &content, image_dir)?;
            Ok(Outcome::Success)
        }
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

fn print_content(tool: &str, content: &[Content], image_dir: Option<PathBuf>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if content.is_empty() {
        return writeln!(out, "{DONE}");
    }
    for (index, block) in content.iter().enumerate() {
        match block {
            Content::Text { text } => writeln!(out, "{}", shown.text(text))?,
            Content::Json { json } => writeln!(out, "{}", shown.text(&pretty(json)))?,
            Content::Image { mime_type, data } => {
                let dir = image_dir.clone().unwrap_or_else(std::env::temp_dir);
                let extension = mime_type
                    .rsplit('/')
                    .next()
                    .filter(|e| e.chars().all(char::is_alphanumeric))
                    .unwrap_or("bin");
                let path = dir.join(format!(
                    "piton-{tool}-{}-{index}.{extension}",
                    std::process::id()
                ));
                std::fs::write(&path, data).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot save the image to {}: {e}", path.display()),
                    )
                })?;
                writeln!(
                    out,
                    "image ({}, {} bytes) saved to {}",
                    shown.cell(mime_type),
                    data.len(),
                    path.display()
                )?;
            }
        }
    }
    Ok(())
}
