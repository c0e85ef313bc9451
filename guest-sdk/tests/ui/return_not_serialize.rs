struct Opaque;

/// Make something.
#[piton_guest_sdk::tool]
fn make() -> Opaque {
    Opaque
}

fn main() {}
