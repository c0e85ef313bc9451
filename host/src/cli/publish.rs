//! `piton publish FILE.wasm oci://HOST/REPO:TAG`: checks the component as `piton
//! check` does, then pushes it in the CNCF Wasm OCI layout (see
//! [`crate::supply::artifact`]) and prints the manifest's digest.

use std::io::{self, Write};
use std::path::Path;

use super::out::{Outcome, say};
use crate::supply::oci::publish as push;
use crate::supply::reference::Reference;
use crate::wasm::{RuntimeConfig, WasmRuntime};

pub(super) async fn publish(file: &Path, target: &str) -> io::Result<Outcome> {
    let oci = match Reference::parse(target, None) {
        Ok(Reference::Oci(oci)) if oci.digest.is_none() => oci,
        Ok(Reference::Oci(_)) => {
            eprintln!(
                "error: {target}: publish to a tag (oci://HOST/REPO:TAG); the registry gives \
                 the digest"
            );
            return Ok(Outcome::Usage);
        }
        Ok(_) => {
            eprintln!("error: {target}: publish to an OCI registry: oci://HOST[:PORT]/REPO:TAG");
            return Ok(Outcome::Usage);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Usage);
        }
    };
    let runtime = match WasmRuntime::new(RuntimeConfig::default()) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Stopped);
        }
    };
    if let Err(e) = runtime.check_file(file).await {
        say(format_args!(
            "error: {e}; it was not published (`piton check` says more)"
        ));
        return Ok(Outcome::ErrorResult);
    }
    let wasm = match std::fs::read(file) {
        Ok(wasm) => wasm,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return Ok(Outcome::ErrorResult);
        }
    };
    let created = crate::observe::rfc3339(std::time::SystemTime::now());
    let title = file.file_name().and_then(|name| name.to_str());
    match push(&oci, wasm, &created, title).await {
        Ok(published) => {
            let mut out = io::stdout().lock();
            writeln!(out, "published {} to {oci}", file.display())?;
            writeln!(out, "  manifest: {}", published.manifest)?;
            writeln!(
                out,
                "  layer:    {} ({} bytes)",
                published.layer, published.size
            )?;
            writeln!(
                out,
                "pull exactly these bytes with: piton add oci://{}/{}@{}",
                oci.registry, oci.repository, published.manifest
            )?;
            Ok(Outcome::Success)
        }
        Err(e) => {
            say(format_args!("error: {target}: {e}"));
            Ok(Outcome::ErrorResult)
        }
    }
}
