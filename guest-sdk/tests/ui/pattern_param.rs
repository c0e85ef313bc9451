/// Add two numbers.
#[piton_guest_sdk::tool]
fn add((a, b): (u32, u32)) -> u32 {
    a + b
}

fn main() {}
