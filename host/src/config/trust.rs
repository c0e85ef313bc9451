//! The `[trust]` table of piton.toml: which signatures a component needs and whose
//! count (docs/trust.md). Key files and the trusted root are read here, so a missing
//! or broken one is an error naming its key when piton.toml is read.
//!
//! ```toml
//! [trust]
//! require = "signed"                 # or "pinned" (the default), "any"
//! trusted_root = "trusted_root.json" # Sigstore's format; needed for identities
//!
//! [[trust.keys]]
//! name = "alice"
//! key = "keys/alice.pub"             # a path, or the PEM itself
//!
//! [[trust.identities]]
//! issuer = "https://token.actions.githubusercontent.com"
//! subject = "https://github.com/org/tools/.github/workflows/release.yml@refs/heads/main"
//!
//! [[trust.sources]]
//! prefix = "oci://registry.example/team/"
//! require = "signed"
//! keys = ["alice"]                   # only these keys count here
//! identities = [{ issuer = "…", subject = "…" }]
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::supply::trust::{
    Identity, KeyError, NamedKey, PublicKey, Require, SourceRule, TrustPolicy, TrustedRootFile,
};

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTrust {
    require: Option<String>,
    trusted_root: Option<String>,
    #[serde(default)]
    keys: Vec<RawKey>,
    #[serde(default)]
    identities: Vec<RawIdentity>,
    #[serde(default)]
    sources: Vec<RawSource>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    name: String,
    key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdentity {
    issuer: String,
    subject: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    prefix: String,
    require: Option<String>,
    keys: Option<Vec<String>>,
    identities: Option<Vec<RawIdentity>>,
}

/// What is wrong in the `[trust]` table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// Not a level: what was written.
    #[error("{0:?} is not a trust level; use one of \"signed\", \"pinned\" or \"any\"")]
    Require(String),
    /// An empty key name, or one given twice: the name.
    #[error("{0:?}: give each key a name of its own, such as \"alice\"")]
    KeyName(String),
    /// A key file that cannot be read: the path and why.
    #[error(
        "cannot read the key file {0}: {1}; give the path of a PEM public key (cosign.pub), or the PEM itself"
    )]
    KeyFile(String, String),
    /// A key that cannot be used.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A source rule naming a key no `[[trust.keys]]` has: the name and the names.
    #[error("names the key {0:?}, which no [[trust.keys]] has; use one of: {1}")]
    UnknownKey(String, String),
    /// An identity with an empty issuer or subject.
    #[error(
        "is empty; write the issuer URL and the subject (an email or URI) exactly as the certificate has them"
    )]
    EmptyIdentity,
    /// Keyless identities with no trusted root to check their certificates against.
    #[error(
        "needs trusted_root = \"PATH\" in [trust]: a Sigstore trusted_root.json to check keyless certificates against"
    )]
    NoTrustedRoot,
    /// A trusted root that cannot be read or used: the path and why.
    #[error("cannot use {0} as a Sigstore trusted root: {1}")]
    TrustedRoot(String, String),
    /// `require = "signed"` with no key or identity to sign.
    #[error(
        "is \"signed\", but no [[trust.keys]] or [[trust.identities]] is given to sign with; add one"
    )]
    NoSigners,
    /// An empty source prefix.
    #[error("is empty; write the start of the sources, such as \"oci://registry.example/team/\"")]
    EmptyPrefix,
}

/// On error: the key (`trust.keys[0].key`) and what is wrong with it.
type KeyErr = (String, TrustError);

impl TrustPolicy {
    /// The policy of a `[trust]` table; relative paths are in `base`.
    pub(crate) fn parse(raw: RawTrust, base: &Path) -> Result<Self, KeyErr> {
        let mut policy = TrustPolicy::default();
        if let Some(text) = &raw.require {
            policy.require = parse_require(text).map_err(|e| ("trust.require".to_owned(), e))?;
        }
        for (i, key) in raw.keys.into_iter().enumerate() {
            let at = |sub: &str| format!("trust.keys[{i}].{sub}");
            let name = key.name.trim();
            if name.is_empty() || policy.keys.iter().any(|k| k.name == name) {
                return Err((at("name"), TrustError::KeyName(key.name)));
            }
            let public = read_key(&key.key, base).map_err(|e| (at("key"), e))?;
            policy.keys.push(NamedKey {
                name: name.to_owned(),
                key: public,
            });
        }
        for (i, raw) in raw.identities.into_iter().enumerate() {
            let identity = identity(raw).map_err(|e| (format!("trust.identities[{i}]"), e))?;
            policy.identities.push(identity);
        }
        let mut keyless = !policy.identities.is_empty();
        let mut signed = policy.require == Require::Signed;
        for (i, raw) in raw.sources.into_iter().enumerate() {
            let at = |sub: &str| format!("trust.sources[{i}].{sub}");
            if raw.prefix.is_empty() {
                return Err((at("prefix"), TrustError::EmptyPrefix));
            }
            let require = raw
                .require
                .map(|text| parse_require(&text).map_err(|e| (at("require"), e)))
                .transpose()?;
            signed |= require == Some(Require::Signed);
            if let Some(names) = &raw.keys {
                for name in names {
                    if !policy.keys.iter().any(|k| &k.name == name) {
                        let known: Vec<&str> = policy.keys.iter().map(|k| &k.name[..]).collect();
                        let known = if known.is_empty() {
                            "(none)".to_owned()
                        } else {
                            known.join(", ")
                        };
                        return Err((at("keys"), TrustError::UnknownKey(name.clone(), known)));
                    }
                }
            }
            let identities = match raw.identities {
                Some(list) => {
                    let mut out = Vec::new();
                    for (j, raw) in list.into_iter().enumerate() {
                        out.push(identity(raw).map_err(|e| (at(&format!("identities[{j}]")), e))?);
                    }
                    keyless |= !out.is_empty();
                    Some(out)
                }
                None => None,
            };
            policy.sources.push(SourceRule {
                prefix: raw.prefix,
                require,
                keys: raw.keys,
                identities,
            });
        }
        if let Some(path) = raw.trusted_root {
            let path = base.join(path);
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| {
                (
                    "trust.trusted_root".to_owned(),
                    TrustError::TrustedRoot(shown.clone(), e.to_string()),
                )
            })?;
            let root = TrustedRootFile::parse(path, text).map_err(|e| {
                (
                    "trust.trusted_root".to_owned(),
                    TrustError::TrustedRoot(shown, e),
                )
            })?;
            policy.trusted_root = Some(root);
        } else if keyless {
            return Err(("trust.identities".to_owned(), TrustError::NoTrustedRoot));
        }
        if signed && policy.keys.is_empty() && !keyless {
            return Err(("trust.require".to_owned(), TrustError::NoSigners));
        }
        Ok(policy)
    }
}

fn parse_require(text: &str) -> Result<Require, TrustError> {
    Require::parse(text).ok_or_else(|| TrustError::Require(text.to_owned()))
}

fn identity(raw: RawIdentity) -> Result<Identity, TrustError> {
    if raw.issuer.trim().is_empty() || raw.subject.trim().is_empty() {
        return Err(TrustError::EmptyIdentity);
    }
    Ok(Identity {
        issuer: raw.issuer,
        subject: raw.subject,
    })
}

/// A key given inline (PEM) or as a path to a PEM file.
fn read_key(value: &str, base: &Path) -> Result<PublicKey, TrustError> {
    if value.contains("-----BEGIN") {
        return Ok(PublicKey::from_pem(value)?);
    }
    let path = base.join(value);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| TrustError::KeyFile(path.display().to_string(), e.to_string()))?;
    Ok(PublicKey::from_pem(&text)?)
}

#[cfg(test)]
mod tests;
