/// Read a file.
#[piton_guest_sdk::tool]
fn read_file(path: &str) -> String {
    path.to_owned()
}

fn main() {}
