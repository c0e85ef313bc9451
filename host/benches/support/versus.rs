//! Two (or more) MCP servers on stdio timed side by side: the same call to each, in
//! alternating blocks, so the machine's load falls on all of them alike.

use std::time::{Duration, Instant};

use super::raw::RawClient;
use super::{Summary, load_average};

/// How one side-by-side run is timed.
pub struct Blocks {
    /// Untimed calls to each server first.
    pub warm_up: usize,
    /// Calls in one block of one server's, before the next server's block.
    pub block: usize,
    /// Blocks timed for each server.
    pub blocks: usize,
    /// An untimed pause before each timed call (zero: back to back), as an agent's
    /// calls come between the model's turns.
    pub pause: Duration,
}

/// What one side-by-side run measured: each server's calls, in the order given, and
/// the load average before and after.
pub struct SideBySide {
    pub summaries: Vec<Summary>,
    pub load_before: String,
    pub load_after: String,
}

/// Calls `tools/call` with `params` on each of `servers`, whose answer must be the
/// one text `text`, as `blocks` says.
pub fn side_by_side(
    servers: &mut [RawClient],
    params: &str,
    text: &str,
    blocks: &Blocks,
) -> SideBySide {
    for client in servers.iter_mut() {
        for _ in 0..blocks.warm_up {
            client.call(params, text);
        }
    }
    let mut samples = vec![Vec::with_capacity(blocks.block * blocks.blocks); servers.len()];
    let load_before = load_average();
    for _ in 0..blocks.blocks {
        for (client, samples) in servers.iter_mut().zip(&mut samples) {
            for _ in 0..blocks.block {
                if !blocks.pause.is_zero() {
                    std::thread::sleep(blocks.pause);
                }
                let started = Instant::now();
                client.call(params, text);
                samples.push(started.elapsed());
            }
        }
    }
    let load_after = load_average();
    SideBySide {
        summaries: samples.into_iter().map(Summary::of).collect(),
        load_before,
        load_after,
    }
}
