//! The options of the allocator the `piton` binary runs with (mimalloc; why, in
//! host/src/main.rs), set before the process allocates anything.

/// mimalloc's `arena_eager_commit` option: its place in mimalloc 3's `mi_option_e`
/// (the test below checks it). By default mimalloc commits an arena whole when it
/// reserves one on a system that overcommits, as Linux does: `serve` with the bundled
/// tools sat at 63-101 MiB resident, idle after 2 000 calls, against 39-48 MiB with
/// glibc's malloc and 44-52 MiB with the option off.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// Turns mimalloc's `arena_eager_commit` off. It must run before the first
/// allocation, which reserves the first arena: `main` is too late (Rust's runtime
/// allocates before it), so the binary runs it as a constructor.
pub extern "C" fn set_options() {
    // SAFETY: setting an option is not thread-safe in mimalloc; the binary calls this
    // from a constructor, before any thread but the first exists.
    unsafe { libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_turned_off_is_arena_eager_commit() {
        // `arena_eager_commit` defaults to 2 and the options either side of it to 1,
        // so a list that moved fails here. (Nothing in the tests sets options.)
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
