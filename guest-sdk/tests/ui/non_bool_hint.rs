/// Read a file.
#[piton_guest_sdk::tool(open_world = "no")]
fn read_file(path: String) -> String {
    path
}

fn main() {}
