//! The `piton` command: parse, run, map the outcome to an exit code.

use std::process::ExitCode;

/// mimalloc, not glibc's malloc. A call allocates on the thread it runs on and its
/// store is dropped on another (the reaper's, see `wasm::ready`): glibc then locks
/// the caller's arena to free into it, and the two threads woke each other up on
/// that lock in every call. On 2 cores, `word_count` in a fresh instance (none made
/// ahead) took 39-52 µs of CPU a call with glibc's malloc, 28-34 µs with mimalloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `arena_eager_commit` option (its place in mimalloc 3's `mi_option_e`;
/// the test below checks it). By default mimalloc commits an arena whole when it
/// reserves one on a system that overcommits, as Linux does: `serve`
/// with the bundled tools sat at 63-101 MiB resident, idle after 2 000 calls, against
/// 39-48 MiB with glibc's malloc and 44-52 MiB with the option off.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// Turns `arena_eager_commit` off before the process allocates anything: the first
/// allocation reserves mimalloc's first arena, before `main` runs (Rust's runtime
/// allocates), so setting it in `main` is too late. Run by the loader, as a
/// constructor.
#[cfg(all(target_os = "linux", not(test)))]
#[used]
#[unsafe(link_section = ".init_array")]
static SET_ALLOCATOR_OPTIONS: extern "C" fn() = set_allocator_options;

#[cfg(all(target_os = "linux", not(test)))]
extern "C" fn set_allocator_options() {
    // SAFETY: setting an option is not thread-safe in mimalloc; constructors run
    // before any thread but the first exists.
    unsafe { libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0) };
}

fn main() -> ExitCode {
    piton_host::cli::main()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_turned_off_is_arena_eager_commit() {
        // `arena_eager_commit` defaults to 2 and the options either side of it to 1,
        // so a list that moved fails here. (The test binary has no constructor: the
        // option keeps its default.)
        // SAFETY: reads options; nothing sets them in this process.
        let around =
            [-1, 0, 1].map(|d| unsafe { libmimalloc_sys::mi_option_get(ARENA_EAGER_COMMIT + d) });
        assert_eq!(
            around,
            [1, 2, 1],
            "mimalloc's option {ARENA_EAGER_COMMIT} is not arena_eager_commit"
        );
    }
}
