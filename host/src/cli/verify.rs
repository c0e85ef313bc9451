//! `piton verify FILE.wasm`: checks a component's signature (`FILE.wasm.sigstore.json`,
//! or `--signature PATH`) against piton.toml's `[trust]`, as a load of it would, and
//! prints the signer; exit 0 when it would be taken, 1 when refused.

use std::path::{Path, PathBuf};

use super::out::{Outcome, say};
use crate::config::Config;
use crate::supply::trust::{self, Artifact, SignatureMaterial};

pub(super) fn verify(file: &Path, signature: Option<PathBuf>, config: Option<PathBuf>) -> Outcome {
    let config_file = config
        .or_else(|| std::env::var_os("PITON_CONFIG").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("piton.toml"));
    let config = if config_file.exists() {
        match Config::load(&config_file) {
            Ok(config) => config,
            Err(e) => {
                say(format_args!("error: {e}"));
                return Outcome::Usage;
            }
        }
    } else {
        Config::default()
    };
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) => {
            say(format_args!("error: cannot read {}: {e}", file.display()));
            return Outcome::Usage;
        }
    };
    let given = signature.is_some();
    let path = signature.unwrap_or_else(|| super::sign::bundle_path(file));
    let signatures = match std::fs::read(&path) {
        Ok(json) => vec![SignatureMaterial::Bundle(json)],
        Err(e) if !given && e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            say(format_args!("error: cannot read {}: {e}", path.display()));
            return Outcome::Usage;
        }
    };
    let source = file.display().to_string();
    match trust::verify(&config.trust, &source, Artifact::File(&bytes), &signatures) {
        Ok(verified) => {
            match verified.signer {
                Some(signer) => println!("{source}: verified: signed by {signer}"),
                None => println!(
                    "{source}: taken unsigned ({}), trust require = \"{}\"",
                    trust::Digest::of(&bytes),
                    config.trust.rule_for(&source).require
                ),
            }
            Outcome::Success
        }
        Err(e) => {
            say(format_args!("error: {e}"));
            Outcome::ErrorResult
        }
    }
}
