/// Read a file.
#[piton_guest_sdk::tool]
fn read_file(path: String) -> Result<String, std::io::Error> {
    std::fs::read_to_string(path)
}

fn main() {}
