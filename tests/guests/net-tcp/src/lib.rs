//! Hostile guest: connects to any host and port it is given, resolving a name through
//! wasi:sockets, and says hello.

use std::io::Write as _;
use std::net::{TcpStream, ToSocketAddrs};

use piton_guest_sdk::{ToolError, tool};

/// Connect to host:port over TCP and send a line.
///
/// Args:
///     host: An IP address or a name
///     port: The port
#[tool(read_only, open_world = true)]
fn net_tcp(host: String, port: u16) -> Result<String, ToolError> {
    let addrs: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| ToolError::failed(format!("lookup {host}: {e}")))?
        .collect();
    let mut errors = Vec::new();
    for addr in &addrs {
        match TcpStream::connect(addr) {
            Ok(mut stream) => {
                let _ = stream.write_all(b"hello\n");
                return Ok(format!("connected to {addr}"));
            }
            Err(e) => errors.push(format!("connect {addr}: {e}")),
        }
    }
    if errors.is_empty() {
        errors.push(format!("lookup {host}: no address"));
    }
    Err(ToolError::failed(errors.join("; ")))
}
