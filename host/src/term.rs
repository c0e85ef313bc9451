//! Text that guests and upstream servers wrote, shown on the user's terminal.
//!
//! A terminal obeys control sequences in what it prints: OSC 52 writes the
//! clipboard, CSI sequences move the cursor or clear the screen, a carriage return
//! overwrites what was shown. So when piton's stdout (or stderr) is a terminal, the
//! text it prints from a tool (results, errors, descriptions) shows those characters
//! escaped; piped or redirected, it stays as the tool wrote it.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::IsTerminal as _;

/// How the table of `piton list` is cut when stdout is not a terminal (or the
/// terminal does not say its width).
pub(crate) const PIPED_WIDTH: usize = 160;

/// The width assumed for a terminal that does not say its width.
const TERMINAL_WIDTH: usize = 80;

/// Where text goes: escaped for a terminal, raw otherwise.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shown {
    escape: bool,
}

impl Shown {
    /// For stdout: escaped when it is a terminal.
    pub(crate) fn stdout() -> Self {
        Self {
            escape: std::io::stdout().is_terminal(),
        }
    }

    /// For stderr: escaped when it is a terminal.
    pub(crate) fn stderr() -> Self {
        Self {
            escape: std::io::stderr().is_terminal(),
        }
    }

    /// `text` as it may be printed: newlines and tabs kept, other control
    /// characters escaped when this goes to a terminal.
    pub(crate) fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.escape {
            escape(text, true)
        } else {
            Cow::Borrowed(text)
        }
    }

    /// One table cell or one-line field: control characters (tabs and newlines
    /// too) always escaped, since raw they would break the line or the columns.
    pub(crate) fn cell<'a>(&self, text: &'a str) -> Cow<'a, str> {
        escape(text, false)
    }
}

/// Whether `c` must not reach a terminal raw: C0 controls (but `\n` and `\t` when
/// `keep_layout`), DEL, C1 controls (U+0080-U+009F: 8-bit CSI, OSC...), and the
/// bidirectional overrides and isolates that reorder what is shown.
fn is_dangerous(c: char, keep_layout: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_layout,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// `text` with dangerous characters written as escapes: ESC as `\e`, CR as `\r`, a
/// newline and a tab as `\n` and `\t` (when not kept), other ASCII controls as
/// `\xNN`, the rest as `\u{NNNN}`.
pub(crate) fn escape(text: &str, keep_layout: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_dangerous(c, keep_layout)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !is_dangerous(c, keep_layout) {
            out.push(c);
            continue;
        }
        match c {
            '\u{1b}' => out.push_str("\\e"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

/// The width `piton list` fits its lines to: the terminal's columns when stdout
/// is a terminal that says them, else [`PIPED_WIDTH`].
pub(crate) fn stdout_width() -> usize {
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return PIPED_WIDTH;
    }
    #[cfg(unix)]
    if let Ok(size) = rustix::termios::tcgetwinsize(&stdout)
        && size.ws_col > 0
    {
        return usize::from(size.ws_col);
    }
    TERMINAL_WIDTH
}

/// `text` cut to at most `max` characters, the last one `…` when cut.
pub(crate) fn cut_end(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some(_) => {
            let keep = max.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            Cow::Owned(format!("{}…", text.get(..end).unwrap_or_default()))
        }
    }
}

/// `text` cut to at most `max` characters from the start, the first one `…` when
/// cut (so a path keeps its file name).
pub(crate) fn cut_start(text: &str, max: usize) -> Cow<'_, str> {
    let count = text.chars().count();
    if count <= max {
        return Cow::Borrowed(text);
    }
    let skip = count - max.saturating_sub(1);
    let start = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    Cow::Owned(format!("…{}", text.get(start..).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_layout_kept() {
        let raw = "a\x1b]52;c;cHduZWQ=\x07\x1b[2J\0\tb\r\nc\u{9b}d\u{202e}e\u{7f}";
        assert_eq!(
            escape(raw, true),
            "a\\e]52;c;cHduZWQ=\\x07\\e[2J\\x00\tb\\r\nc\\u{9b}d\\u{202e}e\\x7f"
        );
        assert_eq!(escape("a\tb\nc", false), "a\\tb\\nc");
        assert!(matches!(escape("plain ü 日本", true), Cow::Borrowed(_)));
    }

    #[test]
    fn cuts_count_characters_and_mark_the_cut() {
        assert_eq!(cut_end("abcdef", 4), "abc…");
        assert_eq!(cut_end("abcd", 4), "abcd");
        assert_eq!(cut_end("日本語テキスト", 3), "日本…");
        assert_eq!(cut_end("abc", 0), "…");
        assert_eq!(cut_start("/long/path/x.wasm", 8), "…/x.wasm");
        assert_eq!(cut_start("x.wasm", 8), "x.wasm");
    }
}
