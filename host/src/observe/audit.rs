//! The audit log: one JSON line per call, written by a thread of its own so that a
//! slow or stuck destination never holds a call up.
//!
//! A record is queued when its call ends (traps and timeouts too; a call dropped
//! before it ends, as a cancelled request is, gets `"outcome": "cancelled"`). When
//! the queue is full (the destination is not keeping up) the record is dropped and
//! counted in `piton_audit_records_dropped_total`; a write error is logged once.
//!
//! Records are written in batches: the first record after a write wakes the writer,
//! which lets [`BATCH`] pass and then writes every record queued by then at once. A
//! call so pays for its record's serialization and a lock, not for waking a thread
//! and a write each (measured by benches/call.rs: 14 µs a call when each record woke
//! the writer for its own write).

use std::io::Write as _;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::call::notes::{Denial, Granted};
use crate::config::audit::{AuditSettings, AuditTo};
use piton_wit::Hints;

/// Records waiting to be written, at most.
const QUEUE: usize = 4096;

/// Bytes of records waiting to be written, at most (a record with its arguments can
/// be large).
const QUEUE_BYTES: usize = 64 << 20;

/// How long the writer lets records gather after the first one wakes it.
const BATCH: Duration = Duration::from_millis(10);

/// How long closing waits for the records still queued.
const FLUSH_WAIT: Duration = Duration::from_secs(5);

/// The most bytes of an error message a record keeps.
pub(crate) const MAX_MESSAGE: usize = 4096;

/// What waits for the writer thread.
#[derive(Default)]
struct Queued {
    /// The records, each a line.
    text: String,
    /// How many records `text` holds.
    records: usize,
    /// Each told once everything queued before it is written.
    flushes: Vec<std::sync::mpsc::Sender<()>>,
    /// The log is closed: write what is queued and end.
    closed: bool,
}

/// The queue and the writer's wake-up.
#[derive(Default)]
struct Queue {
    queued: Mutex<Queued>,
    wake: Condvar,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Queued> {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The open audit log.
pub(crate) struct AuditLog {
    queue: Arc<Queue>,
    /// Whether records carry the arguments themselves (piton.toml `arguments = true`).
    pub(crate) arguments: bool,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.wake.notify_one();
    }
}

/// What the approver decided about a call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Approval {
    /// No approver was asked (none is set, or the call stopped before).
    #[default]
    None,
    /// The approver allowed the call.
    Allow,
    /// The approver denied it, with this reason.
    Deny(String),
}

/// One call's record, as written.
#[derive(Debug, Serialize)]
pub(crate) struct Record<'a> {
    pub(crate) time: String,
    pub(crate) tool: &'a str,
    pub(crate) source: Option<String>,
    pub(crate) hints: Option<Hints>,
    pub(crate) granted: Option<Granted>,
    pub(crate) denials: Vec<Denial>,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) denials_not_listed: u64,
    pub(crate) approval: Approval,
    /// How the person's consent went: asked, allowed_once, denied, could_not_ask…
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) consent: Option<&'static str>,
    /// The questions the tool's upstream MCP server asked during the call, and what
    /// became of each (the first few).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) upstream_questions: Vec<crate::call::notes::UpstreamQuestion>,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) upstream_questions_not_listed: u64,
    pub(crate) duration_ms: f64,
    pub(crate) outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    pub(crate) arguments_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<serde_json::Value>,
    /// The program run that made the call (code mode): its tool and run id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) made_by: Option<crate::call::MadeBy>,
    /// The call's id; a program's calls name it as their run's.
    pub(crate) call: crate::call::CallId,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl AuditLog {
    /// Opens the log `settings` name, if any: a file is opened for appending
    /// (created private to the user, 0600).
    pub(crate) fn open(settings: &AuditSettings) -> Result<Option<Self>, std::io::Error> {
        let Some(to) = &settings.to else {
            return Ok(None);
        };
        let out: Box<dyn std::io::Write + Send> = match to {
            AuditTo::Stderr => Box::new(std::io::stderr()),
            AuditTo::File(path) => {
                let mut options = std::fs::OpenOptions::new();
                options.append(true).create(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                Box::new(options.open(path)?)
            }
        };
        let queue = Arc::new(Queue::default());
        let name = to.to_string();
        let writer = queue.clone();
        std::thread::Builder::new()
            .name("piton-audit".into())
            .spawn(move || write_all(&writer, out, &name))?;
        Ok(Some(Self {
            queue,
            arguments: settings.arguments,
        }))
    }

    /// Queues `record`; false when it could not be (the queue is full).
    pub(crate) fn write(&self, record: &Record<'_>) -> bool {
        let mut line = match serde_json::to_string(record) {
            Ok(line) => line,
            Err(error) => {
                tracing::error!(%error, "cannot serialize an audit record");
                return false;
            }
        };
        line.push('\n');
        let mut queued = self.queue.lock();
        if queued.closed
            || queued.records >= QUEUE
            || queued.text.len().saturating_add(line.len()) > QUEUE_BYTES
        {
            return false;
        }
        let first = queued.records == 0;
        queued.text.push_str(&line);
        queued.records += 1;
        drop(queued);
        if first {
            self.queue.wake.notify_one();
        }
        true
    }

    /// Waits (up to a few seconds) until every record queued so far is written.
    pub(crate) fn flush(&self) {
        let (done, wait) = std::sync::mpsc::channel();
        {
            let mut queued = self.queue.lock();
            if queued.closed {
                return;
            }
            queued.flushes.push(done);
        }
        self.queue.wake.notify_one();
        let _ = wait.recv_timeout(FLUSH_WAIT);
    }
}

/// The writer thread: what is queued, in one write each time, until the log is
/// closed. A failed write is logged once.
fn write_all(queue: &Queue, mut out: Box<dyn std::io::Write + Send>, name: &str) {
    let mut failed = false;
    loop {
        let mut queued = queue.lock();
        while queued.records == 0 && queued.flushes.is_empty() && !queued.closed {
            queued = queue
                .wake
                .wait(queued)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if queued.flushes.is_empty() && !queued.closed {
            // Let the records of the calls ending now join this write.
            drop(queued);
            std::thread::sleep(BATCH);
            queued = queue.lock();
        }
        let text = std::mem::take(&mut queued.text);
        queued.records = 0;
        let flushes = std::mem::take(&mut queued.flushes);
        let closed = queued.closed;
        drop(queued);
        if !text.is_empty()
            && let Err(error) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
            && !failed
        {
            failed = true;
            tracing::error!(
                to = name,
                %error,
                "cannot write the audit log; records are being lost (this is said once)"
            );
        }
        for done in flushes {
            let _ = done.send(());
        }
        if closed {
            return;
        }
    }
}

/// The SHA-256 of the arguments' canonical JSON text, in hex: the digest a consent
/// question shows the person (consent/form.rs), so a record and a question match.
pub(crate) fn arguments_sha256(args: &serde_json::Value) -> String {
    hex::encode(crate::consent::form::args_digest(args))
}

/// `time` as RFC 3339 in UTC, to the millisecond: `2026-12-01T16:21:54.123Z`.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        let at = |secs: u64, millis: u64| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_796_142_114, 123), "2026-12-01T16:21:54.123Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
    }

    #[test]
    fn the_arguments_hash_is_of_their_canonical_json_text() {
        use sha2::{Digest as _, Sha256};
        let args = serde_json::json!({"text": "a b c", "at": "x\u{2028}y"});
        assert_eq!(
            arguments_sha256(&args),
            hex::encode(Sha256::digest(br#"{"at":"x\u2028y","text":"a b c"}"#))
        );
    }

    #[test]
    fn a_file_log_is_private_appended_and_flushed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("audit.log");
        std::fs::write(&path, "earlier\n").expect("write");
        let settings = AuditSettings {
            to: Some(AuditTo::File(path.clone())),
            arguments: false,
        };
        let log = AuditLog::open(&settings).expect("opens").expect("a log");
        let record = Record {
            time: rfc3339(SystemTime::now()),
            tool: "t",
            source: None,
            hints: None,
            granted: None,
            denials: Vec::new(),
            denials_not_listed: 0,
            approval: Approval::Deny("no".into()),
            consent: None,
            upstream_questions: Vec::new(),
            upstream_questions_not_listed: 0,
            duration_ms: 1.5,
            outcome: "ok",
            message: None,
            arguments_sha256: None,
            arguments: None,
            made_by: None,
            call: crate::call::CallContext::new().id(),
        };
        assert!(log.write(&record));
        log.flush();
        let text = std::fs::read_to_string(&path).expect("read");
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("earlier"));
        let line: serde_json::Value =
            serde_json::from_str(lines.next().expect("a record")).expect("JSON");
        assert_eq!(line["approval"], serde_json::json!({"deny": "no"}));
        assert_eq!(line["outcome"], "ok");
        assert!(line.get("message").is_none());
        assert!(line.get("made_by").is_none(), "a client's call");
        assert!(line["call"].is_u64());
        // Not made private after the fact: only a file piton creates is 0600.
        let fresh = dir.path().join("new.log");
        let settings = AuditSettings {
            to: Some(AuditTo::File(fresh.clone())),
            arguments: false,
        };
        drop(AuditLog::open(&settings).expect("opens"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&fresh)
                .expect("made")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
