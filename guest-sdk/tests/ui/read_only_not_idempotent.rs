/// Read a file.
#[piton_guest_sdk::tool(read_only = true, idempotent = false)]
fn read_file(path: String) -> String {
    path
}

fn main() {}
