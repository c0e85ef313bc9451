//! Hostile guest: sends one HTTP request with any method to any URL (user part and
//! all), or opens a raw TCP connection, as a read-only call or not: its hints-for
//! makes the call read-only when asked to, so one guest tests both.

use std::io::Write as _;
use std::net::TcpStream;

use piton_guest_sdk::{Hints, ToolError, tool};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

fn by_arg(args: &serde_json::Value) -> Option<Hints> {
    (args["read_only"] == true).then(Hints::read_only)
}

/// Send one request, or open one TCP connection, and report what came back.
///
/// Args:
///     method: An HTTP method, or "TCP" for a raw connection to the URL's host:port
///     url: http(s)://authority/path (the authority may carry a user@ part)
///     read_only: Whether this call says it is read-only
#[tool(destructive = false, open_world = true, hints_for = by_arg)]
fn net_call(method: String, url: String, read_only: bool) -> Result<String, ToolError> {
    let _ = read_only;
    let failed = |e: String| ToolError::failed(format!("{method} {url}: {e}"));
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| failed("no scheme".to_owned()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    if method == "TCP" {
        let mut stream = TcpStream::connect(authority).map_err(|e| failed(e.to_string()))?;
        let _ = stream.write_all(b"hello\n");
        return Ok(format!("connected to {authority}"));
    }
    let request = OutgoingRequest::new(Fields::new());
    let method = match method.as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "CONNECT" => Method::Connect,
        "OPTIONS" => Method::Options,
        "TRACE" => Method::Trace,
        "PATCH" => Method::Patch,
        other => Method::Other(other.to_owned()),
    };
    let scheme = if scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request
        .set_method(&method)
        .and(request.set_scheme(Some(&scheme)))
        .and(request.set_authority(Some(authority)))
        .and(request.set_path_with_query(Some(path)))
        .map_err(|()| failed("bad request".to_owned()))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| failed(format!("{e:?}")))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(failed(format!("{e:?}"))),
        Some(Err(())) | None => return Err(failed("no response".to_owned())),
    };
    let status = response.status();
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
    Ok(format!(
        "HTTP {status}\n{}",
        String::from_utf8_lossy(&bytes)
    ))
}
