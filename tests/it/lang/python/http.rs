//! HTTP from Python tools: the seed page's `fetch_url` example with its
//! `exception_handler`, written with `piton.http` in `tests/python/seed_tools.py`,
//! against a loopback test server granted in piton.toml (`network = ["127.0.0.1:PORT"]`):
//! a granted fetch reads the text; a 404 and a denied host are the handler's error
//! results (piton.http raises `HTTPStatusError` and `NetworkDenied`, both
//! `http.HTTPError`s, which is what the handler's hint names), and so is a body over
//! `max_bytes`; a read-only call cannot POST, not even to a granted host.

use serde_json::json;

use super::{load, seed_folder};
use crate::net::{Server, ok};
use crate::support::*;

/// `tool` may reach the test server on `port`.
fn network(tool: &str, port: u16) -> String {
    format!("[tools.{tool}]\nnetwork = [\"127.0.0.1:{port}\"]\n")
}

/// Answers `/missing` with 404, `/big` with 11 MiB (its length declared) and
/// `/stream` with 11 MiB (read to the end of the connection), and every other path
/// with 200 and `body`.
fn server(body: &'static str) -> Server {
    Server::start(Box::new(move |path| match path {
        "/missing" => {
            "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\ngone"
                .to_owned()
        }
        "/big" => ok(&"x".repeat(11 << 20)),
        "/stream" => format!(
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}",
            "x".repeat(11 << 20)
        ),
        _ => ok(body),
    }))
}

#[tokio::test]
async fn fetch_url_reads_a_granted_server_and_a_404_is_the_handlers_error_result() {
    let server = server("hello from the server");
    let folder = seed_folder(&network("fetch_url", server.port));
    let registry = load(folder.path()).await.registry;
    assert_eq!(
        call_ok(&registry, "fetch_url", json!({"url": server.url("/page")})).await,
        ["hello from the server"]
    );
    let error = call_error(
        &registry,
        "fetch_url",
        json!({"url": server.url("/missing")}),
    )
    .await;
    assert_eq!(
        error,
        piton_host::ToolError::Failed(format!(
            "request failed: HTTP 404 Not Found from GET {}",
            server.url("/missing")
        ))
    );
    let paths: Vec<String> = server
        .requests(2)
        .iter()
        .map(|seen| seen.path().to_owned())
        .collect();
    assert_eq!(paths, ["/page", "/missing"]);
    // Not a URL the page's handler expects: still an HTTPError, so an error result.
    let error = call_error(&registry, "fetch_url", json!({"url": "file:///etc/passwd"})).await;
    assert!(
        matches!(&error, piton_host::ToolError::Failed(m) if m.contains("only http:// and https://")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_response_larger_than_max_bytes_is_an_http_error_not_a_trap() {
    let server = server("small");
    let folder = seed_folder(&network("fetch_url", server.port));
    let registry = load(folder.path()).await.registry;
    for path in ["/big", "/stream"] {
        let error = call_error(&registry, "fetch_url", json!({"url": server.url(path)})).await;
        assert_eq!(
            error,
            piton_host::ToolError::Failed(format!(
                "request failed: GET {}: the response body is larger than max_bytes (10485760 bytes)",
                server.url(path)
            ))
        );
    }
}

#[tokio::test]
async fn a_host_not_granted_is_denied_and_the_handler_makes_it_an_error_result() {
    let granted = server("granted");
    let other = server("never");
    let folder = seed_folder(&network("fetch_url", granted.port));
    let registry = load(folder.path()).await.registry;
    let error = call_error(&registry, "fetch_url", json!({"url": other.url("/")})).await;
    let piton_host::ToolError::Failed(message) = &error else {
        panic!("{error:?}");
    };
    assert!(
        message.starts_with("request failed: the sandbox denied GET http://127.0.0.1:"),
        "{message}"
    );
    assert!(message.contains("no network grant"), "{message}");
    assert!(other.untouched(), "{:?}", other.requests(0));
    // post_text is in the same component but was granted nothing.
    let error = call_error(
        &registry,
        "post_text",
        json!({"url": granted.url("/"), "text": "x"}),
    )
    .await;
    assert!(
        matches!(&error, piton_host::ToolError::Failed(m) if m.contains("the sandbox denied POST")),
        "{error:?}"
    );
    assert!(granted.untouched(), "{:?}", granted.requests(0));
}

#[tokio::test]
async fn a_read_only_call_cannot_post_even_to_a_granted_host() {
    let server = server("posted");
    let config = format!(
        "{}{}",
        network("post_text", server.port),
        network("post_text_read_only", server.port)
    );
    let folder = seed_folder(&config);
    let registry = load(folder.path()).await.registry;
    let args = json!({"url": server.url("/notes"), "text": "a note"});
    let error = call_error(&registry, "post_text_read_only", args.clone()).await;
    assert!(
        matches!(&error, piton_host::ToolError::Failed(m) if m.contains("the sandbox denied POST")),
        "{error:?}"
    );
    assert!(server.untouched(), "{:?}", server.requests(0));
    // The same function, not declared read-only, posts.
    assert_eq!(call_ok(&registry, "post_text", args).await, ["200 posted"]);
    let seen = server.requests(1);
    assert!(
        seen[0].head.starts_with("POST /notes "),
        "{:?}",
        seen[0].head
    );
    assert_eq!(seen[0].header("content-type"), ["text/plain"]);
}

/// A file that imports `piton.http` imports wasi:http at the version the host links
/// (`piton check` accepts it and names the import); one that does not has no HTTP.
#[test]
fn only_a_file_that_imports_piton_http_imports_wasi_http() {
    let check = |wasm: std::path::PathBuf| {
        let out = piton()
            .arg("check")
            .arg(&wasm)
            .output()
            .expect("piton runs");
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{report}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        report
    };
    let seed = check(super::built(super::SEED));
    assert!(
        seed.contains("DENIED   wasi:http/outgoing-handler@0.2.12: no HTTP unless"),
        "{seed}"
    );
    let notes = check(super::built("plugins/notes-py"));
    assert!(notes.contains("a toolbox-plugin with 4 tools"), "{notes}");
    assert!(!notes.contains("wasi:http"), "{notes}");
}
