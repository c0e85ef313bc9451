/// Read a file.
#[piton_guest_sdk::tool(name = "has space")]
fn read_file(path: String) -> String {
    path
}

fn main() {}
