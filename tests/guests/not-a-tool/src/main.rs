//! A plain WASI command: a component, but not a piton tool.

fn main() {
    println!("hello from a command");
}
