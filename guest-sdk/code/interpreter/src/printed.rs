//! What the program prints, kept up to a bound: past it the bytes are counted, not
//! kept, so a program that prints in a loop neither fails nor fills memory.

use std::borrow::Cow;

use monty_types::{MontyException, PrintWriterCallback};

/// The printed output of one run.
pub(crate) struct Printed {
    kept: String,
    max: usize,
    /// Bytes left out past `max`.
    pub(crate) cut: u64,
}

impl Printed {
    /// Keeps at most `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            kept: String::new(),
            max,
            cut: 0,
        }
    }

    /// What was kept.
    pub(crate) fn text(&self) -> String {
        self.kept.clone()
    }

    /// Once something was cut, nothing more is kept: the kept text is a prefix of
    /// the output.
    fn push_str(&mut self, text: &str) {
        if self.cut > 0 {
            self.cut = self.cut.saturating_add(text.len() as u64);
            return;
        }
        let room = self.max.saturating_sub(self.kept.len());
        if text.len() <= room {
            self.kept.push_str(text);
            return;
        }
        let mut end = room;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.kept.push_str(&text[..end]);
        self.cut = self.cut.saturating_add((text.len() - end) as u64);
    }
}

impl PrintWriterCallback for Printed {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push_str(&output);
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        let mut buf = [0u8; 4];
        self.push_str(end.encode_utf8(&mut buf));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_past_the_bound_is_counted_not_kept() {
        let mut printed = Printed::new(5);
        printed.stdout_write("abc".into()).unwrap();
        printed.stdout_write("déf".into()).unwrap();
        // "d" fits, "é" (2 bytes) does not: cut on a character boundary.
        assert_eq!(printed.text(), "abcd");
        assert_eq!(printed.cut, 3);
        printed.stdout_push('\n').unwrap();
        assert_eq!(printed.cut, 4);
    }
}
