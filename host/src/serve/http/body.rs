//! What `serve --http` answers with ([`Body`]) and reads of a request at most
//! ([`MAX_BODY`]): shared by the server loop and the lean path below it.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;

/// The largest request body read (rmcp answers a larger one with 413). MCP requests
/// are small: arguments, not files.
pub const MAX_BODY: usize = 4 << 20;

/// Every answer's body: a whole one or rmcp's stream.
pub(super) type Body = BoxBody<Bytes, Infallible>;
