/// A name the model cannot call.
#[piton_guest_sdk::tool]
fn résumé(text: String) -> String {
    text
}

fn main() {}
