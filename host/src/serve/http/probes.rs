//! What `piton serve --http` answers beside MCP, for load balancers and monitoring,
//! under the same `Host` check as `/mcp`:
//!
//! - `GET /healthz`: 200 while the process runs and accepts connections;
//! - `GET /readyz`: 200 while it serves its registry ([`Served::is_ready`]), 503
//!   once shutdown has begun;
//! - `GET /metrics`: the registry's metrics in Prometheus' text format (see
//!   [`Observer`](crate::observe::Observer)).
//!
//! `HEAD` is answered as `GET` without a body; other methods get 405.

use http::{Method, StatusCode};

use crate::serve::served::Served;

/// The path that says the process is alive.
pub const HEALTH_PATH: &str = "/healthz";
/// The path that says whether the server takes calls.
pub const READY_PATH: &str = "/readyz";
/// The path of the Prometheus metrics.
pub const METRICS_PATH: &str = "/metrics";

/// Prometheus' text exposition format.
const METRICS_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Plain text.
const TEXT_TYPE: &str = "text/plain; charset=utf-8";

/// An answer, for the HTTP server to send.
#[derive(Debug)]
pub(super) struct Probe {
    pub(super) status: StatusCode,
    pub(super) content_type: &'static str,
    pub(super) body: String,
    /// The methods allowed, for a 405.
    pub(super) allow: Option<&'static str>,
}

/// The answer to `method` on `path` if `path` is one of these; `None` for others.
pub(super) fn answer(method: &Method, path: &str, served: &Served) -> Option<Probe> {
    if ![HEALTH_PATH, READY_PATH, METRICS_PATH].contains(&path) {
        return None;
    }
    let text = |status, body: &str| Probe {
        status,
        content_type: TEXT_TYPE,
        body: body.to_owned(),
        allow: None,
    };
    if method != Method::GET && method != Method::HEAD {
        return Some(Probe {
            allow: Some("GET, HEAD"),
            ..text(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: this path answers GET and HEAD\n",
            )
        });
    }
    let mut probe = match path {
        HEALTH_PATH => text(StatusCode::OK, "ok\n"),
        READY_PATH if served.is_ready() => text(StatusCode::OK, "ready\n"),
        READY_PATH => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: piton is stopping\n",
        ),
        _ => match served.registry().observer() {
            Some(observer) => Probe {
                content_type: METRICS_TYPE,
                body: observer.metrics_text(),
                ..text(StatusCode::OK, "")
            },
            None => text(
                StatusCode::NOT_FOUND,
                "Not Found: this registry has no metrics (it is served without an observer)\n",
            ),
        },
    };
    if method == Method::HEAD {
        probe.body.clear();
    }
    Some(probe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Observer;
    use crate::registry::Registry;

    #[tokio::test]
    async fn health_readiness_and_metrics_answer_and_other_paths_are_left_alone() {
        let mut registry = Registry::new();
        let observer = Observer::new(
            &Default::default(),
            &Default::default(),
            std::sync::Arc::default(),
        )
        .expect("an observer");
        registry.set_observer(observer);
        let served = Served::new(registry);
        let get = |path| answer(&Method::GET, path, &served).expect("answered");
        assert_eq!(get(HEALTH_PATH).status, 200);
        assert_eq!(get(READY_PATH).status, 200);
        let metrics = get(METRICS_PATH);
        assert_eq!(metrics.status, 200);
        assert_eq!(metrics.content_type, METRICS_TYPE);
        assert!(metrics.body.contains("piton_compile_cache_hits_total 0"));
        served.set_ready(false);
        assert_eq!(get(READY_PATH).status, 503);
        assert_eq!(get(HEALTH_PATH).status, 200, "alive while stopping");
        assert!(answer(&Method::GET, "/mcp", &served).is_none());
        assert!(answer(&Method::GET, "/healthz/", &served).is_none());
        let post = answer(&Method::POST, HEALTH_PATH, &served).expect("answered");
        assert_eq!(
            (post.status, post.allow),
            (StatusCode::METHOD_NOT_ALLOWED, Some("GET, HEAD"))
        );
        let head = answer(&Method::HEAD, READY_PATH, &served).expect("answered");
        assert_eq!(
            (head.status, head.body.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, "")
        );
    }
}
