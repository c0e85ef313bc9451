//! The two engines a component's code can come from, made alike: the same pooling
//! allocator, epoch deadlines and WASI linker, so that a call sees one sandbox whichever
//! compiled its code.
//!
//! - **Optimised** (Cranelift): what every call runs in the end, cached on disk.
//! - **Baseline** (Winch, a single-pass compiler): ten to twenty times faster to
//!   compile, its code a few times slower to run. A start whose cache lacks a
//!   component compiles it here first, so the component's specs are read (and its
//!   first calls answered) without waiting for Cranelift, which compiles it in the
//!   background (see `optimise`). Never cached on disk.

use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

use super::sandbox::Sandbox;

/// How often the epoch advances: the granularity of deadlines, and how often a
/// running guest yields to the async executor so a busy guest cannot starve others.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// How much of each linear memory is reset in place (memset back to its initial
/// contents) when its instance is dropped, rather than handed back to the kernel.
///
/// What lies past it is reset with `madvise`, and each page the next instance touches
/// there faults in again: word_count writes 4 pages above its 1 MiB stack (5 faults a
/// call). Each `madvise` also makes the kernel interrupt every other core running one
/// of piton's threads to flush its TLB, so calls on two cores held each other up. A
/// Rust guest's memory starts with its stack, then its data: 1 MiB and 64 KiB with
/// Rust's default stack, 320 KiB with the 256 KiB piton builds Rust tools with
/// (`piton_guest_builder::STACK_SIZE`); a C guest's at 128 KiB. 2 MiB covers each,
/// and their calls make no system call to reset memory. (The figures below are
/// word_count with a 1 MiB stack.) Measured on 2 cores (load 1.2-1.6), 64 KiB against 2 MiB: word_count
/// from 2 concurrent callers 21 000-23 000 calls/s against 45 000-46 000, with
/// 500 000 TLB-flush interrupts in the run against 200; one caller alike (37-38 µs);
/// tally-c (C) 144 µs a call against 90; text-js 1.45 ms against 1.50, notes-py
/// 2.24 ms against 2.26 (their memories are larger: 2 MiB more to reset). A slot
/// keeps at most this much resident between its instances.
///
/// wasmtime's page scan (`PoolingAllocationConfig::pagemap_scan`), which resets
/// only the pages an instance wrote, halved word_count's call, but is not used: in
/// wasmtime 48 it skips a written page that is swapped out or being migrated at the
/// time (not `PRESENT`), so the next instance in the slot could read it.
const MEMORY_KEEP_RESIDENT: usize = 2 << 20;

/// Which compiler an engine's code comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tier {
    /// Winch: fast to compile, slower code; used until the optimised code is ready.
    Baseline,
    /// Cranelift: the code every call runs once compiled, and the compile cache's.
    Optimised,
}

/// An engine of `tier` with a pool of `max_instances` instances whose memories may
/// grow to `max_memory` bytes, with its epoch ticker started (it ends when the last
/// clone of the engine is dropped); why not, in words.
pub(crate) fn engine(max_instances: u32, max_memory: u64, tier: Tier) -> Result<Engine, String> {
    let mut pool = PoolingAllocationConfig::new();
    // Each tool instance is a component with a handful of core instances, usually
    // one memory and one table; a slot pool sized for `max_instances` such
    // components. Both engines have one: the runtime's instance permits bound the
    // instances of the two together.
    let n = max_instances.max(1);
    pool.total_component_instances(n)
        .total_core_instances(n * 16)
        .total_memories(n * 2)
        .total_tables(n * 4)
        .total_stacks(n)
        .max_memory_size(usize::try_from(max_memory).unwrap_or(usize::MAX))
        .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
        .table_keep_resident(64 << 10);
    let mut wasm = Config::new();
    wasm.epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    if tier == Tier::Baseline {
        // Winch compiles the functions; Cranelift still compiles the trampolines,
        // unoptimised here: they run only until the optimised code lands.
        wasm.strategy(Strategy::Winch)
            .cranelift_opt_level(wasmtime::OptLevel::None);
    }
    let engine = Engine::new(&wasm).map_err(|e| e.to_string())?;
    spawn_ticker(&engine).map_err(|e| format!("cannot start the epoch ticker thread: {e}"))?;
    Ok(engine)
}

/// The WASI linker every tool is linked with, for `engine`: WASI 0.2 with the
/// filesystem and network layers that hold a call to its capabilities; why not, in
/// words.
pub(crate) fn linker(engine: &Engine) -> Result<Linker<Sandbox>, String> {
    let fail = |e: wasmtime::Error| e.to_string();
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(fail)?;
    // The filesystem and network layers replace some of WASI's functions with ones
    // that hold a call to its capabilities.
    linker.allow_shadowing(true);
    super::fs::add_to_linker(&mut linker).map_err(fail)?;
    super::net::add_to_linker(&mut linker).map_err(fail)?;
    super::fds::add_to_linker(&mut linker).map_err(fail)?;
    linker.allow_shadowing(false);
    Ok(linker)
}

/// Without the ticker no deadline would fire and no guest would yield, so failing to
/// start it fails the engine.
fn spawn_ticker(engine: &Engine) -> std::io::Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("piton-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .map(drop)
}
