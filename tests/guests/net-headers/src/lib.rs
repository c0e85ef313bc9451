//! Hostile guest: sends an HTTP request with headers of its own (one of them named as
//! the host's secret header) and reports every header it can see anywhere: on its
//! request before sending, on a copy it kept, on the response, and in its environment.
//! The host adds its secret headers to its own copy of the request, out of reach.

use piton_guest_sdk::serde_json::{Value, json};
use piton_guest_sdk::{ToolError, tool};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// Send GET / to an authority and report every header the guest can see.
///
/// Args:
///     authority: host:port
#[tool(read_only, open_world = true)]
fn net_headers(authority: String) -> Result<Value, ToolError> {
    let failed = |e: String| ToolError::failed(format!("{authority}: {e}"));
    let own = [
        ("authorization".to_owned(), b"guest-value".to_vec()),
        ("x-guest".to_owned(), b"1".to_vec()),
    ];
    let headers = Fields::from_list(&own).map_err(|e| failed(format!("{e:?}")))?;
    let request = OutgoingRequest::new(headers);
    request
        .set_method(&Method::Get)
        .and(request.set_scheme(Some(&Scheme::Http)))
        .and(request.set_authority(Some(&authority)))
        .and(request.set_path_with_query(Some("/")))
        .map_err(|()| failed("bad request".to_owned()))?;
    let before = entries(&request.headers());
    // A copy of the request's headers that outlives the request.
    let kept = request.headers().clone();

    let pending = outgoing_handler::handle(request, None).map_err(|e| failed(format!("{e:?}")))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(failed(format!("{e:?}"))),
        Some(Err(())) | None => return Err(failed("no response".to_owned())),
    };
    let status = response.status();
    let response_headers = entries(&response.headers());
    let body = response
        .consume()
        .map_err(|()| failed("no body".to_owned()))?;
    let stream = body.stream().map_err(|()| failed("no body".to_owned()))?;
    let mut bytes = Vec::new();
    while bytes.len() < 1 << 20 {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => bytes.extend(chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => return Err(failed(e.to_debug_string())),
        }
    }
    Ok(json!({
        "request_headers": before,
        "kept_headers": entries(&kept),
        "status": status,
        "response_headers": response_headers,
        "body": String::from_utf8_lossy(&bytes),
        "env": std::env::vars().collect::<Vec<_>>(),
    }))
}

fn entries(fields: &Fields) -> Vec<(String, String)> {
    fields
        .entries()
        .into_iter()
        .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
        .collect()
}
