//! A registry that asks for a login (docker-registry with an htpasswd account, HTTP
//! Basic auth): `piton publish` and `piton add` log in with the account from
//! `PITON_REGISTRY_USERNAME`/`PITON_REGISTRY_PASSWORD` (for the registry
//! `PITON_REGISTRY_HOST` names), or from Docker's config.json (`auths`, as `docker
//! login` writes it; `DOCKER_CONFIG` names its folder), and say how to log in when
//! they have no account or a wrong one. The password is never printed, not even in
//! `-vv`'s debug log.
//!
//! And where the login is not sent (small test registries that log each request): to
//! a registry that never asks for one, to a registry `PITON_REGISTRY_HOST` does not
//! name, to a token service on another host (unless named in
//! `PITON_REGISTRY_TOKEN_HOSTS`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};

use base64::Engine as _;
use piton_tests::plugins;

use super::signed::said;
use super::{
    Answer, BadServer, LAYER_TYPE, MANIFEST_TYPE, Registry, digest, files_in, manifest,
    registry_routes,
};
use crate::support::{piton, run};

const USER: &str = "alice";
const PASSWORD: &str = "pw-7f3a9c";

/// `piton -vv ARGS` with no account from the environment, and `docker` as the
/// folder of Docker's config (empty unless the test writes one).
fn piton_with(docker: &Path, args: &[&str]) -> Command {
    let mut command = piton();
    command
        .arg("-vv")
        .args(args)
        .env("DOCKER_CONFIG", docker)
        .env_remove("PITON_REGISTRY_USERNAME")
        .env_remove("PITON_REGISTRY_PASSWORD")
        .env_remove("PITON_REGISTRY_HOST")
        .env_remove("PITON_REGISTRY_TOKEN_HOSTS");
    command
}

/// [`piton_with`], logged in from the environment as alice for `host`.
fn logged_in(docker: &Path, host: &str, args: &[&str]) -> Command {
    let mut command = piton_with(docker, args);
    command
        .env("PITON_REGISTRY_USERNAME", USER)
        .env("PITON_REGISTRY_PASSWORD", PASSWORD)
        .env("PITON_REGISTRY_HOST", host);
    command
}

/// alice's login as an HTTP Basic `Authorization` value.
fn basic() -> String {
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    format!("Basic {pair}")
}

/// `out` succeeded, and nothing it wrote holds the password, plain or in base64.
fn quiet_success(out: &Output) {
    let text = said(out);
    assert!(out.status.success(), "{text}");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    assert!(!text.contains(PASSWORD), "the password was printed: {text}");
    assert!(!text.contains(&basic), "the password was printed: {text}");
}

#[test]
fn publish_and_add_log_in_from_the_environment_or_dockers_config() {
    let Some(registry) = Registry::start_with(Some((USER, PASSWORD))) else {
        return;
    };
    let docker = tempfile::tempdir().expect("temp dir");
    let tagged = format!("oci://{}/tools/word-count:1.0", registry.addr);
    let publish = ["publish", plugins::WORD_COUNT, &tagged];

    // No account: refused, saying how to log in.
    let out = run(&mut piton_with(docker.path(), &publish));
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("{} asks for a login", registry.addr)),
        "{text}"
    );
    assert!(text.contains("PITON_REGISTRY_USERNAME"), "{text}");
    assert!(text.contains("docker login"), "{text}");

    // A wrong password: refused, naming where the account came from.
    let out =
        run(logged_in(docker.path(), &registry.addr, &publish)
            .env("PITON_REGISTRY_PASSWORD", "wrong"));
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "{} refused the login of {USER} (from PITON_REGISTRY_USERNAME)",
            registry.addr
        )),
        "{text}"
    );

    // The account from the environment, for another registry: not sent.
    let out = run(&mut logged_in(docker.path(), "127.0.0.1:1", &publish));
    assert!(said(&out).contains("asks for a login"), "{}", said(&out));
    // The account from the environment.
    let out = run(&mut logged_in(docker.path(), &registry.addr, &publish));
    quiet_success(&out);

    // Pulling needs it too.
    let folder = tempfile::tempdir().expect("temp dir");
    let plugins = folder.path().to_str().expect("UTF-8").to_owned();
    let add = ["add", &tagged, "--plugins", &plugins];
    let out = run(&mut piton_with(docker.path(), &add));
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("asks for a login"), "{}", said(&out));
    assert!(files_in(folder.path()).is_empty());

    // The account from Docker's config.json, as `docker login` writes it.
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let config = serde_json::json!({"auths": {registry.addr.clone(): {"auth": auth}}});
    std::fs::write(docker.path().join("config.json"), config.to_string()).expect("config.json");
    let out = run(&mut piton_with(docker.path(), &add));
    quiet_success(&out);
    assert_eq!(files_in(folder.path()), ["piton.lock", "word-count.wasm"]);
    // And publishing, with its signature (pushed to the same repository).
    let keys = tempfile::tempdir().expect("temp dir");
    let key = keys.path().join("alice");
    assert!(run(piton().arg("keygen").arg(&key)).status.success());
    let key = keys.path().join("alice.key");
    let key = key.to_str().expect("UTF-8");
    let tagged = format!("oci://{}/tools/word-count:1.1", registry.addr);
    let out = run(&mut piton_with(
        docker.path(),
        &["publish", plugins::WORD_COUNT, &tagged, "--key", key],
    ));
    quiet_success(&out);
    assert!(
        said(&out).contains("signed:   key SHA256:"),
        "{}",
        said(&out)
    );
}

/// A registry serving word_count as `tools/x:1`, whose `/v2/` answers what `v2`
/// gives for its address, with `more` routes beside.
fn serving(v2: impl FnOnce(SocketAddr) -> Answer, more: Vec<(String, Answer)>) -> BadServer {
    let wasm = std::fs::read(plugins::WORD_COUNT).expect("word_count.wasm reads");
    let layer = digest(&wasm);
    let manifest = manifest(MANIFEST_TYPE, LAYER_TYPE, &layer, wasm.len());
    let blob = Answer::ok("application/octet-stream", wasm);
    BadServer::start(move |addr| {
        let mut routes = registry_routes("tools/x", "1", &manifest, &layer, blob);
        routes.insert("GET /v2/".to_owned(), v2(addr));
        routes.extend(more);
        routes
    })
}

/// No request `server` was sent carried an `Authorization` header.
fn no_login_sent(server: &BadServer) {
    for seen in server.seen() {
        assert_eq!(seen.header("authorization"), None, "{seen:?}");
    }
}

/// `piton add oci://ADDR/tools/x:1` into a new folder, logged in as alice for
/// `host`; gives what it said and the folder.
fn add_logged_in(
    server: &BadServer,
    host: &str,
    token_hosts: Option<&str>,
) -> (Output, tempfile::TempDir) {
    let docker = tempfile::tempdir().expect("temp dir");
    let folder = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://{}/tools/x:1", server.addr);
    let plugins = folder.path().to_str().expect("UTF-8").to_owned();
    let mut command = logged_in(
        docker.path(),
        host,
        &["add", &reference, "--plugins", &plugins],
    );
    if let Some(hosts) = token_hosts {
        command.env("PITON_REGISTRY_TOKEN_HOSTS", hosts);
    }
    (run(&mut command), folder)
}

#[test]
fn a_registry_that_never_asks_for_a_login_is_sent_none() {
    let server = serving(
        |_| Answer::ok("application/json", b"{}".to_vec()),
        Vec::new(),
    );
    let (out, folder) = add_logged_in(&server, &server.addr.to_string(), None);
    quiet_success(&out);
    assert_eq!(files_in(folder.path()), ["piton.lock", "x.wasm"]);
    assert!(server.seen().len() >= 3, "{:?}", server.seen());
    no_login_sent(&server);
}

#[test]
fn the_login_goes_only_to_the_registry_piton_registry_host_names() {
    let asks = || Answer::status(401).header("WWW-Authenticate", "Basic realm=\"test\"");
    let server = serving(|_| asks(), Vec::new());
    // Another registry's login: none is sent (this one lets anyone pull).
    let (out, _folder) = add_logged_in(&server, "127.0.0.1:1", None);
    assert!(out.status.success(), "{}", said(&out));
    no_login_sent(&server);

    // Its own: HTTP Basic, as it asks, on each request but the probes of `/v2/`.
    let server = serving(|_| asks(), Vec::new());
    let (out, _folder) = add_logged_in(&server, &server.addr.to_string(), None);
    quiet_success(&out);
    let seen = server.seen();
    assert_eq!(seen[0].route, "GET /v2/");
    for seen in &seen {
        let expected = (seen.route != "GET /v2/").then(basic);
        assert_eq!(
            seen.header("authorization"),
            expected.as_deref(),
            "{seen:?}"
        );
    }
}

#[test]
fn a_token_service_on_another_host_is_sent_no_login_unless_named() {
    let tokens = BadServer::start(|_| {
        BTreeMap::from([(
            "GET /token".to_owned(),
            Answer::ok("application/json", br#"{"token":"t0k"}"#.to_vec()),
        )])
    });
    // `localhost` is another host than the registry's 127.0.0.1.
    let realm = format!("http://localhost:{}/token", tokens.addr.port());
    let challenge = format!("Bearer realm=\"{realm}\",service=\"test\"");
    let server = serving(
        |_| Answer::status(401).header("WWW-Authenticate", &challenge),
        Vec::new(),
    );
    let (out, folder) = add_logged_in(&server, &server.addr.to_string(), None);
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&realm), "{text}");
    assert!(text.contains("PITON_REGISTRY_TOKEN_HOSTS"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
    assert!(files_in(folder.path()).is_empty());
    no_login_sent(&tokens);
    no_login_sent(&server);

    // Named: the token service gets the login, the registry the token.
    let named = format!("localhost:{}", tokens.addr.port());
    let (out, _folder) = add_logged_in(&server, &server.addr.to_string(), Some(&named));
    quiet_success(&out);
    let asked = tokens.seen();
    assert!(!asked.is_empty());
    for asked in asked {
        assert!(
            asked.route.contains("scope=repository%3Atools%2Fx%3Apull"),
            "{asked:?}"
        );
        assert_eq!(asked.header("authorization"), Some(basic().as_str()));
    }
    let pulled: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.route.contains(" /v2/tools/"))
        .collect();
    assert!(!pulled.is_empty());
    for seen in pulled {
        assert_eq!(seen.header("authorization"), Some("Bearer t0k"), "{seen:?}");
    }
}

#[test]
fn a_token_service_on_the_registrys_host_gets_the_login() {
    let server = serving(
        |addr| {
            let challenge = format!("Bearer realm=\"http://{addr}/token\",service=\"test\"");
            Answer::status(401).header("WWW-Authenticate", &challenge)
        },
        vec![(
            "GET /token".to_owned(),
            Answer::ok("application/json", br#"{"access_token":"t0k"}"#.to_vec()),
        )],
    );
    let (out, _folder) = add_logged_in(&server, &server.addr.to_string(), None);
    quiet_success(&out);
    let seen = server.seen();
    let token = seen
        .iter()
        .find(|s| s.route.starts_with("GET /token?"))
        .expect("a token was asked for");
    assert_eq!(token.header("authorization"), Some(basic().as_str()));
    let pulls: Vec<_> = seen
        .iter()
        .filter(|s| s.route.contains(" /v2/tools/"))
        .collect();
    assert!(!pulls.is_empty(), "{seen:?}");
    for pull in pulls {
        assert_eq!(pull.header("authorization"), Some("Bearer t0k"), "{pull:?}");
    }
}
