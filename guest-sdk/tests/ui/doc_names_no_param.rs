/// Read a file.
///
/// Args:
///     file: The file to read
#[piton_guest_sdk::tool]
fn read_file(path: String) -> String {
    path
}

fn main() {}
