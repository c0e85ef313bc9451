//! The trust policy at load, for each file of the plugins folder, before the engine
//! reads it:
//!
//! - a file piton.lock records loads only if the signer the lock records (if any)
//!   is one piton.toml still trusts for its source; under `require = "signed"` a
//!   signer must be recorded. So a key taken out of `[[trust.keys]]` stops what it
//!   signed at the next reload.
//! - a file copied by hand loads only if the Sigstore bundle beside it
//!   (`FILE.wasm.sigstore.json`) verifies over its bytes; under `signed` the bundle
//!   must be there, under `pinned` and `any` a file with none loads.
//!
//! A hand-copied file whose bundle verified loads only with the bytes verified: the
//! engine reads the file again to compile it, and a file swapped in between is
//! refused (see [`Judged::Verified`]).
//!
//! Whatever `require` says, a signature that is there must verify, as at `piton add`:
//! a refusal names the signers expected and the one found. A signature counts for
//! nothing only when the policy names no key or identity for the source (there is
//! nothing to check it against). The digests piton.lock records are checked by the
//! loader as pins (see [`crate::supply::lock`]).

use std::collections::BTreeMap;
use std::path::Path;

use sha2::Digest as _;

use crate::config::pins::{Pin, PinnedBy, Sha256};

use super::lock::{Lock, check_name};
use super::signatures::bundle_beside;
use super::trust::{self, Artifact, Require, Rule, SignatureMaterial, Signer, TrustPolicy};

/// The most bytes of a bundle read at load.
const MAX_BUNDLE: u64 = 1 << 20;

/// What the trust policy found for one file at load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judged {
    /// Refused, and why.
    Refused(String),
    /// A bundle beside it verified over bytes of this digest: the file loads only
    /// with those bytes (a file swapped after the check is refused, not compiled).
    Verified(Pin),
}

/// What `policy` found for each file of `files` (in the plugins folder that `lock`
/// records), by file name: files it has nothing to say about are left out.
pub fn judge(
    files: &[std::path::PathBuf],
    lock: &Lock,
    policy: &TrustPolicy,
) -> BTreeMap<String, Judged> {
    let mut judged = BTreeMap::new();
    for file in files {
        let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let found = match lock.by_file(name) {
            Some((added, entry)) => {
                recorded(policy, added, &entry.source, entry.signer.as_deref()).map(|()| None)
            }
            None => beside(policy, file, &file.to_string_lossy()),
        };
        match found {
            Ok(None) => {}
            Ok(Some(pin)) => {
                judged.insert(name.to_owned(), Judged::Verified(pin));
            }
            Err(why) => {
                judged.insert(name.to_owned(), Judged::Refused(why));
            }
        }
    }
    judged
}

/// Whether a signature can count for `rule`: it names a key or an identity, or it
/// requires a signature (and then none counts, which is said).
fn checks_signatures(rule: &Rule<'_>) -> bool {
    rule.require == Require::Signed || rule.has_signers()
}

/// Whether the signer piton.lock records for `added` (from `source`) is one the
/// policy trusts for that source now.
fn recorded(
    policy: &TrustPolicy,
    added: &str,
    source: &str,
    signer: Option<&str>,
) -> Result<(), String> {
    let rule = policy.rule_for(source);
    let signer = match signer {
        Some(signer) if checks_signatures(&rule) => signer,
        Some(_) => return Ok(()),
        None if rule.require == Require::Signed => {
            return Err(format!(
                "refused: piton.toml's [trust] requires a signature by {} for {source}, and \
                 piton.lock records none for {added}; `piton add {source}` again with its \
                 signature",
                rule.expected()
            ));
        }
        None => return Ok(()),
    };
    let trusted = rule
        .keys
        .iter()
        .map(|key| {
            Signer::Key {
                name: key.name.clone(),
                fingerprint: key.key.fingerprint(),
            }
            .to_string()
        })
        .chain(
            rule.identities
                .iter()
                .map(|identity| Signer::Identity((*identity).clone()).to_string()),
        )
        .any(|trusted| trusted == signer);
    if trusted {
        Ok(())
    } else {
        Err(format!(
            "refused: piton.lock records {added} as signed by {signer}, which piton.toml's \
             [trust] no longer trusts for {source}; it expects {}",
            rule.expected()
        ))
    }
}

/// Whether the bundle beside `file` (copied by hand), if any, verifies over its bytes;
/// when one did, the pin of those bytes.
fn beside(policy: &TrustPolicy, file: &Path, source: &str) -> Result<Option<Pin>, String> {
    use std::io::Read as _;
    let rule = policy.rule_for(source);
    if !checks_signatures(&rule) {
        return Ok(None);
    }
    let bundle_file = bundle_beside(source);
    let mut bundle = Vec::new();
    let opened = std::fs::File::open(&bundle_file)
        .and_then(|f| f.take(MAX_BUNDLE + 1).read_to_end(&mut bundle));
    let materials = match opened {
        Ok(_) if bundle.len() as u64 > MAX_BUNDLE => {
            return Err(format!("refused: {bundle_file} is over {MAX_BUNDLE} bytes"));
        }
        Ok(_) => vec![SignatureMaterial::Bundle(bundle)],
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("refused: cannot read {bundle_file}: {e}")),
    };
    // Unsigned, where no signature is required: nothing to check, nothing to read.
    if materials.is_empty() && rule.require != Require::Signed {
        return Ok(None);
    }
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read it: {e}"))?;
    trust::verify(policy, source, Artifact::File(&bytes), &materials).map_err(|e| {
        if rule.require == Require::Signed {
            format!(
                "refused: {e}; a file copied by hand is signed by a bundle beside it \
                 ({bundle_file}), or added with `piton add`"
            )
        } else {
            format!(
                "refused: {e}; a signature beside a file ({bundle_file}) must verify: \
                 sign it again with a key piton.toml trusts, or `piton add` it"
            )
        }
    })?;
    // The engine reads the file again to compile it: it must read these bytes.
    let sha256 = Sha256::parse(&hex::encode(sha2::Sha256::digest(&bytes)))
        .map_err(|e| format!("refused: {e}"))?;
    Ok(Some(Pin {
        sha256,
        section: source.to_owned(),
        by: PinnedBy::Checked {
            by: format!("the signature beside it ({bundle_file})"),
        },
    }))
}

/// For each file of `files` that `lock` does not record (copied by hand): a line
/// saying so, for the load's log, with the command that records it.
pub fn not_recorded(files: &[std::path::PathBuf], lock: &Lock) -> Vec<String> {
    files
        .iter()
        .filter(|file| {
            let name = file.file_name().and_then(|n| n.to_str());
            name.is_some_and(|name| lock.by_file(name).is_none())
        })
        .map(|file| {
            // A file's name is anyone's: escaped, it cannot forge log lines or drive
            // the terminal that shows them.
            let line = format!(
                "{}: not recorded in piton.lock (copied by hand): it loads with whatever \
                 bytes it has; {}",
                file.display(),
                how_to_record(file)
            );
            crate::term::escape(&line, false).into_owned()
        })
        .collect()
}

/// How to record the file `file` of a plugins folder: the `piton add` command that
/// records its digest (and its path as its source), when its name can stay.
pub fn record_command(file: &Path) -> Option<String> {
    let folder = file.parent()?;
    let stem = file.file_stem()?.to_str()?;
    check_name(stem).ok()?;
    Some(format!(
        "piton add {} --force --plugins {}",
        shell_word(&file.display().to_string()),
        shell_word(&folder.display().to_string())
    ))
}

/// [`record_command`] in a sentence.
pub fn how_to_record(file: &Path) -> String {
    match record_command(file) {
        Some(command) => format!("`{command}` records it"),
        None => "rename it NAME.wasm (1 to 64 letters, digits, `_` or `-`), then `piton \
                 add` it to record it"
            .to_owned(),
    }
}

/// `text` as one word of a POSIX shell command line: as it is when that is safe,
/// else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:@%+=,".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_that_records_a_file_is_one_a_shell_reads_back() {
        assert_eq!(
            record_command(Path::new("/srv/plugins/word_count.wasm")).as_deref(),
            Some("piton add /srv/plugins/word_count.wasm --force --plugins /srv/plugins")
        );
        assert_eq!(
            record_command(Path::new("/my tools/it's.wasm")),
            None,
            "its name would change"
        );
        assert_eq!(
            record_command(Path::new("/my tools/x.wasm")).as_deref(),
            Some("piton add '/my tools/x.wasm' --force --plugins '/my tools'")
        );
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn a_file_name_that_would_drive_a_terminal_is_logged_escaped() {
        let files = [std::path::PathBuf::from(
            "/srv/plugins/x\u{1b}]52;c;cm0gLXJmIH4=\u{7}\nINFO forged.wasm",
        )];
        let lines = not_recorded(&files, &Lock::default());
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert!(
            !line.chars().any(|c| c.is_control()),
            "a control character is logged raw: {line:?}"
        );
        assert!(
            line.contains(r"x\e]52;c;cm0gLXJmIH4=\x07\nINFO forged.wasm"),
            "{line}"
        );
    }
}
