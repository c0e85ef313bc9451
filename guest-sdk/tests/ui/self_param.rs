/// Read a file.
#[piton_guest_sdk::tool]
fn read_file(&self, path: String) -> String {
    path
}

fn main() {}
