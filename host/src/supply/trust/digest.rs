//! A SHA-256 digest as OCI and piton.lock write it: `sha256:` and 64 hex digits.

use std::fmt;

use sha2::{Digest as _, Sha256};

/// A SHA-256 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest(pub [u8; 32]);

/// A digest that cannot be read: what was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a digest: write sha256: and 64 hex digits")]
pub struct DigestError(pub String);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// `sha256:HEX`.
    pub fn parse(text: &str) -> Result<Self, DigestError> {
        let bad = || DigestError(text.chars().take(80).collect());
        let hex = text.strip_prefix("sha256:").ok_or_else(bad)?;
        let mut out = [0; 32];
        if hex.len() != 64 || hex.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(bad());
        }
        hex::decode_to_slice(hex, &mut out).map_err(|_| bad())?;
        Ok(Self(out))
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_prints_and_nothing_else() {
        let d = Digest::of(b"abc");
        assert_eq!(
            d.to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Digest::parse(&d.to_string()), Ok(d));
        for bad in [
            "",
            "sha256:",
            "sha512:ab",
            "ba7816bf",
            "sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
            "sha256:zz7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ] {
            assert!(Digest::parse(bad).is_err(), "{bad}");
        }
    }
}
