//! The approval hook on the registry: `AllowByReadOnly` allows what the hints say is
//! read-only (trusting an upstream server's declared hints only when told) and asks
//! or denies the rest, before the tool runs.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use piton_host::{AllowByReadOnly, ApprovalRequest, Decision, Registry, ToolError};
use piton_tests::plugins;
use serde_json::json;

use crate::support::{call_error, call_ok, load};
use crate::upstream::{Seen, test_server};

/// A registry with word_count (read-only, enforced), files (read-only only for its
/// read operations) and the test server (`add` declares read-only).
async fn approval_registry(approver: AllowByReadOnly) -> (Registry, Arc<Seen>) {
    let (server, seen) = test_server("up");
    let mut registry = Registry::new();
    for path in [plugins::WORD_COUNT, plugins::FILES] {
        registry.add(load(path).await).expect("added");
    }
    registry.add_group(server).expect("added");
    registry.set_approver(approver);
    (registry, seen)
}

#[tokio::test]
async fn allow_by_read_only_trusts_enforced_hints_and_mcp_only_when_told() {
    let (registry, seen) = approval_registry(AllowByReadOnly::new(false)).await;
    assert_eq!(
        call_ok(&registry, "word_count", json!({"text": "a b"})).await,
        ["2"]
    );
    // files: hints-for makes a listing read-only (allowed; it fails for want of a
    // mount, which shows it ran) and a delete not (denied before it runs).
    let listing = registry
        .call("files", json!({"op": "list", "path": "/data"}))
        .await
        .expect("runs");
    assert!(
        !matches!(&listing, Err(ToolError::Failed(m)) if m.contains("not approved")),
        "{listing:?}"
    );
    let denied = call_error(
        &registry,
        "files",
        json!({"op": "delete", "path": "/data/x"}),
    )
    .await;
    assert!(denied.to_string().contains("not approved"), "{denied}");
    // An MCP tool's read-only is only declared: denied without trust_mcp.
    let denied = call_error(&registry, "up__add", json!({"a": 1, "b": 2})).await;
    assert!(denied.to_string().contains("not trusted"), "{denied}");
    assert_eq!(seen.calls.load(Ordering::SeqCst), 0);

    let (trusting, seen) = approval_registry(AllowByReadOnly::new(true)).await;
    assert_eq!(
        call_ok(&trusting, "up__add", json!({"a": 1, "b": 2})).await,
        ["3"]
    );
    // Declared not read-only: still denied.
    let denied = call_error(&trusting, "up__shout", json!({})).await;
    assert!(denied.to_string().contains("not read-only"), "{denied}");
    assert_eq!(seen.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn allow_by_read_only_asks_about_the_rest() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let ask = move |request: &ApprovalRequest<'_>| {
        log.lock()
            .expect("lock")
            .push(request.tool.spec().name.clone());
        if request.args.contains_key("ok") {
            Decision::Allow
        } else {
            Decision::Deny("the user said no".into())
        }
    };
    let (registry, _seen) = approval_registry(AllowByReadOnly::new(false).or_ask(ask)).await;
    assert_eq!(
        call_ok(&registry, "word_count", json!({"text": "a"})).await,
        ["1"]
    );
    assert_eq!(
        call_ok(&registry, "up__shout", json!({"ok": true})).await,
        ["HEY\nYOU"]
    );
    let denied = call_error(&registry, "up__shout", json!({})).await;
    assert_eq!(
        denied,
        ToolError::Failed("the call was not approved: the user said no".into())
    );
    assert_eq!(
        *asked.lock().expect("lock"),
        ["up__shout", "up__shout"],
        "read-only calls are not asked"
    );
}
