//! Hostile guest: starts name lookups without waiting for them, `per_round` at a time,
//! then waits for the round, for `rounds` rounds: each one the host started on its own
//! would hold a thread while the system resolver works.

use piton_guest_sdk::{ToolError, tool};
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::ip_name_lookup::resolve_addresses;

/// Resolve a name many times at once, round after round; report how many lookups were
/// started and how many answered.
///
/// Args:
///     name: The name to resolve
///     per_round: Lookups started before waiting
///     rounds: Rounds
#[tool(read_only, open_world = true)]
fn net_dns_flood(name: String, per_round: u32, rounds: u32) -> Result<String, ToolError> {
    let network = instance_network();
    let (mut started, mut answered, mut refused) = (0u32, 0u32, 0u32);
    for _ in 0..rounds {
        let mut streams = Vec::new();
        for _ in 0..per_round {
            match resolve_addresses(&network, &name) {
                Ok(stream) => streams.push(stream),
                Err(_) => refused += 1,
            }
        }
        started += streams.len() as u32;
        for stream in &streams {
            stream.subscribe().block();
            if let Ok(Some(_)) = stream.resolve_next_address() {
                answered += 1;
            }
        }
    }
    Ok(format!(
        "started {started}, answered {answered}, refused {refused}"
    ))
}
