//! A tool returning mixed contents through a `Result`.

use piton_guest_sdk::{Content, Image, Tool, ToolError, tool};

/// Take a screenshot.
///
/// Args:
///     fail: Fail instead
#[tool(read_only)]
fn screenshot(fail: bool) -> std::result::Result<Vec<Content>, ToolError> {
    if fail {
        return Err(ToolError::failed("no display"));
    }
    Ok(vec![
        Content::text("Page loaded"),
        Image::png(vec![1, 2, 3]).into(),
    ])
}

#[test]
fn contents_pass_as_they_are() {
    assert_eq!(
        ScreenshotTool::run(r#"{"fail": false}"#),
        Ok(vec![
            Content::text("Page loaded"),
            Content::Image(Image::png(vec![1, 2, 3]))
        ])
    );
    assert_eq!(
        ScreenshotTool::run(r#"{"fail": true}"#),
        Err(ToolError::Failed("no display".to_owned()))
    );
}
