//! Fetching what a [`Reference`] names into a temporary file of the plugins folder,
//! every byte counted and hashed as it arrives: nothing larger than the limit is
//! read, nothing whose digest is not the expected one is kept, and a failed fetch
//! leaves nothing behind (the temporary file is removed when dropped).

use std::io::Write as _;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use crate::config::pins::Sha256 as Digest;
use crate::supply::fetched::{FetchError, FetchLimits, FetchProblem, Fetched, temp_in};
use crate::supply::http::Http;
use crate::supply::reference::Reference;

/// Fetches what `reference` names into a temporary file in `folder`, checked against
/// `expected` (`--sha256`) when given, under `limits`.
pub async fn fetch(
    reference: &Reference,
    text: &str,
    expected: Option<Digest>,
    folder: &Path,
    limits: FetchLimits,
) -> Result<Fetched, FetchError> {
    let fail = |problem| FetchError {
        reference: text.to_owned(),
        problem,
    };
    let temp = temp_in(folder).map_err(fail)?;
    let fetched = match reference {
        Reference::Oci(oci) => crate::supply::oci::pull(oci, temp, limits).await,
        Reference::Url { url, sha256, .. } => from_url(url, temp, limits)
            .await
            .and_then(|fetched| expect(fetched, *sha256)),
        Reference::Path(path) => from_path(path, temp, limits),
    }
    .map_err(fail)?;
    expect(fetched, expected).map_err(fail)
}

/// `fetched`, unless `expected` is given and is not its digest.
fn expect(fetched: Fetched, expected: Option<Digest>) -> Result<Fetched, FetchProblem> {
    match expected {
        Some(expected) if !expected.matches(&fetched.sha256) => Err(FetchProblem::Digest {
            what: "the component",
            expected: format!("sha256:{expected} (--sha256)"),
            found: fetched.digest(),
        }),
        _ => Ok(fetched),
    }
}

/// `url`'s body into `temp`.
async fn from_url(
    url: &str,
    mut temp: tempfile::NamedTempFile,
    limits: FetchLimits,
) -> Result<Fetched, FetchProblem> {
    let http = Http::new()?;
    let response = http.send(url, Default::default(), false).await?;
    let written = Http::to_file(response, temp.as_file_mut(), limits.max_size).await?;
    Ok(Fetched {
        temp,
        sha256: written.sha256,
        size: written.size,
        resolved: None,
    })
}

/// A local file copied into `temp`.
fn from_path(
    path: &Path,
    mut temp: tempfile::NamedTempFile,
    limits: FetchLimits,
) -> Result<Fetched, FetchProblem> {
    let file = std::fs::File::open(path).map_err(FetchProblem::Read)?;
    let mut reader = std::io::Read::take(file, limits.max_size + 1);
    let mut hasher = Sha256::new();
    let mut size = 0_u64;
    let mut buffer = vec![0_u8; 64 << 10];
    loop {
        let read = std::io::Read::read(&mut reader, &mut buffer).map_err(FetchProblem::Read)?;
        if read == 0 {
            break;
        }
        size += read as u64;
        if size > limits.max_size {
            return Err(FetchProblem::TooLarge {
                what: "the component",
                size,
                limit: limits.max_size,
            });
        }
        let chunk = &buffer[..read];
        hasher.update(chunk);
        temp.write_all(chunk).map_err(FetchProblem::Write)?;
    }
    Ok(Fetched {
        temp,
        sha256: hex::encode(hasher.finalize()),
        size,
        resolved: None,
    })
}
