//! An answer as rmcp writes it, for the lean paths that answer without rmcp (stdio's
//! and HTTP's): the same result types, finished the way rmcp's handler finishes them
//! for the peer's revision, serialized once.
//!
//! rmcp's `Service::handle_request` shapes every result for the revision of the peer
//! it answers: a peer before 2026-07-28 gets no `resultType` and no structured
//! content that is not an object; a peer on 2026-07-28 gets list results with their
//! caching hints (`ttlMs`, `cacheScope`) and "resource not found" as invalid params.
//! [`message`] does the same, so that a lean answer and rmcp's are the same bytes.

use rmcp::ErrorData;
use rmcp::model::{ErrorCode, JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerResult};

/// The revision of the peer an answer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Revision {
    /// Before 2026-07-28: the session started with `initialize`.
    Session,
    /// 2026-07-28: each request carries its own metadata, no session.
    Stateless,
}

/// The JSON-RPC message answering request `id` with `answer`, as rmcp's handler
/// answers a peer of `revision`.
pub(super) fn message(
    id: RequestId,
    answer: Result<ServerResult, ErrorData>,
    revision: Revision,
) -> ServerJsonRpcMessage {
    let answer = answer.and_then(|mut result| match revision {
        Revision::Session => {
            if matches!(result, ServerResult::InputRequiredResult(_)) {
                return Err(ErrorData::invalid_request(
                    "InputRequiredResult requires negotiated protocol version 2026-07-28 or newer",
                    None,
                ));
            }
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            Ok(result)
        }
        Revision::Stateless => {
            result.fill_missing_cache_hints();
            Ok(result)
        }
    });
    match answer {
        Ok(result) => JsonRpcMessage::response(result, id),
        Err(mut error) => {
            if revision == Revision::Stateless && error.code == ErrorCode::RESOURCE_NOT_FOUND {
                error.code = ErrorCode::INVALID_PARAMS;
            }
            JsonRpcMessage::error(error, Some(id))
        }
    }
}

/// Appends `message` as JSON to `out`. Should it not serialize (not seen: these
/// types have string keys only), the peer still gets an answer: an internal error
/// with the same id.
pub(super) fn encode(message: &ServerJsonRpcMessage, out: &mut Vec<u8>) {
    let start = out.len();
    let Err(error) = serde_json::to_writer(&mut *out, message) else {
        return;
    };
    tracing::error!(%error, "cannot serialize an answer");
    out.truncate(start);
    let id = match message {
        JsonRpcMessage::Response(response) => Some(response.id.clone()),
        JsonRpcMessage::Error(error) => error.id.clone(),
        _ => None,
    };
    let error = ErrorData::internal_error(format!("cannot serialize the answer: {error}"), None);
    let fallback: ServerJsonRpcMessage = JsonRpcMessage::error(error, id);
    if serde_json::to_writer(&mut *out, &fallback).is_err() {
        out.truncate(start);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock, InputRequiredResult, ListToolsResult};
    use serde_json::{Value, json};

    use super::*;

    fn json_of(message: &ServerJsonRpcMessage) -> Value {
        let mut out = Vec::new();
        encode(message, &mut out);
        serde_json::from_slice(&out).expect("JSON")
    }

    #[test]
    fn a_stateless_list_carries_its_caching_hints_and_a_session_list_none() {
        let list = || Ok(ServerResult::ListToolsResult(ListToolsResult::default()));
        let stateless = json_of(&message(RequestId::Number(1), list(), Revision::Stateless));
        assert_eq!(stateless["result"]["ttlMs"], 0, "{stateless}");
        assert_eq!(stateless["result"]["cacheScope"], "private", "{stateless}");
        let session = json_of(&message(RequestId::Number(1), list(), Revision::Session));
        assert!(session["result"].get("ttlMs").is_none(), "{session}");
        assert!(session["result"].get("resultType").is_none(), "{session}");
    }

    #[test]
    fn a_session_peer_gets_no_result_type_and_no_input_required() {
        let result = CallToolResult::success(vec![ContentBlock::text("x")]);
        let call = || Ok(ServerResult::CallToolResult(result.clone()));
        let stateless = json_of(&message(RequestId::Number(2), call(), Revision::Stateless));
        assert_eq!(stateless["result"]["resultType"], "complete", "{stateless}");
        let session = json_of(&message(RequestId::Number(2), call(), Revision::Session));
        assert!(session["result"].get("resultType").is_none(), "{session}");

        let asks = ServerResult::InputRequiredResult(InputRequiredResult::new(None, None));
        let refused = json_of(&message(RequestId::Number(3), Ok(asks), Revision::Session));
        assert_eq!(refused["error"]["code"], -32600, "{refused}");
    }

    #[test]
    fn resource_not_found_is_invalid_params_for_a_stateless_peer_only() {
        let error = || Err(ErrorData::resource_not_found("gone", None));
        let stateless = json_of(&message(RequestId::Number(4), error(), Revision::Stateless));
        assert_eq!(stateless["error"]["code"], -32602, "{stateless}");
        let session = json_of(&message(RequestId::Number(4), error(), Revision::Session));
        assert_eq!(session["error"]["code"], -32002, "{session}");
        assert_eq!(
            session,
            json!({"jsonrpc": "2.0", "id": 4, "error": session["error"]})
        );
    }
}
