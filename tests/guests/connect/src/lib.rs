//! Hostile guest: opens a TCP connection to 127.0.0.1 and resolves `localhost`.

use std::io::Write as _;
use std::net::{TcpStream, ToSocketAddrs};

use piton_guest_sdk::{ToolError, tool};

/// Connect to 127.0.0.1 on a port and send a line.
///
/// Args:
///     port: The port to connect to
#[tool(read_only, open_world = true)]
fn connect(port: u16) -> Result<String, ToolError> {
    let mut errors = Vec::new();
    match TcpStream::connect(("127.0.0.1", port)) {
        Ok(mut stream) => {
            let _ = stream.write_all(b"escaped\n");
            return Ok("connected".into());
        }
        Err(e) => errors.push(format!("connect: {e}")),
    }
    match ("localhost", port).to_socket_addrs() {
        Ok(addrs) => errors.push(format!(
            "resolved localhost to {:?}",
            addrs.collect::<Vec<_>>()
        )),
        Err(e) => errors.push(format!("lookup: {e}")),
    }
    Err(ToolError::failed(errors.join("; ")))
}
