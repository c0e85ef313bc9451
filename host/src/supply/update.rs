//! `piton update` as a library: for a component piton.lock records, fetch its source
//! again (an OCI tag is resolved again), and when the bytes changed, check their
//! signatures, then the component, and make the permission diff against the file in
//! place; when only the manifest changed, check its signatures. A signer the lock
//! records that the new version would lose or change ([`SignerChange`]) counts as a
//! weaker change. The caller shows the diff, decides ([`Decision`]), and installs
//! with [`Add::install`]; until then the new bytes are a temporary file that no load
//! reads, and the old file stays.

use std::path::Path;

use super::add::{Add, AddError};
use super::diff::{PermissionDiff, diff};
use super::fetched::Fetched;
use super::lock::LockEntry;
use super::profile::Profile;
use super::reference::{RefProblem, Reference};
use super::trust::Digest;
use crate::config::pins::Sha256;
use crate::wasm::WasmRuntime;

/// What fetching a component's source again found.
#[derive(Debug)]
pub enum Found {
    /// The same bytes as the file recorded.
    UpToDate,
    /// The source names fixed bytes (an OCI digest, a URL with its SHA-256): there is
    /// nothing to resolve again. Says how to move it.
    Pinned(String),
    /// Other bytes, checked, with the permission diff from the recorded file.
    Changed(Box<Changed>),
    /// The same bytes under another OCI manifest (the tag was pushed again): its
    /// signatures checked; nothing it may do changed, so it is recorded unasked,
    /// unless the signer recorded would be lost or changed.
    NewManifest(Box<NewManifest>),
}

/// The signer piton.lock records, which an update would lose (the new version is
/// not signed by a key or identity piton.toml names) or replace: a change that
/// needs consent, as a weaker permission does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignerChange {
    /// The signer recorded.
    pub was: String,
    /// The new version's, if any.
    pub now: Option<String>,
}

impl SignerChange {
    /// The change from the signer `was` recorded to `now`, if it is lost or another.
    pub fn of(was: Option<&str>, now: Option<&str>) -> Option<Self> {
        let was = was?;
        (Some(was) != now).then(|| Self {
            was: was.to_owned(),
            now: now.map(str::to_owned),
        })
    }
}

impl std::fmt::Display for SignerChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.now {
            None => write!(
                f,
                "  ! weaker    signer: {} → none: no signature piton.toml trusts vouches for \
                 it any more",
                self.was
            ),
            Some(now) => write!(
                f,
                "  ! weaker    signer: {} → {now}: another signer",
                self.was
            ),
        }
    }
}

/// The same component bytes, fetched again under another manifest.
#[derive(Debug)]
pub struct NewManifest {
    /// The bytes, in a temporary file of the plugins folder.
    pub fetched: Fetched,
    /// Who signed the new manifest, as the trust policy checked it.
    pub signer: Option<String>,
    /// The signer recorded, lost or replaced.
    pub signer_change: Option<SignerChange>,
}

/// A new version, fetched and checked, not installed.
#[derive(Debug)]
pub struct Changed {
    /// The new bytes, in a temporary file of the plugins folder.
    pub fetched: Fetched,
    /// The new version's profile.
    pub profile: Profile,
    /// From the recorded file's profile to the new one's.
    pub diff: PermissionDiff,
    /// Who signed it, as the trust policy checked it (for piton.lock).
    pub signer: Option<String>,
    /// The signer recorded, lost or replaced.
    pub signer_change: Option<SignerChange>,
    /// Why the recorded file has no profile (it is missing or does not load): then
    /// the diff is from nothing, so every tool counts as new.
    pub old_missing: Option<String>,
}

/// Whether a changed version may replace the old one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Replace it.
    Take,
    /// Keep the old one: the person said no, or it weakens and `--allow-weaker` was
    /// not given.
    Keep,
}

/// What a person or script said: `--yes`, `--allow-weaker`, and, when neither
/// settles it, the answer to a question on the terminal.
#[derive(Clone, Copy, Debug, Default)]
pub struct Consent {
    /// `--yes`: take what does not weaken without asking.
    pub yes: bool,
    /// `--allow-weaker`: weaker changes may be taken too (with `--yes`, unasked).
    pub allow_weaker: bool,
}

impl Consent {
    /// Whether a change (`weakens`: one that may do more, or loses its signer) may be
    /// taken without asking, must be asked about, or is refused outright:
    /// `Some(decision)` when settled, `None` to ask.
    pub fn settle(self, weakens: bool) -> Option<Decision> {
        match (weakens, self.yes, self.allow_weaker) {
            (false, true, _) | (true, true, true) => Some(Decision::Take),
            // Never taken silently: a weakening under --yes needs --allow-weaker.
            (true, true, false) => Some(Decision::Keep),
            (_, false, _) => None,
        }
    }
}

/// Fetches `entry`'s source again (`sha256`: a new `--sha256` for a URL source),
/// and says what changed from the file recorded in `add`'s plugins folder.
pub async fn check(
    add: &Add,
    name: &str,
    entry: &LockEntry,
    sha256: Option<&str>,
) -> Result<Found, AddError> {
    // Under `require = "any"`, a URL added without --sha256 is fetched again, as a tag.
    let require = add.policy().rule_for(&entry.source).require;
    let reference = match Reference::parse_under(&entry.source, sha256, require) {
        Ok(reference) => reference,
        Err(error) if error.problem == RefProblem::UrlNeedsSha256 => {
            return Ok(Found::Pinned(format!(
                "a URL is fetched by its SHA-256: `piton update {name} --sha256 HEX` with \
                 the new one moves it"
            )));
        }
        Err(error) => return Err(error.into()),
    };
    if let Reference::Oci(oci) = &reference
        && oci.digest.is_some()
    {
        return Ok(Found::Pinned(format!(
            "{} names its manifest digest: `piton add REF --name {name}` with a tag or \
             another digest moves it",
            entry.source
        )));
    }
    let expected = match (&reference, sha256) {
        (Reference::Url { .. }, _) | (_, None) => None,
        (_, Some(text)) => Some(Sha256::parse(text).map_err(|e| AddError::Name {
            reference: entry.source.clone(),
            why: e.to_string(),
        })?),
    };
    let fetched = add.fetch(&reference, &entry.source, expected).await?;
    if fetched.digest() == entry.digest && fetched.resolved == entry.resolved {
        return Ok(Found::UpToDate);
    }
    // Before any of its code runs: checking it reads its spec in an instance.
    let signer = add.trust(&reference, &entry.source, &fetched).await?;
    let signer_change = SignerChange::of(entry.signer.as_deref(), signer.as_deref());
    if fetched.digest() == entry.digest {
        return Ok(Found::NewManifest(Box::new(NewManifest {
            fetched,
            signer,
            signer_change,
        })));
    }
    let checked = add.check(&fetched, &entry.source).await?;
    let new_file = add.folder().join(&entry.file);
    let profile = Profile::of_checked(&new_file, &checked);
    let (old, old_missing) = old_profile(&new_file, &entry.digest, add.runtime()).await;
    let mut diff = diff(&old, &profile);
    diff.file = new_file;
    Ok(Found::Changed(Box::new(Changed {
        fetched,
        profile,
        diff,
        signer,
        signer_change,
        old_missing,
    })))
}

/// The profile of the recorded file (whose bytes piton.lock says are `recorded`), or
/// an empty one and why there is none. A file whose bytes are not the recorded ones
/// was changed by hand: it is not read (its code does not run), and the diff is from
/// nothing, since a diff from it would hide what the recorded version could not do.
async fn old_profile(
    file: &Path,
    recorded: &str,
    runtime: &WasmRuntime,
) -> (Profile, Option<String>) {
    let empty = Profile {
        file: file.to_path_buf(),
        sha256: String::new(),
        size: 0,
        world: String::new(),
        tools: Vec::new(),
        imports: Default::default(),
    };
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(error) => return (empty, Some(error.to_string())),
    };
    let found = Digest::of(&bytes).to_string();
    if found != recorded {
        let why = format!("its bytes are {found}, not the {recorded} piton.lock records");
        return (empty, Some(why));
    }
    // The bytes hashed, not the file read again: it may have changed since.
    match Profile::of_bytes(file, bytes, runtime).await {
        Ok(profile) => (profile, None),
        Err(error) => (empty, Some(error.to_string())),
    }
}
