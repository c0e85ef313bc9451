//! Network grants for outgoing HTTP (wasi:http): requests reach granted authorities
//! only, redirects are checked again, TLS goes to the checked address, secret headers
//! are added by the host, and a read-only call sends safe methods only. The loopback
//! test server and the grant helpers are net.rs's.

use piton_host::Limits;
use piton_host::grants::{NetGrant, Secret};
use piton_tests::{guests, plugins};
use serde_json::{Value, json};

use crate::net::{Server, failure, granted, ip, name, net_call, ok, redirect};
use crate::support::{call_ok, registry_of};

#[tokio::test]
async fn fetch_url_reaches_a_granted_address_and_no_other_port() {
    let granted_server = Server::start(Box::new(|path| match path {
        "/hop" => redirect("/"),
        _ => ok("hello from the granted server"),
    }));
    let other = Server::ok("hello from another port");
    let registry = granted(&[plugins::FETCH_URL], vec![ip(granted_server.port)]).await;

    let text = call_ok(
        &registry,
        "fetch_url",
        json!({"url": granted_server.url("/")}),
    )
    .await;
    assert!(text[0].starts_with("HTTP 200 "), "{text:?}");
    assert!(
        text[0].ends_with("hello from the granted server"),
        "{text:?}"
    );
    // A redirect within the grant is followed.
    let text = call_ok(
        &registry,
        "fetch_url",
        json!({"url": granted_server.url("/hop")}),
    )
    .await;
    assert!(
        text[0].ends_with("hello from the granted server"),
        "{text:?}"
    );
    let paths: Vec<_> = granted_server
        .requests(3)
        .iter()
        .map(|s| s.path().to_owned())
        .collect();
    assert_eq!(paths, ["/", "/hop", "/"]);

    let message = failure(&registry, "fetch_url", json!({"url": other.url("/")})).await;
    assert!(message.contains(&other.url("/")), "{message}");
    assert!(message.contains("HttpRequestDenied"), "{message}");
    assert!(other.untouched(), "{:?}", other.requests(0));
}

#[tokio::test]
async fn https_goes_through_tls_to_the_checked_address() {
    // No certificate a client would trust can be made for loopback here, so the
    // server answers in plain text; what counts is that it was sent a TLS hello.
    let server = Server::ok("not TLS");
    let registry = granted(&[plugins::FETCH_URL], vec![ip(server.port)]).await;
    let url = format!("https://127.0.0.1:{}/", server.port);
    let message = failure(&registry, "fetch_url", json!({ "url": url })).await;
    assert!(message.contains("Tls"), "{message}");
    let seen = server.requests(1);
    assert_eq!(seen.len(), 1);
    assert!(seen[0].head.starts_with('\u{16}'), "{:?}", seen[0].head);
}

#[tokio::test]
async fn a_redirect_to_an_authority_not_granted_is_refused() {
    let elsewhere = Server::ok("the guest must not get here");
    let target = elsewhere.url("/");
    let granted_server = Server::start(Box::new(move |_| redirect(&target)));
    let registry = granted(&[plugins::FETCH_URL], vec![ip(granted_server.port)]).await;

    let message = failure(
        &registry,
        "fetch_url",
        json!({"url": granted_server.url("/away")}),
    )
    .await;
    assert!(message.contains(&elsewhere.url("/")), "{message}");
    assert!(message.contains("HttpRequestDenied"), "{message}");
    assert_eq!(granted_server.requests(1).len(), 1);
    assert!(elsewhere.untouched(), "{:?}", elsewhere.requests(0));
}

#[tokio::test]
async fn a_name_reaches_its_address_when_that_is_granted_literally() {
    let server = Server::ok("hello by name");
    let grants = vec![name("localhost", server.port), ip(server.port)];
    let registry = granted(&[plugins::FETCH_URL], grants).await;
    let url = format!("http://LOCALHOST:{}/", server.port);
    let text = call_ok(&registry, "fetch_url", json!({ "url": url })).await;
    assert!(text[0].ends_with("hello by name"), "{text:?}");
    let seen = server.requests(1);
    assert_eq!(seen.len(), 1);
    // The name as granted, not as the guest wrote it.
    assert_eq!(
        seen[0].header("host"),
        [format!("localhost:{}", server.port)]
    );
}

#[tokio::test]
async fn the_secret_header_reaches_the_server_but_never_the_guest() {
    let secret = format!("Bearer s3cret-{}", std::process::id());
    let with_secret = Server::ok("fine");
    let without = Server::ok("fine");
    let grants = vec![
        NetGrant {
            headers: vec![("Authorization".into(), Secret::new(secret.clone()))],
            ..ip(with_secret.port)
        },
        ip(without.port),
    ];
    let tools = [guests::HOSTILE_NET_HEADERS, guests::HOSTILE_NET_ENV];
    let registry = granted(&tools, grants).await;

    let authority = format!("127.0.0.1:{}", with_secret.port);
    let seen_by_guest = call_ok(&registry, "net_headers", json!({ "authority": authority })).await;
    let report: Value = serde_json::from_str(&seen_by_guest[0]).unwrap();
    assert_eq!(report["status"], 200, "{report}");
    let guest_headers = json!([["authorization", "guest-value"], ["x-guest", "1"]]);
    assert_eq!(report["request_headers"], guest_headers, "{report}");
    assert_eq!(report["kept_headers"], guest_headers, "{report}");
    assert_eq!(report["env"], json!([]), "{report}");
    assert!(!seen_by_guest[0].contains("s3cret"), "{report}");
    let seen = with_secret.requests(1);
    assert_eq!(seen.len(), 1);
    // The host's value replaced the guest's.
    assert_eq!(seen[0].header("authorization"), [secret]);
    assert_eq!(seen[0].header("x-guest"), ["1"]);

    // Another grant's requests do not carry it.
    let authority = format!("127.0.0.1:{}", without.port);
    call_ok(&registry, "net_headers", json!({ "authority": authority })).await;
    assert_eq!(
        without.requests(1)[0].header("authorization"),
        ["guest-value"]
    );

    let env = call_ok(&registry, "net_env", json!({})).await;
    assert!(!env[0].contains("s3cret"), "{env:?}");
}

#[tokio::test]
async fn the_guest_never_sees_pitons_environment() {
    let server = Server::ok("fine");
    let registry = granted(&[guests::HOSTILE_NET_ENV], vec![ip(server.port)]).await;
    let text = call_ok(&registry, "net_env", json!({})).await;
    let seen: Value = serde_json::from_str(&text[0]).unwrap();
    assert_eq!(seen, json!({"env": [], "args": []}));
}

#[tokio::test]
async fn http_without_grants_is_refused_but_the_tool_loads() {
    let server = Server::ok("hello");
    let registry = registry_of(&[plugins::FETCH_URL], Limits::default()).await;
    let message = failure(&registry, "fetch_url", json!({"url": server.url("/")})).await;
    assert!(message.contains("HttpRequestDenied"), "{message}");
    assert!(server.untouched(), "{:?}", server.requests(0));
}

#[tokio::test]
async fn a_read_only_call_sends_safe_methods_only() {
    let server = Server::ok("fine");
    let registry = granted(&[guests::HOSTILE_NET_CALL], vec![ip(server.port)]).await;
    let url = server.url("/thing");

    for method in ["POST", "DELETE", "PUT", "PATCH", "PROPPATCH"] {
        let message = failure(&registry, "net_call", net_call(method, &url, true)).await;
        assert!(message.contains("HttpRequestDenied"), "{method}: {message}");
    }
    assert!(server.untouched(), "{:?}", server.requests(0));

    for method in ["GET", "HEAD", "OPTIONS"] {
        let text = call_ok(&registry, "net_call", net_call(method, &url, true)).await;
        assert!(text[0].starts_with("HTTP 200"), "{method}: {text:?}");
    }
    // The same tool, in a call that is not read-only, may write.
    for method in ["POST", "DELETE"] {
        let text = call_ok(&registry, "net_call", net_call(method, &url, false)).await;
        assert!(text[0].starts_with("HTTP 200"), "{method}: {text:?}");
    }
    let methods: Vec<String> = server
        .requests(5)
        .iter()
        .map(|s| s.head.split(' ').next().unwrap_or("").to_owned())
        .collect();
    assert_eq!(methods, ["GET", "HEAD", "OPTIONS", "POST", "DELETE"]);
}

#[tokio::test]
async fn trace_track_and_connect_are_never_sent() {
    let server = Server::ok("echo");
    let grants = vec![NetGrant {
        headers: vec![("Authorization".into(), Secret::new("Bearer t".into()))],
        ..ip(server.port)
    }];
    let registry = granted(&[guests::HOSTILE_NET_CALL], grants).await;
    let url = server.url("/");
    for method in ["TRACE", "TRACK", "CONNECT", "trace", "Track"] {
        let message = failure(&registry, "net_call", net_call(method, &url, false)).await;
        assert!(message.contains("HttpRequestDenied"), "{method}: {message}");
    }
    assert!(server.untouched(), "{:?}", server.requests(0));
}

#[tokio::test]
async fn the_host_header_is_the_checked_authority() {
    let server = Server::ok("fine");
    let registry = granted(&[guests::HOSTILE_NET_CALL], vec![ip(server.port)]).await;
    let url = format!("http://user:pw@127.0.0.1:{}/", server.port);
    let text = call_ok(&registry, "net_call", net_call("GET", &url, true)).await;
    assert!(text[0].starts_with("HTTP 200"), "{text:?}");
    let seen = server.requests(1);
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("host"),
        [format!("127.0.0.1:{}", server.port)]
    );
}
