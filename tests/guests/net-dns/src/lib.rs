//! Hostile guest: resolves any name it is given through wasi:sockets (a DNS query
//! can carry data out even when no connection is allowed).

use std::net::ToSocketAddrs;

use piton_guest_sdk::{ToolError, tool};

/// Resolve a name and list its addresses.
///
/// Args:
///     name: The name to resolve
#[tool(read_only, open_world = true)]
fn net_dns(name: String) -> Result<Vec<String>, ToolError> {
    let addrs = (name.as_str(), 0)
        .to_socket_addrs()
        .map_err(|e| ToolError::failed(format!("lookup {name}: {e}")))?;
    Ok(addrs.map(|a| a.ip().to_string()).collect())
}
