//! `serve --http`'s lean path: a 2026-07-28 `tools/call` or `tools/list` (no session)
//! answered here, on the connection's own task, rather than by rmcp.
//!
//! rmcp's [`StreamableHttpService`](rmcp::transport::streamable_http_server::StreamableHttpService)
//! answers such a request with a handler of its own: it makes a [`Session`](super::Session),
//! parses the body into its untagged message types, serializes it again to check the
//! `Mcp-*` headers, spawns a service loop and a task per request, and streams the
//! answer through channels as server-sent events. That costs several times the call.
//!
//! Here a request is taken only when nothing about it is left to judge: `POST`, no
//! `Mcp-Session-Id`, `MCP-Protocol-Version: 2026-07-28`, an `Mcp-Method` of
//! `tools/call` or `tools/list` (with an `Mcp-Name` that is the tool's name in
//! visible ASCII, not Base64), no `Mcp-Param-*` headers, `Content-Type: application/json`, an `Accept`
//! naming both `application/json` and `text/event-stream` plainly; and a body that is
//! exactly such a request, whose `_meta` is the 2026-07-28 metadata (protocol
//! version, client capabilities, at most client info, log level, progress token and
//! trace context) and nothing else. Anything else (a session, another method, a
//! header rmcp would refuse, a field the lean types do not know) goes to rmcp, the
//! body as read, and rmcp answers it as it always did.
//!
//! The answer is what rmcp's handler gives for the same request, from the same code
//! (`answer`, `stateless`, `reply`), and what rmcp's transport would send: one
//! server-sent event, or JSON with the status rmcp gives the error. It is sent in one
//! write, its length known.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use rmcp::model::{
    CallToolRequestMethod, ClientCapabilities, ErrorCode, Implementation, InputResponses,
    JsonObject, JsonRpcMessage, JsonRpcVersion2_0, ListToolsRequestMethod, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};

use super::body::{Body, MAX_BODY};
use super::per_client::Client;
use crate::serve::reply::{self, Revision};
use crate::serve::served::Served;
use crate::serve::{answer, ask, stateless, traced};

/// The revision the lean path serves, as `MCP-Protocol-Version` and `_meta` name it.
const REVISION: &str = "2026-07-28";

/// The media types a client must accept (as rmcp requires).
const JSON: &str = "application/json";
const EVENTS: &str = "text/event-stream";

/// The lean path of one server, and how many answers it gave.
#[derive(Debug, Default)]
pub(super) struct Lean {
    answered: AtomicU64,
}

/// What a request's head says it is, when the lean path may take it.
pub(super) enum Kind {
    /// A `tools/call` of the tool its `Mcp-Name` names.
    Call(HeaderValue),
    List,
}

impl Kind {
    /// What `request` is, if its head lets the lean path take it.
    pub(super) fn of<B>(request: &Request<B>) -> Option<Self> {
        if request.method() != http::Method::POST {
            return None;
        }
        let headers = request.headers();
        if one(headers, "mcp-protocol-version")? != REVISION
            || headers.contains_key("mcp-session-id")
            || !json_content(headers)
            || !accepts_both(headers)
            || headers
                .keys()
                .any(|name| name.as_str().starts_with("mcp-param-"))
        {
            return None;
        }
        match one(headers, "mcp-method")?.as_bytes() {
            b"tools/list" => Some(Self::List),
            b"tools/call" => {
                let name = one(headers, "mcp-name")?;
                // A Base64 name is rmcp's to decode and compare; so is one with bytes
                // that are not visible ASCII, which rmcp refuses (a raw UTF-8 name
                // must not reach a tool that rmcp would not call).
                (name.to_str().is_ok() && !name.as_bytes().starts_with(b"=?base64?"))
                    .then(|| Self::Call(name.clone()))
            }
            _ => None,
        }
    }

    /// `body` as the request the head announced, if it is exactly one the lean path
    /// takes.
    pub(super) fn parse(&self, body: &[u8]) -> Option<Parsed> {
        match self {
            Self::Call(name) => serde_json::from_slice::<CallRequest>(body)
                .ok()
                .filter(|call| call.params.name.as_bytes() == name.as_bytes())
                .map(Parsed::Call),
            Self::List => serde_json::from_slice(body).ok().map(Parsed::List),
        }
    }
}

/// The one value of header `name`; none when it is absent or given twice.
fn one<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h HeaderValue> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then_some(value)
}

/// Whether the body is declared JSON, as rmcp reads `Content-Type`.
fn json_content(headers: &HeaderMap) -> bool {
    one(headers, header::CONTENT_TYPE.as_str())
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case(JSON)
        })
}

/// Whether `Accept` plainly names both JSON and event streams. A list with quoted
/// strings or weights is left to rmcp, which parses those.
fn accepts_both(headers: &HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        if value.contains(['"', '=']) {
            return false;
        }
        for range in value.split(',') {
            let essence = range.split(';').next().unwrap_or_default().trim();
            json |= essence.eq_ignore_ascii_case(JSON);
            events |= essence.eq_ignore_ascii_case(EVENTS);
        }
    }
    json && events
}

/// The body of a request the lean path may take, at most [`MAX_BODY`] bytes; else
/// the answer rmcp gives to a body too large or cut off.
pub(super) async fn read_body<B>(body: B) -> Result<Bytes, Response<Body>>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: request body exceeds {MAX_BODY} bytes"),
        )),
        Err(error) => Err(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Failed to read request body: {error}"),
        )),
    }
}

/// A request the lean path answers.
pub(super) enum Parsed {
    Call(CallRequest),
    List(ListRequest),
}

/// A 2026-07-28 `tools/call`: exactly these fields (any other shape goes to rmcp).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallRequest {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(rename = "method")]
    _method: CallToolRequestMethod,
    params: CallParams,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta")]
    meta: Meta,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

/// A 2026-07-28 `tools/list`. There is one page: a cursor changes nothing, for
/// rmcp's handler either.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListRequest {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(rename = "method")]
    _method: ListToolsRequestMethod,
    #[serde(rename = "params")]
    _params: ListParams,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    #[serde(rename = "_meta")]
    _meta: Meta,
    #[serde(rename = "cursor", default)]
    _cursor: Option<String>,
}

/// The request metadata of 2026-07-28 that the lean path takes; any other key goes to
/// rmcp. The log level and progress token are skipped whatever their value, as rmcp
/// keeps them unread for piton's handler, which ignores them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    _version: Revision2026,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: ClientCapabilities,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    client_info: Option<Implementation>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    _log_level: Option<IgnoredAny>,
    #[serde(rename = "progressToken", default)]
    _progress_token: Option<IgnoredAny>,
    #[serde(default)]
    traceparent: Option<String>,
    #[serde(default)]
    tracestate: Option<String>,
}

/// The protocol version `2026-07-28`, and no other.
struct Revision2026;

impl<'de> Deserialize<'de> for Revision2026 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let version = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        if version == REVISION {
            Ok(Self)
        } else {
            Err(serde::de::Error::custom("not the lean path's revision"))
        }
    }
}

impl Lean {
    /// The answer to `request`, which came from `client` with `headers`.
    pub(super) async fn answer(
        &self,
        served: &Served,
        client: Client,
        headers: &HeaderMap,
        request: Parsed,
    ) -> Response<Body> {
        let message = match request {
            Parsed::List(list) => {
                // A snapshot: a reload meanwhile does not matter.
                let registry = served.registry();
                let tools = answer::list_tools(&registry).await;
                reply::message(
                    list.id,
                    Ok(ServerResult::ListToolsResult(tools)),
                    Revision::Stateless,
                )
            }
            Parsed::Call(call) => {
                let CallRequest { id, params, .. } = call;
                let meta = params.meta;
                let trace = meta
                    .traceparent
                    .as_deref()
                    .map(|parent| (parent, meta.tracestate.as_deref()));
                let ctx = traced::call_context(trace, Some(headers));
                let call = stateless::Call {
                    ctx,
                    name: params.name,
                    arguments: params.arguments,
                    responses: params.input_responses,
                    state: params.request_state,
                    elicits: ask::can_elicit(Some(&meta.capabilities)),
                };
                let scope = || {
                    // Without its clientInfo, rmcp's handler sees its own default one.
                    let client_name = meta.client_info.unwrap_or_default().name;
                    ask::stateless_scope(
                        Some(&client as &dyn std::fmt::Display),
                        headers
                            .get(header::AUTHORIZATION)
                            .map(HeaderValue::as_bytes),
                        Some(&client_name),
                    )
                };
                let answer = stateless::call_tool(served, call, scope).await;
                reply::message(id, answer.map(ServerResult::from), Revision::Stateless)
            }
        };
        self.answered.fetch_add(1, Ordering::Relaxed);
        respond(&message)
    }

    /// How many requests the lean path has answered.
    #[cfg(test)]
    pub(super) fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

/// `message` as rmcp's transport sends the first (here: only) message of a stateless
/// request: an error rmcp gives a 4xx status goes as JSON with that status; anything
/// else as one server-sent event, status 200.
fn respond(message: &ServerJsonRpcMessage) -> Response<Body> {
    let status = match message {
        JsonRpcMessage::Error(error) => match error.error.code {
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
            ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        },
        _ => StatusCode::OK,
    };
    let mut body = Vec::with_capacity(512);
    let events = status == StatusCode::OK;
    if events {
        body.extend_from_slice(b"data: ");
        reply::encode(message, &mut body);
        body.extend_from_slice(b"\n\n");
    } else {
        reply::encode(message, &mut body);
    }
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    if events {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENTS));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    } else {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    }
    response
}

/// A text answer with no content type, as rmcp gives for a body it cannot read.
fn plain(status: StatusCode, message: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(message)).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(pairs: &[(&'static str, &'static str)]) -> Request<()> {
        let mut request = Request::post("/mcp");
        for (name, value) in pairs {
            request = request.header(*name, *value);
        }
        request.body(()).expect("a request")
    }

    const CALL_HEAD: [(&str, &str); 5] = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "a"),
    ];

    fn with(extra: &[(&'static str, &'static str)], without: &str) -> Request<()> {
        let pairs: Vec<_> = CALL_HEAD
            .iter()
            .filter(|(name, _)| *name != without)
            .chain(extra)
            .copied()
            .collect();
        head(&pairs)
    }

    #[test]
    fn a_plain_stateless_head_is_taken_and_anything_rmcp_must_judge_is_not() {
        assert!(matches!(Kind::of(&with(&[], "")), Some(Kind::Call(_))));
        assert!(
            Kind::of(&with(
                &[("content-type", "application/json; charset=utf-8")],
                "content-type"
            ))
            .is_some()
        );
        assert!(
            Kind::of(&with(
                &[
                    ("accept", "text/event-stream"),
                    ("accept", "application/json")
                ],
                "accept"
            ))
            .is_some()
        );
        let list = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ];
        assert!(matches!(Kind::of(&head(&list)), Some(Kind::List)));
        for (extra, without) in [
            (vec![], "mcp-protocol-version"),
            (
                vec![("mcp-protocol-version", "2025-11-25")],
                "mcp-protocol-version",
            ),
            (vec![("mcp-protocol-version", "2026-07-28")], ""),
            (vec![("mcp-session-id", "s")], ""),
            (vec![], "mcp-method"),
            (vec![("mcp-method", "tools/call")], ""),
            (vec![("mcp-method", "prompts/list")], "mcp-method"),
            (vec![], "mcp-name"),
            (vec![("mcp-name", "=?base64?YQ==?=")], "mcp-name"),
            (vec![("mcp-param-x", "1")], ""),
            (vec![], "content-type"),
            (vec![("content-type", "text/plain")], "content-type"),
            (vec![("accept", "application/json")], "accept"),
            (
                vec![("accept", "application/json, text/event-stream;q=0")],
                "accept",
            ),
            (vec![("accept", "*/*")], "accept"),
        ] {
            let request = with(&extra, without);
            assert!(Kind::of(&request).is_none(), "{extra:?} without {without}");
        }
        // A name in raw UTF-8 rather than Base64: rmcp refuses it, so it is rmcp's.
        let mut raw = with(&[], "");
        raw.headers_mut().insert(
            "mcp-name",
            HeaderValue::from_bytes("\u{e9}".as_bytes()).expect("obs-text is a header value"),
        );
        assert!(Kind::of(&raw).is_none());
        let mut get = with(&[], "");
        *get.method_mut() = http::Method::GET;
        assert!(Kind::of(&get).is_none());
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    fn call_kind() -> Kind {
        Kind::Call(HeaderValue::from_static("a"))
    }

    /// Every body the lean path takes is one rmcp reads as the same request.
    #[test]
    fn a_lean_body_is_the_request_rmcp_reads() {
        let calls = [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"a","arguments":{{"x":1}},{META}}}}}"#),
            format!(r#"{{"params":{{{META},"name":"a"}},"id":"s-1","method":"tools/call","jsonrpc":"2.0"}}"#),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info","progressToken":7,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"a=1"},"inputResponses":{"k":{"action":"accept"}},"requestState":"st"}}"#.to_owned(),
        ];
        for body in &calls {
            let Some(Parsed::Call(lean)) = call_kind().parse(body.as_bytes()) else {
                panic!("lean: {body}");
            };
            let rmcp: rmcp::model::ClientJsonRpcMessage =
                serde_json::from_str(body).expect("rmcp reads it");
            let JsonRpcMessage::Request(request) = rmcp else {
                panic!("not a request to rmcp: {body}");
            };
            let meta = rmcp::model::GetMeta::get_meta(&request.request).clone();
            let rmcp::model::ClientRequest::CallToolRequest(call) = request.request else {
                panic!("not a tools/call to rmcp: {body}");
            };
            assert_eq!(request.id, lean.id, "{body}");
            assert_eq!(call.params.name, lean.params.name, "{body}");
            assert_eq!(call.params.arguments, lean.params.arguments, "{body}");
            assert_eq!(
                call.params.input_responses, lean.params.input_responses,
                "{body}"
            );
            assert_eq!(
                call.params.request_state, lean.params.request_state,
                "{body}"
            );
            assert!(
                meta.missing_required_keys(&rmcp::model::ProtocolVersion::V_2026_07_28)
                    .is_empty()
            );
            assert_eq!(
                meta.client_capabilities().as_ref(),
                Some(&lean.params.meta.capabilities),
                "{body}"
            );
            assert_eq!(meta.client_info(), lean.params.meta.client_info, "{body}");
            assert_eq!(
                meta.get_traceparent(),
                lean.params.meta.traceparent.as_deref(),
                "{body}"
            );
        }
        let list = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{{META},"cursor":"c"}}}}"#
        );
        assert!(matches!(
            Kind::List.parse(list.as_bytes()),
            Some(Parsed::List(_))
        ));
        let rmcp: rmcp::model::ClientJsonRpcMessage =
            serde_json::from_str(&list).expect("rmcp reads it");
        assert!(
            matches!(&rmcp, JsonRpcMessage::Request(r) if matches!(r.request, rmcp::model::ClientRequest::ListToolsRequest(_)))
        );
    }

    /// Anything else is left to rmcp, which answers it as it always did.
    #[test]
    fn other_bodies_are_left_to_rmcp() {
        let call = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#)
        };
        let bodies = [
            call(r#"{"name":"a"}"#),
            call(
                r#"{"name":"b","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
            ),
            call(
                r#"{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}"#,
            ),
            call(
                r#"{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
            ),
            call(
                r#"{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}"#,
            ),
            call(&format!(r#"{{"name":"a",{META},"task":{{}}}}"#)),
            call(&format!(r#"{{"name":"a",{META},"arguments":[1]}}"#)),
            call(
                r#"{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x.y/z":1}}"#,
            ),
            format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"a",{META}}}}}"#),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"name":"a",{META}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"a",{META}}},"x":1}}"#
            ),
            format!(
                r#"[{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"a",{META}}}}}]"#
            ),
            String::new(),
        ];
        for body in &bodies {
            assert!(call_kind().parse(body.as_bytes()).is_none(), "{body}");
        }
        let list = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META},"extra":1}}}}"#
        );
        assert!(Kind::List.parse(list.as_bytes()).is_none());
        let unmetered = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(Kind::List.parse(unmetered.as_bytes()).is_none());
    }
}
