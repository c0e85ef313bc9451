//! The trust policy at load: under `require = "signed"` (for a file's source), a file
//! of the plugins folder loads only if `piton add` recorded a signer in piton.lock
//! that piton.toml still trusts for its source, or, for a file copied by hand, if
//! the Sigstore bundle beside it (`FILE.wasm.sigstore.json`) verifies over its bytes.
//! Anything else is refused unread by the engine, naming the signers expected and
//! what was found. So a key taken out of `[[trust.keys]]` stops what it signed at
//! the next reload.

use std::collections::BTreeMap;
use std::path::Path;

use super::lock::Lock;
use super::signatures::bundle_beside;
use super::trust::{self, Artifact, Require, SignatureMaterial, Signer, TrustPolicy};

/// The most bytes of a bundle read at load.
const MAX_BUNDLE: u64 = 1 << 20;

/// The files of `files` (in the plugins folder that `lock` records) that `policy`
/// refuses, by file name, each with why.
pub fn refused(
    files: &[std::path::PathBuf],
    lock: &Lock,
    policy: &TrustPolicy,
) -> BTreeMap<String, String> {
    let mut refused = BTreeMap::new();
    let requires = |source: &str| policy.rule_for(source).require == Require::Signed;
    if !requires("")
        && !policy
            .sources
            .iter()
            .any(|s| s.require == Some(Require::Signed))
    {
        return refused;
    }
    for file in files {
        let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let why = match lock.by_file(name) {
            Some((added, entry)) => {
                if !requires(&entry.source) {
                    continue;
                }
                recorded(policy, added, &entry.source, entry.signer.as_deref())
            }
            None => {
                let source = file.to_string_lossy();
                if !requires(&source) {
                    continue;
                }
                beside(policy, file, &source)
            }
        };
        if let Err(why) = why {
            refused.insert(name.to_owned(), why);
        }
    }
    refused
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
    let Some(signer) = signer else {
        return Err(format!(
            "refused: piton.toml's [trust] requires a signature by {} for {source}, and \
             piton.lock records none for {added}; `piton add {source}` again with its signature",
            rule.expected()
        ));
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

/// Whether the bundle beside `file` (copied by hand) verifies over its bytes.
fn beside(policy: &TrustPolicy, file: &Path, source: &str) -> Result<(), String> {
    use std::io::Read as _;
    let bundle_file = bundle_beside(source);
    let mut bundle = Vec::new();
    let opened = std::fs::File::open(&bundle_file)
        .and_then(|f| f.take(MAX_BUNDLE + 1).read_to_end(&mut bundle));
    let materials = match opened {
        Ok(_) if bundle.len() as u64 > MAX_BUNDLE => {
            return Err(format!("refused: {bundle_file} is over {MAX_BUNDLE} bytes"));
        }
        Ok(_) => vec![SignatureMaterial::Bundle(bundle)],
        Err(_) => Vec::new(),
    };
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read it: {e}"))?;
    trust::verify(policy, source, Artifact::File(&bytes), &materials)
        .map(|_| ())
        .map_err(|e| {
            format!(
                "refused: {e}; a file copied by hand is signed by a bundle beside it \
                 ({bundle_file}), or added with `piton add`"
            )
        })
}
