//! Hostile guest: a closed-world tool that tries TCP, DNS and HTTP anyway. Whatever
//! the user grants, a closed-world call has no network.

use std::net::{TcpStream, ToSocketAddrs};

use piton_guest_sdk::tool;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};

/// Try to reach 127.0.0.1 on a port by TCP and HTTP, and to resolve `localhost`;
/// report each outcome.
///
/// Args:
///     port: The port
#[tool(read_only, open_world = false)]
fn net_closed(port: u16) -> Vec<String> {
    let tcp = match TcpStream::connect(("127.0.0.1", port)) {
        Ok(_) => "tcp: connected".to_owned(),
        Err(e) => format!("tcp refused: {e}"),
    };
    let dns = match ("localhost", port).to_socket_addrs() {
        Ok(addrs) => format!("dns: resolved {:?}", addrs.collect::<Vec<_>>()),
        Err(e) => format!("dns refused: {e}"),
    };
    let http = match http_get(&format!("127.0.0.1:{port}")) {
        Ok(status) => format!("http: status {status}"),
        Err(e) => format!("http refused: {e}"),
    };
    vec![tcp, dns, http]
}

fn http_get(authority: &str) -> Result<u16, String> {
    let request = OutgoingRequest::new(Fields::new());
    request
        .set_method(&Method::Get)
        .and(request.set_scheme(Some(&Scheme::Http)))
        .and(request.set_authority(Some(authority)))
        .and(request.set_path_with_query(Some("/")))
        .map_err(|()| "bad request".to_owned())?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    match pending.get() {
        Some(Ok(Ok(response))) => Ok(response.status()),
        Some(Ok(Err(e))) => Err(format!("{e:?}")),
        Some(Err(())) | None => Err("no response".to_owned()),
    }
}
