/// Read a file.
#[piton_guest_sdk::tool]
async fn read_file(path: String) -> String {
    path
}

fn main() {}
