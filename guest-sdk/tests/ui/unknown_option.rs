/// Read a file.
#[piton_guest_sdk::tool(readonly)]
fn read_file(path: String) -> String {
    path
}

fn main() {}
