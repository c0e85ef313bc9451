//! How MCP's words become piton's: tool annotations become [`Hints`] (the worst
//! case for each left out), and a `tools/call` result becomes content or an error
//! result, as the seed maps them.

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, ToolAnnotations};
use serde_json::Value;

use crate::tool::{Content, ToolError, ToolResult};
use piton_wit::Hints;

/// Hints from MCP annotations, with the seed's worst case for each one left out and
/// read-only implying not destructive and idempotent.
pub(super) fn hints_of(annotations: Option<&ToolAnnotations>) -> Hints {
    let given = annotations.cloned().unwrap_or_default();
    let open_world = given.open_world_hint.unwrap_or(true);
    if given.read_only_hint == Some(true) {
        Hints::read_only().open_world(open_world)
    } else {
        Hints::worst()
            .destructive(given.destructive_hint.unwrap_or(true))
            .idempotent(given.idempotent_hint.unwrap_or(false))
            .open_world(open_world)
    }
}

/// A `tools/call` result as the seed maps it: text blocks joined by newlines,
/// images kept, other blocks as short placeholders, `structuredContent` as JSON when
/// there are no blocks, nothing (→ "(done)") when there is nothing; `isError` makes
/// it an error result with the blocks' text.
pub(super) fn content_of(result: CallToolResult) -> ToolResult {
    let mut content = Vec::new();
    let mut text: Option<String> = None;
    let push_text = |text: &mut Option<String>, line: String| match text {
        Some(t) => {
            t.push('\n');
            t.push_str(&line);
        }
        None => *text = Some(line),
    };
    for block in result.content {
        match block {
            ContentBlock::Text(t) => push_text(&mut text, t.text),
            ContentBlock::Image(image) => {
                match base64::engine::general_purpose::STANDARD.decode(image.data.as_bytes()) {
                    Ok(data) => {
                        if let Some(t) = text.take() {
                            content.push(Content::text(t));
                        }
                        content.push(Content::Image {
                            mime_type: image.mime_type,
                            data,
                        });
                    }
                    Err(_) => push_text(
                        &mut text,
                        format!("[image {}, not valid base64]", image.mime_type),
                    ),
                }
            }
            ContentBlock::Audio(audio) => push_text(
                &mut text,
                format!(
                    "[audio {}, {} bytes]",
                    audio.mime_type,
                    audio.data.len() * 3 / 4
                ),
            ),
            ContentBlock::Resource(resource) => {
                let uri = match &resource.resource {
                    ResourceContents::TextResourceContents { uri, .. }
                    | ResourceContents::BlobResourceContents { uri, .. } => uri.as_str(),
                    _ => "(unknown kind)",
                };
                push_text(&mut text, format!("[resource {uri}]"));
            }
            ContentBlock::ResourceLink(link) => {
                push_text(&mut text, format!("[resource link {}]", link.uri));
            }
            other => {
                let kind = serde_json::to_value(&other)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| "unknown".to_owned());
                push_text(&mut text, format!("[{kind} block]"));
            }
        }
    }
    if result.is_error == Some(true) {
        let mut message: Vec<String> = content.iter().map(Content::to_model_text).collect();
        message.extend(text);
        let message = message.join("\n");
        return Err(ToolError::Failed(if message.is_empty() {
            "the tool failed and said nothing more".to_owned()
        } else {
            message
        }));
    }
    if let Some(t) = text {
        content.push(Content::text(t));
    }
    if content.is_empty()
        && let Some(json) = result.structured_content
    {
        content.push(Content::Json { json });
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn hints_default_to_the_worst_case() {
        assert_eq!(hints_of(None), Hints::default());
        let read_only =
            ToolAnnotations::from_raw(None, Some(true), Some(true), Some(false), Some(false));
        assert_eq!(
            hints_of(Some(&read_only)),
            Hints::read_only().open_world(false)
        );
        let only_idempotent = ToolAnnotations::from_raw(None, None, None, Some(true), None);
        assert_eq!(
            hints_of(Some(&only_idempotent)),
            Hints::default().idempotent(true)
        );
    }

    #[test]
    fn text_blocks_join_and_images_stay() {
        let png = base64::engine::general_purpose::STANDARD.encode([1, 2, 3]);
        let got = content_of(result(json!({"content": [
            {"type": "text", "text": "a"},
            {"type": "text", "text": "b"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///x", "name": "x"},
        ]})));
        assert_eq!(
            got,
            Ok(vec![
                Content::text("a\nb"),
                Content::Image {
                    mime_type: "image/png".into(),
                    data: vec![1, 2, 3]
                },
                Content::text("[audio audio/wav, 3 bytes]\n[resource link file:///x]"),
            ])
        );
    }

    #[test]
    fn structured_content_only_when_there_are_no_blocks() {
        let got = content_of(result(
            json!({"content": [], "structuredContent": {"n": 1}}),
        ));
        assert_eq!(
            got,
            Ok(vec![Content::Json {
                json: json!({"n": 1})
            }])
        );
        let got = content_of(result(json!({
            "content": [{"type": "text", "text": "1"}], "structuredContent": {"n": 1}
        })));
        assert_eq!(got, Ok(vec![Content::text("1")]));
        assert_eq!(content_of(result(json!({"content": []}))), Ok(vec![]));
    }

    #[test]
    fn is_error_is_an_error_result() {
        let got = content_of(result(json!({
            "content": [{"type": "text", "text": "no such file"}], "isError": true
        })));
        assert_eq!(got, Err(ToolError::Failed("no such file".into())));
        let got = content_of(result(json!({"content": [], "isError": true})));
        assert_eq!(
            got,
            Err(ToolError::Failed(
                "the tool failed and said nothing more".into()
            ))
        );
    }
}
