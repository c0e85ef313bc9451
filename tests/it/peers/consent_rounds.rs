//! Consent's two rounds over MCP 2026-07-28, by hand: a retry whose state or call was
//! tampered with is refused (and audited and counted as `tampered`); a grant changed
//! between the rounds voids the approval; replicas that share the approval key take
//! each other's approvals, behind haproxy too, and replicas with other keys do not.

use serde_json::{Value, json};

use super::consent::{
    KEY, OTHER_KEY, Setup, approvals, client, create, digest, metrics, refused_with,
};
use super::{HttpServer, Target, call_result, sdk_client_with};

/// One 2026-07-28 round by hand: the result of `tools/call` with `state` and
/// `answer` (`-` for none).
fn round(url: &str, call: &(&str, Value), state: &str, answer: &str) -> Value {
    let args = call.1.to_string();
    let report = sdk_client_with(
        Target::Url(url),
        "2026-07-28",
        &[],
        &["--round", call.0, &args, state, answer],
    );
    let round = &report["rounds"][0];
    round
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("the round ended in a JSON-RPC error: {report:#}"))
}

/// The `requestState` of an `input_required` answer.
fn state_of(result: &Value) -> String {
    assert_eq!(result["resultType"], "input_required", "{result:#}");
    assert!(
        result["inputRequests"]["piton_approval"]["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Allow `files` to run?")),
        "{result:#}"
    );
    result["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned()
}

#[test]
fn tampered_retries_are_refused_and_replicas_with_the_key_accept_each_other() {
    let setup = Setup::new("");
    let a = setup.http(KEY);
    let b = setup.http(KEY);
    let other = setup.http(OTHER_KEY);
    let call = create("approved");
    let state = state_of(&round(&a.url, &call, "-", "-"));
    // Another call with this approval: other arguments, another answer key's state.
    refused_with(
        &round(&a.url, &create("sneaked"), &state, "allow_once"),
        "other arguments",
    );
    assert!(!setup.data("sneaked").exists());
    let mut forged = state.clone();
    forged.insert(
        3,
        if forged.as_bytes()[3] == b'A' {
            'B'
        } else {
            'A'
        },
    );
    refused_with(&round(&a.url, &call, &forged, "allow_once"), "altered");
    refused_with(
        &round(&other.url, &call, &state, "allow_once"),
        "made with another approval key",
    );
    // Another tool with this approval: refused before anything of it runs.
    let other_tool = (
        "fs_write",
        json!({"mode": "write", "op": "write", "path": "/data/approved", "content": "x"}),
    );
    refused_with(
        &round(&a.url, &other_tool, &state, "allow_once"),
        "another tool",
    );
    // No answer at all is no approval.
    refused_with(&round(&a.url, &call, &state, "-"), "carried no answer");
    assert!(!setup.data("approved").exists());
    // Asked by one replica, allowed on another with the same key: it runs, once.
    let state = state_of(&round(&a.url, &call, "-", "-"));
    let done = round(&b.url, &call, &state, "allow_once");
    assert_eq!(done["isError"], false, "{done:#}");
    assert!(setup.data("approved").exists());
    refused_with(&round(&b.url, &call, &state, "allow_once"), "already used");
    // Each refusal is audited and counted as tampered, on the replica that refused it.
    assert_eq!(setup.consents(&create("sneaked"), 1), ["tampered"]);
    assert_eq!(setup.consents(&other_tool, 1), ["tampered"]);
    let mut approved = setup.consents(&call, 7);
    approved.sort();
    assert_eq!(
        approved,
        [
            "allowed_once",
            "asked",
            "asked",
            "tampered",
            "tampered",
            "tampered",
            "tampered"
        ]
    );
    for (server, tool, decision, count) in [
        (&a, "files", "asked", 2.0),
        (&a, "files", "tampered", 3.0),
        (&a, "fs_write", "tampered", 1.0),
        (&a, "files", "allowed_once", 0.0),
        (&b, "files", "allowed_once", 1.0),
        (&b, "files", "tampered", 1.0),
        (&other, "files", "tampered", 1.0),
    ] {
        let metrics = metrics(&server.url);
        assert_eq!(
            approvals(&metrics, tool, decision),
            count,
            "{tool} {decision}\n{metrics}"
        );
    }
    // Expired: a question open for 1 s, answered after 3.
    let brief = Setup::new("[approve]\nanswer_within = \"1s\"\n");
    let server = brief.http(KEY);
    let late = create("late");
    let state = state_of(&round(&server.url, &late, "-", "-"));
    std::thread::sleep(std::time::Duration::from_secs(3));
    refused_with(&round(&server.url, &late, &state, "allow_once"), "expired");
    assert!(!brief.data("late").exists());
    assert_eq!(brief.consents(&late, 2), ["asked", "tampered"]);
}

#[test]
fn a_grant_changed_between_the_rounds_voids_the_approval() {
    let setup = Setup::new("");
    let server = setup.http(KEY);
    let call = create("regranted");
    let state = state_of(&round(&server.url, &call, "-", "-"));
    // piton.toml changes: the tool now also gets an environment variable.
    setup.write_toml("env = { LANG = \"C\" }\n");
    // Reloaded once a new question shows the new grant.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let probe = round(&server.url, &create("probe"), "-", "-");
        let message = probe["inputRequests"]["piton_approval"]["params"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if message.contains("environment variable LANG") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "piton.toml was not reloaded in 60 s: {probe:#}\n{}",
            server.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let result = round(&server.url, &call, &state, "allow_once");
    refused_with(&result, "other grants");
    assert!(!setup.data("regranted").exists());
}

/// The audit records (JSON lines) a server wrote to its stderr.
fn audit_records(server: &HttpServer) -> Vec<Value> {
    server
        .log()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record.get("consent").is_some())
        .collect()
}

/// The replicas' audit records of the call whose arguments' SHA-256 is `digest`: for
/// each replica, the consent decisions it recorded.
fn decisions(replicas: &[&HttpServer], digest: &str) -> Vec<Vec<String>> {
    replicas
        .iter()
        .map(|server| {
            audit_records(server)
                .iter()
                .filter(|r| r["arguments_sha256"] == digest)
                .filter_map(|r| r["consent"].as_str().map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn behind_haproxy_replicas_sharing_the_key_take_each_others_approvals() {
    let Some(haproxy) = crate::replicas::haproxy() else {
        return;
    };
    for (keys, shared) in [([KEY, KEY], true), ([KEY, OTHER_KEY], false)] {
        let setup = Setup::made("[audit]\nto = \"stderr\"\n", false);
        let lb_port = crate::replicas::free_port();
        let allow = format!("127.0.0.1:{lb_port}");
        let replicas = keys.map(|key| setup.http_with(key, &["--allow-host", &allow]));
        let addrs: Vec<std::net::SocketAddr> = replicas
            .iter()
            .map(|r| {
                let hostport = r.url.trim_start_matches("http://").trim_end_matches("/mcp");
                hostport.parse().expect("a replica's address")
            })
            .collect();
        let _lb = crate::replicas::Haproxy::start(haproxy, lb_port, &addrs, false);
        let url = format!("http://127.0.0.1:{lb_port}/mcp");
        let names = ["one", "two", "three", "four"].map(|n| format!("{shared}-{n}"));
        let calls = names.each_ref().map(|n| create(n));
        let answers = ["allow_once"; 4];
        let report = client(Target::Url(&url), "2026-07-28", &calls, Some(&answers));
        let at = format!("{report:#}");
        // Round robin sends a call's two rounds to different replicas.
        let mut crossed = 0;
        for (index, (name, call)) in names.iter().zip(&calls).enumerate() {
            let digest = digest(&call.1);
            let by_replica = decisions(&[&replicas[0], &replicas[1]], &digest);
            let asked_on = by_replica
                .iter()
                .position(|d| d.iter().any(|d| d == "asked"));
            let decided_on = by_replica
                .iter()
                .position(|d| d.iter().any(|d| d != "asked"));
            let result = call_result(&report, index);
            if asked_on.is_some() && decided_on.is_some() && asked_on != decided_on {
                crossed += 1;
                if shared {
                    assert_eq!(result["isError"], false, "{name}: {at}");
                    assert!(setup.data(name).exists(), "{name}");
                } else {
                    refused_with(result, "made with another approval key");
                    assert!(!setup.data(name).exists(), "{name}");
                }
            }
        }
        assert!(
            crossed > 0,
            "no call was asked on one replica and retried on the other: {at}\n{}\n{}",
            replicas[0].log(),
            replicas[1].log()
        );
    }
}

#[test]
fn replicas_reading_one_key_file_take_each_others_approvals_and_a_missing_one_stops_serve() {
    let setup = Setup::new("[approve]\nkey_file = \"approval.key\"\n");
    std::fs::write(setup.plugins().join("approval.key"), format!("{KEY}\n")).expect("key file");
    // The environment's keys differ: only the key file makes the two agree.
    let a = setup.http(KEY);
    let b = setup.http(OTHER_KEY);
    let call = create("keyed");
    let state = state_of(&round(&a.url, &call, "-", "-"));
    let done = round(&b.url, &call, &state, "allow_once");
    assert_eq!(done["isError"], false, "{done:#}");
    assert!(setup.data("keyed").exists());

    let missing = Setup::new("[approve]\nkey_file = \"missing.key\"\n");
    let out = crate::support::run(
        crate::support::piton()
            .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
            .arg(missing.plugins()),
    );
    assert!(!out.status.success(), "served without its key");
    let text = crate::support::stderr(&out);
    let path = missing.plugins().join("missing.key");
    for said in [
        "approve.key_file: cannot read".to_owned(),
        format!("head -c 32 /dev/urandom | base64 > {}", path.display()),
    ] {
        assert!(text.contains(&said), "{said:?} not in {text}");
    }
}
