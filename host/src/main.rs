//! The `piton` command: parse, run, map the outcome to an exit code.

fn main() -> std::process::ExitCode {
    piton_host::cli::main()
}
