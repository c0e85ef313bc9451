/// Read a file.
#[piton_guest_sdk::tool]
fn read_file(path: String) -> String {
    path
}

mod other {
    /// Write a file.
    #[piton_guest_sdk::tool]
    fn write_file(path: String) {
        let _ = path;
    }
}

fn main() {}
