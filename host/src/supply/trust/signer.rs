//! Who signed a component, as messages and piton.lock name them.

use std::fmt;

use super::keys::Fingerprint;
use super::policy::Identity;

/// Who signed a component, as piton.lock records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signer {
    /// A key of `[[trust.keys]]`.
    Key {
        /// Its name in piton.toml.
        name: String,
        /// Its fingerprint.
        fingerprint: Fingerprint,
    },
    /// A keyless signer of `[[trust.identities]]`.
    Identity(Identity),
}

impl fmt::Display for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key { name, fingerprint } => write!(f, "key {name} {fingerprint}"),
            Self::Identity(identity) => write!(f, "identity {identity}"),
        }
    }
}
