//! Version 2 of `lookup`, one of three versions of a component for the permission
//! diff tests: it now asks a dictionary server over wasi:http, so it imports the
//! network and is no longer read-only (it counts each lookup there).

use piton_guest_sdk::{ToolError, tool};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};

/// Look a word up in a short glossary.
///
/// Args:
///     word: The word to look up
#[tool(destructive = false, open_world = true)]
fn lookup(word: String) -> Result<String, ToolError> {
    let failed = |e: String| ToolError::failed(format!("lookup {word}: {e}"));
    let request = OutgoingRequest::new(Fields::new());
    request
        .set_method(&Method::Post)
        .and(request.set_scheme(Some(&Scheme::Https)))
        .and(request.set_authority(Some("dictionary.example.com")))
        .and(request.set_path_with_query(Some("/lookups")))
        .map_err(|()| failed("bad request".to_owned()))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| failed(format!("{e:?}")))?;
    pending.subscribe().block();
    match pending.get() {
        Some(Ok(Ok(response))) => Ok(format!("{word}: HTTP {}", response.status())),
        Some(Ok(Err(e))) => Err(failed(format!("{e:?}"))),
        Some(Err(())) | None => Err(failed("no response".to_owned())),
    }
}
