//! What the doc comment of a tool function says: its description and the
//! description of each argument.
//!
//! Two forms describe arguments. The seed's (Google style):
//!
//! ```text
//! Args:
//!     text: The text to count,
//!         continued on a more indented line
//! ```
//!
//! and rustdoc's:
//!
//! ```text
//! # Arguments
//!
//! * `text` - The text to count,
//!   continued on the next line
//! ```

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// What one doc comment says.
#[derive(Debug, Default)]
pub(crate) struct Docs {
    /// The first paragraph, its lines joined with spaces.
    pub(crate) description: String,
    pub(crate) args: Vec<ArgDoc>,
}

/// The description of one argument.
#[derive(Debug)]
pub(crate) struct ArgDoc {
    pub(crate) name: String,
    pub(crate) description: String,
    /// The doc line that names the argument, for errors.
    pub(crate) span: Span,
}

struct Line {
    text: String,
    span: Span,
}

impl Line {
    fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start().len()
    }

    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }

    fn is_fence(&self) -> bool {
        let text = self.text.trim_start();
        text.starts_with("```") || text.starts_with("~~~")
    }
}

/// The kinds of line that end the first paragraph and open a section.
enum Header {
    /// `Args:` at the given indentation.
    Google(usize),
    /// `# Arguments`, any heading level.
    Rustdoc,
    /// Another Markdown heading.
    OtherHeading,
}

fn header(line: &Line) -> Option<Header> {
    let text = line.text.trim();
    if matches!(text, "Args:" | "Arguments:" | "Parameters:") {
        return Some(Header::Google(line.indent()));
    }
    let level = text.chars().take_while(|&c| c == '#').count();
    let title = text[level..].strip_prefix(' ')?;
    if !(1..=6).contains(&level) {
        return None;
    }
    let is_args = matches!(
        title.trim().to_ascii_lowercase().as_str(),
        "arguments" | "args" | "parameters"
    );
    Some(if is_args {
        Header::Rustdoc
    } else {
        Header::OtherHeading
    })
}

/// Parses the `#[doc]` attributes of a function.
pub(crate) fn parse(attrs: &[Attribute]) -> syn::Result<Docs> {
    let lines = lines(attrs);
    let mut docs = Docs {
        description: description(&lines),
        args: Vec::new(),
    };
    let mut in_fence = false;
    let mut index = 0;
    while index < lines.len() {
        let line = &lines[index];
        index += 1;
        if line.is_fence() {
            in_fence = !in_fence;
            continue;
        }
        match header(line) {
            Some(Header::Google(indent)) if !in_fence => {
                index = google(&lines, index, indent, &mut docs.args)?;
            }
            Some(Header::Rustdoc) if !in_fence => {
                index = rustdoc(&lines, index, &mut docs.args)?;
            }
            _ => {}
        }
    }
    let mut seen = Vec::new();
    for arg in &docs.args {
        if seen.contains(&arg.name) {
            return Err(syn::Error::new(
                arg.span,
                format!("argument `{}` is described twice", arg.name),
            ));
        }
        seen.push(arg.name.clone());
    }
    Ok(docs)
}

/// The doc lines, with the indentation they all share removed: `/// text`
/// gives ` text`, and nested indentation is what sections are made of.
fn lines(attrs: &[Attribute]) -> Vec<Line> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("doc")) {
        // `#[doc = include_str!(..)]` and the like cannot be read here: skipped.
        let Meta::NameValue(name_value) = &attr.meta else {
            continue;
        };
        let Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) = &name_value.value
        else {
            continue;
        };
        // Not `lines()`: a bare `///` is an empty string, and that blank line
        // is what ends the first paragraph.
        for text in text.value().split('\n') {
            lines.push(Line {
                text: text.trim_end().to_owned(),
                span: attr.span(),
            });
        }
    }
    let shared = lines
        .iter()
        .filter(|line| !line.is_blank())
        .map(Line::indent)
        .min()
        .unwrap_or(0);
    for line in &mut lines {
        line.text = line.text.get(shared..).unwrap_or_default().to_owned();
    }
    lines
}

fn description(lines: &[Line]) -> String {
    let paragraph: Vec<&str> = lines
        .iter()
        .skip_while(|line| line.is_blank())
        .take_while(|line| !line.is_blank() && !line.is_fence() && header(line).is_none())
        .map(|line| line.text.trim())
        .collect();
    paragraph.join(" ")
}

/// Reads the entries of an `Args:` section from `start`; returns where it ends.
fn google(
    lines: &[Line],
    start: usize,
    header_indent: usize,
    args: &mut Vec<ArgDoc>,
) -> syn::Result<usize> {
    let mut entry_indent = None;
    for (index, line) in lines.iter().enumerate().skip(start) {
        if line.is_blank() {
            continue;
        }
        let indent = line.indent();
        if indent <= header_indent {
            return Ok(index);
        }
        let text = line.text.trim();
        match (entry_indent, args.last_mut()) {
            (Some(entry), Some(arg)) if indent > entry => append(&mut arg.description, text),
            _ => {
                entry_indent = Some(indent);
                args.push(google_entry(text, line.span)?);
            }
        }
    }
    Ok(lines.len())
}

/// `name: description`, or `name (type): description`.
fn google_entry(text: &str, span: Span) -> syn::Result<ArgDoc> {
    let entry = text.split_once(':').and_then(|(name, description)| {
        let name = name.split_once(" (").map_or(name, |(name, _)| name);
        Some(ArgDoc {
            name: arg_name(name)?,
            description: description.trim().to_owned(),
            span,
        })
    });
    entry.ok_or_else(|| {
        syn::Error::new(
            span,
            format!("in the `Args:` section, expected `name: description`, found `{text}`"),
        )
    })
}

/// Reads the list items of a `# Arguments` section from `start`; returns where it ends.
fn rustdoc(lines: &[Line], start: usize, args: &mut Vec<ArgDoc>) -> syn::Result<usize> {
    let mut in_item = false;
    let mut after_blank = false;
    let mut in_fence = false;
    for (index, line) in lines.iter().enumerate().skip(start) {
        if line.is_fence() {
            in_fence = !in_fence;
            in_item = false;
            continue;
        }
        if in_fence {
            continue;
        }
        if header(line).is_some() {
            return Ok(index);
        }
        if line.is_blank() {
            after_blank = true;
            continue;
        }
        let text = line.text.trim();
        if let Some(item) = ["* ", "- ", "+ "]
            .iter()
            .find_map(|bullet| text.strip_prefix(bullet))
        {
            args.push(rustdoc_item(item, line.span)?);
            in_item = true;
        } else if in_item && (line.indent() > 0 || !after_blank) {
            if let Some(arg) = args.last_mut() {
                append(&mut arg.description, text);
            }
        } else {
            // Prose around the list, such as "The arguments are:".
            in_item = false;
        }
        after_blank = false;
    }
    Ok(lines.len())
}

/// `` `name` - description ``, `` `name`: description `` or `name: description`.
fn rustdoc_item(item: &str, span: Span) -> syn::Result<ArgDoc> {
    let split = match item.strip_prefix('`') {
        Some(quoted) => quoted.split_once('`').map(|(name, rest)| {
            let rest = rest.trim_start();
            let rest = ["-", ":", "\u{2013}", "\u{2014}"]
                .iter()
                .find_map(|separator| rest.strip_prefix(separator))
                .unwrap_or(rest);
            (name, rest)
        }),
        None => item.split_once(':').or_else(|| item.split_once(" - ")),
    };
    let entry = split.and_then(|(name, description)| {
        Some(ArgDoc {
            name: arg_name(name)?,
            description: description.trim().to_owned(),
            span,
        })
    });
    entry.ok_or_else(|| {
        syn::Error::new(
            span,
            format!(
                "in the `# Arguments` section, expected `* `name` - description`, found `{item}`"
            ),
        )
    })
}

/// A parameter name as a doc comment writes it, without any `r#`.
fn arg_name(name: &str) -> Option<String> {
    let name = name.trim();
    let name = name.strip_prefix("r#").unwrap_or(name);
    let valid = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    valid.then(|| name.to_owned())
}

fn append(description: &mut String, text: &str) {
    if !description.is_empty() {
        description.push(' ');
    }
    description.push_str(text);
}

#[cfg(test)]
#[path = "docs_tests.rs"]
mod tests;
