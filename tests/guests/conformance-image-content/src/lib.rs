//! `test_image_content` for the MCP conformance suite's `tools-call-image` scenario:
//! no arguments, one PNG image. The scenario asks for a minimal image such as a 1x1
//! red pixel; these are the bytes of `red-pixel.png`, which the tests compare with
//! what a client receives.

use piton_guest_sdk::{Image, tool};

/// Tests image content response.
#[tool(read_only, open_world = false)]
fn test_image_content() -> Image {
    Image::png(include_bytes!("../red-pixel.png").as_slice())
}
