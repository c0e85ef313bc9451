//! Builds the example plugins in ../plugins to components that the `piton` binary
//! carries, so a fresh clone runs them with no other step.

fn main() {
    piton_guest_builder::Guests::in_folder("../plugins")
        .embed(true)
        .build_into("bundled_plugins.rs");
}
