//! `piton sign FILE.wasm --key KEY`: writes a Sigstore bundle of the key's signature
//! over the file beside it (`FILE.wasm.sigstore.json`), as `cosign sign-blob --key
//! --bundle` does; `piton keygen NAME` makes a key pair to sign with.

use std::path::{Path, PathBuf};

use super::out::{Outcome, say};
use crate::supply::trust::{self, PrivateKey};

/// Where the bundle of `file` goes unless `--output` says: beside it.
pub(crate) fn bundle_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".sigstore.json");
    PathBuf::from(name)
}

pub(super) fn sign(file: &Path, key: &Path, output: Option<PathBuf>) -> Outcome {
    let key = match std::fs::read_to_string(key) {
        Ok(text) => match PrivateKey::from_pem(&text) {
            Ok(key) => key,
            Err(e) => {
                say(format_args!("error: {}: {e}", key.display()));
                return Outcome::Usage;
            }
        },
        Err(e) => {
            say(format_args!(
                "error: cannot read the key {}: {e}",
                key.display()
            ));
            return Outcome::Usage;
        }
    };
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) => {
            say(format_args!("error: cannot read {}: {e}", file.display()));
            return Outcome::Usage;
        }
    };
    let bundle = match trust::sign_blob(&bytes, &key) {
        Ok(bundle) => bundle,
        Err(e) => {
            say(format_args!("error: cannot sign: {e}"));
            return Outcome::Stopped;
        }
    };
    let out = output.unwrap_or_else(|| bundle_path(file));
    if let Err(e) = std::fs::write(&out, bundle) {
        say(format_args!("error: cannot write {}: {e}", out.display()));
        return Outcome::Stopped;
    }
    println!(
        "signed {} ({}) with key {}: {}",
        file.display(),
        trust::Digest::of(&bytes),
        key.public_key().fingerprint(),
        out.display()
    );
    Outcome::Success
}

pub(super) fn keygen(name: &Path, ed25519: bool) -> Outcome {
    let pem = if ed25519 {
        PrivateKey::generate_ed25519_pem()
    } else {
        PrivateKey::generate_p256_pem()
    };
    let key = match pem.and_then(|pem| Ok((PrivateKey::from_pem(&pem)?, pem))) {
        Ok(key) => key,
        Err(e) => {
            say(format_args!("error: cannot make a key: {e}"));
            return Outcome::Stopped;
        }
    };
    let (secret, public) = (name.with_extension("key"), name.with_extension("pub"));
    for path in [&secret, &public] {
        if path.exists() {
            say(format_args!(
                "error: {} exists; piton keygen does not overwrite a key",
                path.display()
            ));
            return Outcome::Usage;
        }
    }
    if let Err(e) = write_private(&secret, &key.1) {
        say(format_args!(
            "error: cannot write {}: {e}",
            secret.display()
        ));
        return Outcome::Stopped;
    }
    if let Err(e) = std::fs::write(&public, key.0.public_key().to_pem()) {
        say(format_args!(
            "error: cannot write {}: {e}",
            public.display()
        ));
        return Outcome::Stopped;
    }
    println!(
        "wrote {} (private, PKCS#8) and {} (public, {})",
        secret.display(),
        public.display(),
        key.0.public_key().fingerprint()
    );
    Outcome::Success
}

/// A new file only its owner can read.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())
}
