//! Draw a checkerboard: a tool that returns an image.
//!
//! Run with: `cargo run --release -- call checkerboard '{"size":64,"cells":8}'`
//! (prints where the PNG was saved).

use piton_guest_sdk::{Image, ToolError, tool};

/// Draw a black and white checkerboard as a PNG image.
///
/// Args:
///     size: The image's width and height in pixels, 1 to 1024 (default 64)
///     cells: How many cells along each side, 1 to size (default 8)
#[tool(read_only, open_world = false)]
fn checkerboard(size: Option<u32>, cells: Option<u32>) -> Result<Image, ToolError> {
    let size = size.unwrap_or(64);
    let cells = cells.unwrap_or(8);
    if !(1..=1024).contains(&size) {
        return Err(ToolError::input(format!(
            "size must be 1 to 1024, not {size}"
        )));
    }
    if !(1..=size).contains(&cells) {
        return Err(ToolError::input(format!(
            "cells must be 1 to {size}, not {cells}"
        )));
    }
    let cell = size.div_ceil(cells);
    let pixels: Vec<u8> = (0..size)
        .flat_map(|y| {
            (0..size).map(move |x| {
                if (x / cell + y / cell).is_multiple_of(2) {
                    0
                } else {
                    255
                }
            })
        })
        .collect();
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, size, size);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder
        .write_header()
        .map_err(|e| ToolError::failed(e.to_string()))?;
    writer
        .write_image_data(&pixels)
        .map_err(|e| ToolError::failed(e.to_string()))?;
    writer
        .finish()
        .map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(Image::png(png))
}
