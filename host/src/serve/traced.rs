//! The context a served call runs in, with the trace context its request carries:
//! one rule for rmcp's handler (session.rs) and the lean paths (stdio's and HTTP's).

use http::HeaderMap;

use crate::call::{CallContext, TraceParent};

/// The context of a call: the first valid `traceparent` (with its `tracestate`) of
/// `from_meta` (the request's `_meta`, in order) and, on Streamable HTTP, of its
/// `headers`. `_meta` wins: it is the client's, the headers may be a proxy's. None
/// valid: the call starts a trace of its own.
pub(super) fn call_context<'a>(
    from_meta: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    headers: Option<&HeaderMap>,
) -> CallContext {
    let valid = |parent: &str| TraceParent::parse(parent).is_some();
    if let Some((parent, state)) = from_meta.into_iter().find(|(parent, _)| valid(parent)) {
        return CallContext::new().traced(Some(parent), state);
    }
    match headers.and_then(from_headers) {
        Some((parent, state)) if valid(parent) => {
            CallContext::new().traced(Some(parent), state.as_deref())
        }
        _ => CallContext::new(),
    }
}

/// The `traceparent` and `tracestate` of HTTP `headers`.
fn from_headers(headers: &HeaderMap) -> Option<(&str, Option<String>)> {
    let mut parents = headers.get_all("traceparent").iter();
    // Two traceparent fields are no valid one.
    let parent = parents.next()?.to_str().ok()?;
    if parents.next().is_some() {
        return None;
    }
    // tracestate fields are one list, in order.
    let states: Vec<&str> = headers
        .get_all("tracestate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let state = (!states.is_empty()).then(|| states.join(","));
    Some((parent, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const OTHER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, http::HeaderValue::from_static(value));
        }
        headers
    }

    fn trace(ctx: &CallContext) -> (Option<String>, Option<String>) {
        (
            ctx.trace.map(|t| t.to_string()),
            ctx.tracestate.as_ref().map(|s| s.as_str().to_owned()),
        )
    }

    #[test]
    fn meta_wins_over_headers_and_an_invalid_one_is_passed_over() {
        let sent = headers(&[("traceparent", OTHER), ("tracestate", "h=1")]);
        let ctx = call_context([(PARENT, Some("m=1"))], Some(&sent));
        assert_eq!(trace(&ctx), (Some(PARENT.into()), Some("m=1".into())));
        let ctx = call_context([("00-bad", Some("m=1"))], Some(&sent));
        assert_eq!(trace(&ctx), (Some(OTHER.into()), Some("h=1".into())));
        let ctx = call_context([("00-bad", None), (PARENT, None)], None);
        assert_eq!(trace(&ctx), (Some(PARENT.into()), None));
    }

    #[test]
    fn header_tracestates_are_one_list_and_two_traceparents_none() {
        let sent = headers(&[
            ("traceparent", PARENT),
            ("tracestate", "a=1"),
            ("tracestate", "b=2"),
        ]);
        let ctx = call_context([], Some(&sent));
        assert_eq!(trace(&ctx), (Some(PARENT.into()), Some("a=1,b=2".into())));
        let twice = headers(&[("traceparent", PARENT), ("traceparent", PARENT)]);
        assert_eq!(trace(&call_context([], Some(&twice))), (None, None));
    }
}
