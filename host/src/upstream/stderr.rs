//! A stdio upstream server's stderr: logged line by line, its last lines kept for
//! error messages, with the secrets the server was given masked.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncBufReadExt as _;
use tokio::process::ChildStderr;

/// How many lines of a stdio server's stderr are kept for error messages.
const STDERR_TAIL: usize = 5;

/// How much of one stderr line is kept (the rest is cut), so a server that never
/// writes a newline cannot grow piton's memory.
const STDERR_LINE: usize = 4096;

/// The last lines a stdio server wrote to stderr, and whether it has closed it.
#[derive(Default)]
pub(super) struct Tail {
    lines: Mutex<VecDeque<String>>,
    closed: AtomicBool,
}

impl Tail {
    /// Waits a little for the reader to reach the end of a dying server's stderr, so
    /// that its last words make it into the error.
    pub(super) async fn settle(&self) {
        for _ in 0..20 {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Follows `stderr` until it closes: its bytes, with each of `secrets` (every
    /// non-empty one, however short) replaced by `***` wherever it falls (across
    /// reads and lines alike), are cut into lines of at most [`STDERR_LINE`] bytes,
    /// decoded lossily and with control characters escaped; each is logged under
    /// `server` and the last [`STDERR_TAIL`] are kept.
    pub(super) fn follow(stderr: ChildStderr, server: String, secrets: Vec<String>) -> Arc<Self> {
        let tail = Arc::new(Self::default());
        let keep = tail.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt as _;
            let mut reader = tokio::io::BufReader::new(stderr);
            let mut masker = Masker::new(&secrets);
            let mut bytes = Vec::new();
            let mut line = Vec::new();
            loop {
                bytes.clear();
                // At most STDERR_LINE bytes at a time: a longer line comes in pieces.
                let end = match (&mut reader)
                    .take(STDERR_LINE as u64)
                    .read_until(b'\n', &mut bytes)
                    .await
                {
                    Ok(0) => true,
                    Ok(_) => false,
                    Err(_) => {
                        // Keep draining, so the server never writes to a closed pipe.
                        let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
                        true
                    }
                };
                for &byte in &masker.push(&bytes, end) {
                    if byte == b'\n' {
                        keep.push_line(&server, &line);
                        line.clear();
                    } else {
                        line.push(byte);
                        if line.len() >= STDERR_LINE {
                            keep.push_line(&server, &line);
                            line.clear();
                        }
                    }
                }
                if end {
                    break;
                }
            }
            if !line.is_empty() {
                keep.push_line(&server, &line);
            }
            keep.closed.store(true, Ordering::Release);
        });
        tail
    }

    /// Logs one masked line and keeps it among the last ones.
    fn push_line(&self, server: &str, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let line = crate::term::escape(text.trim_end(), false).into_owned();
        tracing::info!(server, "stderr: {line}");
        let mut lines = self
            .lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() == STDERR_TAIL {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// "; its last stderr: A | B", or nothing when it wrote nothing.
    pub(super) fn quote(&self) -> String {
        let lines = self
            .lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.is_empty() {
            String::new()
        } else {
            format!(
                "; its last stderr: {}",
                lines.iter().cloned().collect::<Vec<_>>().join(" | ")
            )
        }
    }
}

/// Replaces secrets in a stream of bytes given in pieces. A piece's end that may be
/// the start of a secret is held back until the next piece says whether it is one,
/// so a secret split across reads (or lines) is masked like any other.
struct Masker {
    /// Longest first, so that a secret holding a shorter one is masked whole.
    secrets: Vec<Vec<u8>>,
    pending: Vec<u8>,
}

impl Masker {
    fn new(secrets: &[String]) -> Self {
        let mut secrets: Vec<Vec<u8>> = secrets
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| s.as_bytes().to_vec())
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self {
            secrets,
            pending: Vec::new(),
        }
    }

    /// `bytes` (after what was held back) with the secrets masked, except an end that
    /// may begin a secret, held back unless this is the `last` piece.
    fn push(&mut self, bytes: &[u8], last: bool) -> Vec<u8> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::with_capacity(self.pending.len());
        let mut at = 0;
        while let Some(rest) = self.pending.get(at..).filter(|r| !r.is_empty()) {
            if let Some(secret) = self.secrets.iter().find(|s| rest.starts_with(s)) {
                out.extend_from_slice(b"***");
                at += secret.len();
            } else if !last && self.secrets.iter().any(|s| s.starts_with(rest)) {
                break;
            } else {
                out.extend_from_slice(rest.get(..1).unwrap_or_default());
                at += 1;
            }
        }
        self.pending.drain(..at);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Tail` keeps of a server that writes `script`'s output to stderr, with
    /// `secrets` to mask.
    async fn tail_of(script: &str, secrets: &[&str]) -> String {
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{{ {script}; }} 1>&2"))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh runs");
        let stderr = child.stderr.take().expect("piped");
        let tail = Tail::follow(
            stderr,
            "test".into(),
            secrets.iter().map(|s| (*s).to_owned()).collect(),
        );
        child.wait().await.expect("sh ends");
        tail.settle().await;
        tail.quote()
    }

    fn masked(secrets: &[&str], pieces: &[&str]) -> String {
        let secrets: Vec<String> = secrets.iter().map(|s| (*s).to_owned()).collect();
        let mut masker = Masker::new(&secrets);
        let mut out = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            out.extend(masker.push(piece.as_bytes(), i + 1 == pieces.len()));
        }
        String::from_utf8(out).expect("utf-8 in, utf-8 out")
    }

    #[test]
    fn secrets_are_masked_across_pieces() {
        assert_eq!(masked(&["SECRET"], &["a SE", "CR", "ET b"]), "a *** b");
        assert_eq!(masked(&["SECRET"], &["a SE", "CRE", ""]), "a SECRE");
        assert_eq!(masked(&["SEC"], &["SESESEC", "SE"]), "SESE***SE");
        assert_eq!(masked(&["x"], &["axbx", "x"]), "a***b******");
        assert_eq!(masked(&["ab", "abcd"], &["abcdab", "c"]), "******c");
        assert_eq!(masked(&[""], &["text"]), "text");
        assert_eq!(masked(&["tok"], &["to", "p tok"]), "top ***");
    }

    #[tokio::test]
    async fn a_secret_across_the_4_kib_boundary_is_masked() {
        // 4094 bytes, then the secret: its first two bytes end the first 4 KiB read.
        let quoted = tail_of(
            "head -c 4094 /dev/zero | tr '\\0' a; printf 'SECRETxyz rest\\n'",
            &["SECRETxyz"],
        )
        .await;
        assert!(
            !quoted.contains("CRETxyz"),
            "{}",
            &quoted[quoted.len() - 60..]
        );
        // The mask itself may straddle the 4 KiB line cut: "aa…**" then "* rest".
        assert_eq!(
            quoted.matches('*').count(),
            3,
            "{}",
            &quoted[quoted.len() - 60..]
        );
        assert!(
            quoted.ends_with("* rest"),
            "{}",
            &quoted[quoted.len() - 60..]
        );
    }

    #[tokio::test]
    async fn a_secret_of_one_to_three_bytes_is_masked() {
        let quoted = tail_of("printf 'pin=7Q! end\\n'", &["7Q!"]).await;
        assert_eq!(quoted, "; its last stderr: pin=*** end");
    }

    #[tokio::test]
    async fn a_secret_over_two_lines_is_masked() {
        let quoted = tail_of(
            "printf 'key: BEGIN\\nKEY END\\nnext\\n'",
            &["BEGIN\nKEY END"],
        )
        .await;
        assert!(
            !quoted.contains("BEGIN") && !quoted.contains("KEY"),
            "{quoted}"
        );
        assert!(
            quoted.contains("key: ***") && quoted.contains("next"),
            "{quoted}"
        );
    }
}
