fn hints(args: &str) -> Option<piton_guest_sdk::Hints> {
    let _ = args;
    None
}

/// Run a command.
#[piton_guest_sdk::tool(hints_for = hints)]
fn bash(command: String) -> String {
    command
}

fn main() {}
