//! A registry that asks for a login (docker-registry with an htpasswd account, HTTP
//! Basic auth): `piton publish` and `piton add` log in with the account from
//! `PITON_REGISTRY_USERNAME`/`PITON_REGISTRY_PASSWORD`, or from Docker's config.json
//! (`auths`, as `docker login` writes it; `DOCKER_CONFIG` names its folder), and
//! say how to log in when they have no account or a wrong one. The password is
//! never printed, not even in `-vv`'s debug log.

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine as _;
use piton_tests::plugins;

use super::signed::said;
use super::{Registry, files_in};
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
        .env_remove("PITON_REGISTRY_PASSWORD");
    command
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
    let out = run(piton_with(docker.path(), &publish)
        .env("PITON_REGISTRY_USERNAME", USER)
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

    // The account from the environment.
    let out = run(piton_with(docker.path(), &publish)
        .env("PITON_REGISTRY_USERNAME", USER)
        .env("PITON_REGISTRY_PASSWORD", PASSWORD));
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
