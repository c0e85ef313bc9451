//! Builds the hostile guests in tests/guests, and points at the example plugins, for
//! the end-to-end tests.

fn main() {
    piton_guest_builder::Guests::in_folder("guests").build_into("guests.rs");
    piton_guest_builder::Guests::in_folder("../plugins").build_into("plugins.rs");
}
