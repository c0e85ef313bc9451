//! The `piton` command: parse, run, map the outcome to an exit code.

use std::process::ExitCode;

/// mimalloc, not glibc's malloc. A call allocates on the thread it runs on and its
/// store is dropped on another (the reaper's, see `wasm::ready`): glibc then locks
/// the caller's arena to free into it, and the two threads woke each other up on
/// that lock in every call. On 2 cores, `word_count` in a fresh instance (none made
/// ahead) took 39-52 µs of CPU a call with glibc's malloc, 28-34 µs with mimalloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sets the allocator's options (see `piton_host::allocator`) before the process
/// allocates anything: run by the loader, as a constructor.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static SET_ALLOCATOR_OPTIONS: extern "C" fn() = piton_host::allocator::set_options;

fn main() -> ExitCode {
    piton_host::cli::main()
}
