/// Read a file.
#[piton_guest_sdk::tool]
fn read_file(path) -> String {
    path
}

fn main() {}
