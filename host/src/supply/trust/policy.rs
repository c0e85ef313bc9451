//! The trust policy, as piton.toml's `[trust]` table gives it (see
//! `config::trust` for the file's form): what a component from a source must carry,
//! and whose signatures count.

use std::fmt;
use std::path::PathBuf;

use super::keys::PublicKey;

/// What a component must have to be installed or loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Require {
    /// A signature that verifies against one of the policy's keys or identities.
    Signed,
    /// A recorded digest; a signature is checked when there is one and the policy
    /// has keys or identities for the source, and not needed.
    #[default]
    Pinned,
    /// Nothing beyond what `pinned` checks here; the loader may also take a file
    /// whose digest is not recorded.
    Any,
}

impl Require {
    /// The words piton.toml takes.
    pub const NAMES: [&'static str; 3] = ["signed", "pinned", "any"];

    /// The level a word names.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "signed" => Some(Self::Signed),
            "pinned" => Some(Self::Pinned),
            "any" => Some(Self::Any),
            _ => None,
        }
    }

    /// The word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Signed => "signed",
            Self::Pinned => "pinned",
            Self::Any => "any",
        }
    }
}

impl fmt::Display for Require {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A public key with the name piton.toml gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedKey {
    /// `name`, used in `[[trust.sources]] keys` and in messages.
    pub name: String,
    /// The key.
    pub key: PublicKey,
}

impl fmt::Display for NamedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.key.fingerprint())
    }
}

/// A keyless signer: who the certificate names and who vouched for them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The OIDC issuer, from the certificate's Fulcio issuer extension
    /// (1.3.6.1.4.1.57264.1.8, or the older .1.1), such as
    /// `https://token.actions.githubusercontent.com`.
    pub issuer: String,
    /// The certificate's subject alternative name: an email address or a URI.
    pub subject: String,
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (issuer {})", self.subject, self.issuer)
    }
}

/// A Sigstore trusted root (`trusted_root.json`): the certificate authorities keyless
/// certificates chain to, and the transparency logs and timestamp authorities whose
/// signed times are believed.
#[derive(Clone)]
pub struct TrustedRootFile {
    /// Where it was read from, for messages.
    pub path: PathBuf,
    pub(crate) root: sigstore_verify::trust_root::TrustedRoot,
    text: String,
}

impl TrustedRootFile {
    /// Parses the JSON of a trusted root read from `path`.
    pub fn parse(path: PathBuf, text: String) -> Result<Self, String> {
        let root = sigstore_verify::trust_root::TrustedRoot::from_json(&text)
            .map_err(|e| e.to_string())?;
        // What Verifier::new would refuse later is refused now, naming the file.
        sigstore_verify::Verifier::new(&root).map_err(|e| e.to_string())?;
        Ok(Self { path, root, text })
    }
}

impl PartialEq for TrustedRootFile {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.text == other.text
    }
}

impl fmt::Debug for TrustedRootFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TrustedRootFile({})", self.path.display())
    }
}

/// `[[trust.sources]]`: another rule for the sources under a prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceRule {
    /// The start of the sources it applies to: `oci://registry.example/team/`,
    /// `https://example.com/tools/`, or a folder.
    pub prefix: String,
    /// Overrides `[trust] require`.
    pub require: Option<Require>,
    /// The only keys (by name) whose signatures count for these sources.
    pub keys: Option<Vec<String>>,
    /// The only identities whose signatures count for these sources.
    pub identities: Option<Vec<Identity>>,
}

/// piton.toml's `[trust]` table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrustPolicy {
    /// What every component needs, unless a source rule says otherwise.
    pub require: Require,
    /// `[[trust.keys]]`.
    pub keys: Vec<NamedKey>,
    /// `[[trust.identities]]`.
    pub identities: Vec<Identity>,
    /// `trusted_root`: needed for keyless signatures.
    pub trusted_root: Option<TrustedRootFile>,
    /// `[[trust.sources]]`; the longest prefix that matches a source applies.
    pub sources: Vec<SourceRule>,
}

/// What the policy asks of one source.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule<'a> {
    /// What a component from it needs.
    pub require: Require,
    /// The keys whose signatures count.
    pub keys: Vec<&'a NamedKey>,
    /// The identities whose signatures count.
    pub identities: Vec<&'a Identity>,
}

impl Rule<'_> {
    /// Whether any signature can count: a key or an identity is named.
    pub fn has_signers(&self) -> bool {
        !self.keys.is_empty() || !self.identities.is_empty()
    }

    /// The signers that count, for messages: `alice (SHA256:…), ci@example.com
    /// (issuer …)`, or `no key or identity`.
    pub fn expected(&self) -> String {
        let names: Vec<String> = (self.keys.iter().map(|k| k.to_string()))
            .chain(self.identities.iter().map(|i| i.to_string()))
            .collect();
        if names.is_empty() {
            "no key or identity (add [[trust.keys]] or [[trust.identities]] to piton.toml)"
                .to_owned()
        } else {
            names.join(", ")
        }
    }
}

impl TrustPolicy {
    /// The rule for `source` (`oci://…`, `https://…` or a path): each setting from
    /// the longest `[[trust.sources]]` prefix that starts the source and sets it,
    /// else the table's own.
    pub fn rule_for(&self, source: &str) -> Rule<'_> {
        let mut rules: Vec<&SourceRule> = self
            .sources
            .iter()
            .filter(|rule| source.starts_with(&rule.prefix))
            .collect();
        rules.sort_by_key(|rule| std::cmp::Reverse(rule.prefix.len()));
        let keys = match rules.iter().find_map(|r| r.keys.as_ref()) {
            Some(names) => self
                .keys
                .iter()
                .filter(|k| names.contains(&k.name))
                .collect(),
            None => self.keys.iter().collect(),
        };
        let identities = match rules.iter().find_map(|r| r.identities.as_ref()) {
            Some(list) => list.iter().collect(),
            None => self.identities.iter().collect(),
        };
        Rule {
            require: rules.iter().find_map(|r| r.require).unwrap_or(self.require),
            keys,
            identities,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supply::trust::keys::PrivateKey;

    fn key(name: &str) -> NamedKey {
        let pem = PrivateKey::generate_p256_pem().expect("key");
        NamedKey {
            name: name.into(),
            key: PrivateKey::from_pem(&pem)
                .expect("key")
                .public_key()
                .clone(),
        }
    }

    #[test]
    fn the_longest_matching_prefix_decides_and_the_table_is_the_default() {
        let policy = TrustPolicy {
            keys: vec![key("alice"), key("bob")],
            sources: vec![
                SourceRule {
                    prefix: "oci://registry.example/".into(),
                    require: Some(Require::Signed),
                    keys: None,
                    identities: None,
                },
                SourceRule {
                    prefix: "oci://registry.example/team/".into(),
                    require: None,
                    keys: Some(vec!["alice".into()]),
                    identities: None,
                },
            ],
            ..TrustPolicy::default()
        };
        let other = policy.rule_for("https://example.com/x.wasm");
        assert_eq!((other.require, other.keys.len()), (Require::Pinned, 2));
        let registry = policy.rule_for("oci://registry.example/x:1");
        assert_eq!(
            (registry.require, registry.keys.len()),
            (Require::Signed, 2)
        );
        // The team's rule names only alice; its require comes from the shorter
        // prefix, which sets one, not from the table.
        let team = policy.rule_for("oci://registry.example/team/x:1");
        assert_eq!(team.require, Require::Signed);
        assert_eq!(
            team.keys.iter().map(|k| &k.name[..]).collect::<Vec<_>>(),
            ["alice"]
        );
        assert!(team.expected().starts_with("alice (SHA256:"));
        assert!(
            TrustPolicy::default()
                .rule_for("x")
                .expected()
                .starts_with("no key")
        );
    }

    #[test]
    fn the_default_is_pinned() {
        assert_eq!(TrustPolicy::default().require, Require::Pinned);
        for name in Require::NAMES {
            assert_eq!(Require::parse(name).map(Require::as_str), Some(name));
        }
        assert_eq!(Require::parse("Signed"), None);
    }
}
