//! Logging in to a registry: the account for a pull or a push comes from the
//! environment (`PITON_REGISTRY_USERNAME` and `PITON_REGISTRY_PASSWORD`, for every
//! registry a command talks to), else from Docker's `config.json` (the `auths` entry
//! `docker login HOST` writes for that registry; `$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`), else none: anonymous. Credential helpers (`credsStore`,
//! `credHelpers`) are programs piton does not run; a registry that asks for a login
//! then says so.
//!
//! A password is never printed or logged: [`Login`]'s `Debug` leaves it out, and the
//! header carrying it is marked sensitive.

use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use reqwest::header::HeaderValue;
use serde::Deserialize;

use super::fetched::FetchProblem;

/// The environment variables of a login.
pub const USERNAME_VAR: &str = "PITON_REGISTRY_USERNAME";
/// See [`USERNAME_VAR`].
pub const PASSWORD_VAR: &str = "PITON_REGISTRY_PASSWORD";

/// The most bytes of Docker's config.json read.
const MAX_CONFIG: u64 = 1 << 20;

/// An account for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    /// The user name.
    pub user: String,
    password: String,
    /// Where it came from, for messages: the variable or the file.
    pub from: String,
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Login({} from {}, password hidden)",
            self.user, self.from
        )
    }
}

impl Login {
    /// `user (from WHERE)`, for messages.
    pub fn who(&self) -> String {
        format!("{} (from {})", self.user, self.from)
    }

    /// As `oci_client` takes it, for its token handshake and pushes.
    pub(crate) fn auth(&self) -> RegistryAuth {
        RegistryAuth::Basic(self.user.clone(), self.password.clone())
    }

    /// The HTTP Basic `Authorization` header, marked sensitive (never logged).
    pub(crate) fn basic_header(&self) -> Result<HeaderValue, FetchProblem> {
        let pair = format!("{}:{}", self.user, self.password);
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).map_err(|_| {
            FetchProblem::Credentials(format!("the login of {} is not a header value", self.who()))
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

/// What was found for a registry: the account, if any, and the credential helper
/// Docker keeps its login in, if it does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The account to log in with.
    pub login: Option<Login>,
    /// A credential helper Docker's config names for the registry, which piton does
    /// not run.
    pub helper: Option<String>,
}

/// The account for `registry` (`HOST[:PORT]`), from this process's environment.
pub fn login_for(registry: &str) -> Result<Found, FetchProblem> {
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    let docker = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".docker")))
        .map(|folder| folder.join("config.json"));
    find(
        registry,
        var(USERNAME_VAR),
        var(PASSWORD_VAR),
        docker.as_deref(),
    )
}

/// [`login_for`] with the environment given: the two variables, and where Docker's
/// config.json is.
fn find(
    registry: &str,
    user: Option<String>,
    password: Option<String>,
    docker: Option<&Path>,
) -> Result<Found, FetchProblem> {
    match (user, password) {
        (Some(user), Some(password)) => {
            return Ok(Found {
                login: Some(Login {
                    user,
                    password,
                    from: USERNAME_VAR.to_owned(),
                }),
                helper: None,
            });
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err(FetchProblem::Credentials(format!(
                "set both {USERNAME_VAR} and {PASSWORD_VAR}, or neither"
            )));
        }
        (None, None) => {}
    }
    match docker {
        Some(file) => from_docker(registry, file),
        None => Ok(Found::default()),
    }
}

/// Docker's config.json, as far as piton reads it.
#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, DockerAuth>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// The account Docker's config.json `file` has for `registry`.
fn from_docker(registry: &str, file: &Path) -> Result<Found, FetchProblem> {
    let broken = |why: String| {
        FetchProblem::Credentials(format!(
            "Docker's config {}: {why}; fix it (`docker login` writes it), or name another \
             folder with DOCKER_CONFIG",
            file.display()
        ))
    };
    let mut text = Vec::new();
    match std::fs::File::open(file) {
        Ok(opened) => {
            opened
                .take(MAX_CONFIG + 1)
                .read_to_end(&mut text)
                .map_err(|e| broken(e.to_string()))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::default()),
        Err(e) => return Err(broken(e.to_string())),
    }
    if text.len() as u64 > MAX_CONFIG {
        return Err(broken(format!("it is over {MAX_CONFIG} bytes")));
    }
    let config: DockerConfig =
        serde_json::from_slice(&text).map_err(|e| broken(format!("it does not parse: {e}")))?;
    let wanted = server_of(registry);
    let entry = config
        .auths
        .iter()
        .find(|(key, _)| server_of(key) == wanted);
    let helper = config
        .cred_helpers
        .iter()
        .find(|(key, _)| server_of(key) == wanted)
        .map(|(_, helper)| helper.clone())
        .or(config.creds_store);
    let Some((key, auth)) = entry else {
        return Ok(Found {
            login: None,
            helper,
        });
    };
    let from = file.display().to_string();
    let pair = match (&auth.auth, &auth.username, &auth.password) {
        (Some(encoded), _, _) if !encoded.is_empty() => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| {
                    broken(format!("auths.{key:?}.auth is not base64 of USER:PASSWORD"))
                })?;
            let (user, password) = decoded.split_once(':').ok_or_else(|| {
                broken(format!("auths.{key:?}.auth is not base64 of USER:PASSWORD"))
            })?;
            Some((user.to_owned(), password.to_owned()))
        }
        (_, Some(user), Some(password)) => Some((user.clone(), password.clone())),
        // An entry without an account: Docker keeps it in its helper.
        _ => None,
    };
    Ok(Found {
        login: pair.map(|(user, password)| Login {
            user,
            password,
            from,
        }),
        helper,
    })
}

/// The registry a config.json key or a `HOST[:PORT]` names, as compared: without a
/// scheme or path, lower case; Docker Hub's names as one.
fn server_of(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match host.as_str() {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "docker.io".to_owned(),
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docker(json: &serde_json::Value) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("config.json");
        std::fs::write(&file, json.to_string()).expect("write");
        (dir, file)
    }

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    #[test]
    fn the_environment_wins_and_needs_both_variables() {
        let found = find("r.example", Some("u".into()), Some("p".into()), None).expect("found");
        let login = found.login.expect("a login");
        assert_eq!(login.who(), "u (from PITON_REGISTRY_USERNAME)");
        let error = find("r.example", Some("u".into()), None, None).expect_err("half");
        assert!(error.to_string().contains("set both"), "{error}");
    }

    #[test]
    fn dockers_config_gives_the_entry_of_the_registry() {
        let (_dir, file) = docker(&serde_json::json!({
            "auths": {
                "127.0.0.1:5000": {"auth": b64("alice:s3:cret")},
                "https://index.docker.io/v1/": {"auth": b64("hub:pw")},
                "ghcr.io": {"username": "bob", "password": "x"},
                "helped.example": {},
            },
            "credHelpers": {"helped.example": "gcloud"},
        }));
        let login = |registry: &str| {
            find(registry, None, None, Some(&file))
                .expect("reads")
                .login
                .map(|l| (l.user, l.password))
        };
        assert_eq!(
            login("127.0.0.1:5000"),
            Some(("alice".into(), "s3:cret".into()))
        );
        assert_eq!(
            login("127.0.0.1:5001"),
            None,
            "another port is another registry"
        );
        assert_eq!(login("docker.io"), Some(("hub".into(), "pw".into())));
        assert_eq!(login("GHCR.io"), Some(("bob".into(), "x".into())));
        let helped = find("helped.example", None, None, Some(&file)).expect("reads");
        assert_eq!(
            (helped.login, helped.helper.as_deref()),
            (None, Some("gcloud"))
        );
        // No file: anonymous.
        let none = find("x", None, None, Some(Path::new("/nonexistent/config.json")));
        assert_eq!(none.expect("no file"), Found::default());
    }

    #[test]
    fn a_broken_config_names_the_file_and_the_fix() {
        for json in [
            serde_json::json!({"auths": {"r.example": {"auth": "not base64!"}}}),
            serde_json::json!({"auths": {"r.example": {"auth": b64("no colon")}}}),
            serde_json::json!({"auths": []}),
        ] {
            let (_dir, file) = docker(&json);
            let error = find("r.example", None, None, Some(&file)).expect_err("broken");
            let text = error.to_string();
            assert!(text.contains(&file.display().to_string()), "{text}");
            assert!(text.contains("DOCKER_CONFIG"), "{text}");
            assert!(
                !text.contains("no colon"),
                "the secret is not shown: {text}"
            );
        }
    }

    #[test]
    fn the_password_is_never_shown() {
        let login = Login {
            user: "alice".into(),
            password: "hunter2".into(),
            from: USERNAME_VAR.into(),
        };
        assert!(!format!("{login:?}").contains("hunter2"));
        assert!(login.basic_header().expect("a header").is_sensitive());
    }
}
