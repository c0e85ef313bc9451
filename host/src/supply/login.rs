//! Logging in to a registry: the account for a pull or a push comes from the
//! environment (`PITON_REGISTRY_USERNAME` and `PITON_REGISTRY_PASSWORD`, for the one
//! registry `PITON_REGISTRY_HOST` names), else from Docker's `config.json` (the
//! `auths` entry `docker login HOST` writes for that registry; `$DOCKER_CONFIG/config.json`,
//! else `~/.docker/config.json`), else none: anonymous. Credential helpers
//! (`credsStore`, `credHelpers`) are programs piton does not run; a registry that asks
//! for a login then says so. A config.json that cannot be used is a warning, not an
//! error: a registry that never asks for a login is still pulled from.
//!
//! Where an account is sent (only where the registry asks for it, see
//! [`crate::supply::handshake`]) is decided there; this module only finds it. A
//! password is never printed or logged: [`Login`]'s `Debug` leaves it out, the header
//! carrying it is marked sensitive, and a config.json that does not parse is described
//! by where, never by what it holds.

use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use reqwest::header::HeaderValue;
use serde::Deserialize;

/// The environment variables of a login.
pub const USERNAME_VAR: &str = "PITON_REGISTRY_USERNAME";
/// See [`USERNAME_VAR`].
pub const PASSWORD_VAR: &str = "PITON_REGISTRY_PASSWORD";
/// The registry (`HOST[:PORT]`) the login of [`USERNAME_VAR`] is for: no other
/// registry is sent it.
pub const HOST_VAR: &str = "PITON_REGISTRY_HOST";

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

    /// As `oci_client` takes it, for a registry that asks for HTTP Basic auth.
    pub(crate) fn auth(&self) -> RegistryAuth {
        RegistryAuth::Basic(self.user.clone(), self.password.clone())
    }

    /// The HTTP Basic `Authorization` header, marked sensitive (never logged).
    pub(crate) fn basic_header(&self) -> Result<HeaderValue, LoginError> {
        let pair = format!("{}:{}", self.user, self.password);
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
            .map_err(|_| LoginError::NotAHeader { who: self.who() })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

/// A login in the environment that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// One of the two variables without the other.
    #[error("set both {USERNAME_VAR} and {PASSWORD_VAR}, or neither")]
    HalfSet,
    /// A login with no registry named for it.
    #[error(
        "{USERNAME_VAR} and {PASSWORD_VAR} are set, but {HOST_VAR} is not: set it to the \
         registry the login is for (HOST[:PORT], such as ghcr.io or 127.0.0.1:5000); no \
         other registry is sent it"
    )]
    NoHost,
    /// A login whose header cannot be made (base64 always can: kept rather than a
    /// panic should that ever change).
    #[error("the login of {who} cannot be sent in an HTTP header")]
    NotAHeader {
        /// `user (from WHERE)`.
        who: String,
    },
}

/// Why Docker's config.json was not used: the pull goes on anonymously.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "Docker's config {}: {problem}; no login from it is used (anonymous): fix it (`docker \
     login` writes it), or name another folder with DOCKER_CONFIG",
    .file.display()
)]
pub struct ConfigUnused {
    /// The file.
    pub file: PathBuf,
    /// What is wrong with it.
    pub problem: ConfigProblem,
}

/// What is wrong with a Docker config.json, said without quoting what it holds (a
/// login, perhaps).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigProblem {
    /// It cannot be read.
    #[error("cannot read it: {0}")]
    Read(std::io::ErrorKind),
    /// It is larger than piton reads.
    #[error("it is over {MAX_CONFIG} bytes")]
    TooLarge,
    /// It is not the JSON Docker writes.
    #[error("it does not parse: {what} at line {line}, column {column}")]
    Parse {
        /// "a syntax error", "an unexpected value", "an early end".
        what: &'static str,
        /// Where, from 1.
        line: usize,
        /// Where, from 1.
        column: usize,
    },
    /// An `auths` entry whose `auth` is not base64 of `USER:PASSWORD`.
    #[error("auths.{key:?}.auth is not base64 of USER:PASSWORD")]
    BadAuth {
        /// The entry's key.
        key: String,
    },
}

impl ConfigProblem {
    /// serde_json's `error`, by its kind and place: its message quotes the value it did
    /// not expect, which can be a login.
    fn parse(error: &serde_json::Error) -> Self {
        use serde_json::error::Category;
        let what = match error.classify() {
            Category::Io => "a read error",
            Category::Syntax => "a syntax error",
            Category::Data => "a value of another type than Docker writes",
            Category::Eof => "an early end",
        };
        Self::Parse {
            what,
            line: error.line(),
            column: error.column(),
        }
    }
}

/// What was found for a registry: the account, if any, the credential helper Docker
/// keeps its login in, if it does, and why Docker's config was not used, if so.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The account to log in with.
    pub login: Option<Login>,
    /// A credential helper Docker's config names for the registry, which piton does
    /// not run.
    pub helper: Option<String>,
    /// Why Docker's config.json was not used (a warning; the login is then none).
    pub unused: Option<ConfigUnused>,
}

/// The login the environment gives: the three variables.
#[derive(Clone, Debug, Default)]
struct FromEnv {
    user: Option<String>,
    password: Option<String>,
    host: Option<String>,
}

/// The account for `registry` (`HOST[:PORT]`), from this process's environment; a
/// config.json not used is logged as a warning.
pub fn login_for(registry: &str) -> Result<Found, LoginError> {
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    let docker = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".docker")))
        .map(|folder| folder.join("config.json"));
    let env = FromEnv {
        user: var(USERNAME_VAR),
        password: var(PASSWORD_VAR),
        host: var(HOST_VAR),
    };
    let found = find(registry, env, docker.as_deref())?;
    if let Some(unused) = &found.unused {
        tracing::warn!("{unused}");
    }
    Ok(found)
}

/// [`login_for`] with the environment given: the variables, and where Docker's
/// config.json is.
fn find(registry: &str, env: FromEnv, docker: Option<&Path>) -> Result<Found, LoginError> {
    match (env.user, env.password) {
        (Some(user), Some(password)) => {
            let host = env.host.ok_or(LoginError::NoHost)?;
            if server_of(&host) == server_of(registry) {
                return Ok(Found {
                    login: Some(Login {
                        user,
                        password,
                        from: USERNAME_VAR.to_owned(),
                    }),
                    ..Found::default()
                });
            }
            // For another registry: this one gets Docker's login for it, if any.
        }
        (Some(_), None) | (None, Some(_)) => return Err(LoginError::HalfSet),
        (None, None) => {}
    }
    Ok(match docker {
        Some(file) => from_docker(registry, file).unwrap_or_else(|problem| Found {
            unused: Some(ConfigUnused {
                file: file.to_path_buf(),
                problem,
            }),
            ..Found::default()
        }),
        None => Found::default(),
    })
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
fn from_docker(registry: &str, file: &Path) -> Result<Found, ConfigProblem> {
    let mut text = Vec::new();
    match std::fs::File::open(file) {
        Ok(opened) => {
            opened
                .take(MAX_CONFIG + 1)
                .read_to_end(&mut text)
                .map_err(|e| ConfigProblem::Read(e.kind()))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::default()),
        Err(e) => return Err(ConfigProblem::Read(e.kind())),
    }
    if text.len() as u64 > MAX_CONFIG {
        return Err(ConfigProblem::TooLarge);
    }
    let config: DockerConfig =
        serde_json::from_slice(&text).map_err(|e| ConfigProblem::parse(&e))?;
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
            helper,
            ..Found::default()
        });
    };
    let from = file.display().to_string();
    let bad = || ConfigProblem::BadAuth { key: key.clone() };
    let pair = match (&auth.auth, &auth.username, &auth.password) {
        (Some(encoded), _, _) if !encoded.is_empty() => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(bad)?;
            let (user, password) = decoded.split_once(':').ok_or_else(bad)?;
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
        unused: None,
    })
}

/// The registry a config.json key or a `HOST[:PORT]` names, as compared: without a
/// scheme or path, lower case; Docker Hub's names as one.
pub(crate) fn server_of(key: &str) -> String {
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

    fn env(user: Option<&str>, password: Option<&str>, host: Option<&str>) -> FromEnv {
        FromEnv {
            user: user.map(Into::into),
            password: password.map(Into::into),
            host: host.map(Into::into),
        }
    }

    fn none() -> FromEnv {
        FromEnv::default()
    }

    #[test]
    fn the_environment_wins_for_its_registry_only_and_needs_all_three_variables() {
        let both = || env(Some("u"), Some("p"), Some("R.example"));
        let found = find("r.example", both(), None).expect("found");
        let login = found.login.expect("a login");
        assert_eq!(login.who(), "u (from PITON_REGISTRY_USERNAME)");
        // Another registry is not sent it; it gets Docker's login for it, if any.
        let (_dir, file) = docker(&serde_json::json!({
            "auths": {"other.example": {"auth": b64("d:pw")}},
        }));
        let other = find("other.example", both(), Some(&file)).expect("found");
        assert_eq!(other.login.map(|l| l.user), Some("d".to_owned()));
        let other = find("r.example:5000", both(), Some(&file)).expect("found");
        assert_eq!(other.login, None, "another port is another registry");

        let half = find("r.example", env(Some("u"), None, Some("r.example")), None);
        assert_eq!(half, Err(LoginError::HalfSet));
        let unscoped = find("r.example", env(Some("u"), Some("p"), None), None);
        assert_eq!(unscoped, Err(LoginError::NoHost));
        assert!(LoginError::NoHost.to_string().contains(HOST_VAR));
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
            find(registry, none(), Some(&file))
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
        let helped = find("helped.example", none(), Some(&file)).expect("reads");
        assert_eq!(
            (helped.login, helped.helper.as_deref()),
            (None, Some("gcloud"))
        );
        // No file: anonymous.
        let absent = find("x", none(), Some(Path::new("/nonexistent/config.json")));
        assert_eq!(absent.expect("no file"), Found::default());
    }

    #[test]
    fn a_broken_config_is_a_warning_naming_the_file_and_the_fix_and_no_secret() {
        let secret = b64("alice:s3cret");
        for (json, problem) in [
            (
                serde_json::json!({"auths": {"r.example": {"auth": "not base64!"}}}),
                "auths.\"r.example\".auth is not base64",
            ),
            (
                serde_json::json!({"auths": {"r.example": {"auth": b64("no colon")}}}),
                "auths.\"r.example\".auth is not base64",
            ),
            (
                serde_json::json!({"auths": []}),
                "it does not parse: a value of another type than Docker writes at line 1, \
                 column 9",
            ),
            // serde_json's message would quote the value it did not expect: a login.
            (
                serde_json::json!({"auths": {"r.example": secret}}),
                "it does not parse: a value of another type",
            ),
        ] {
            let (_dir, file) = docker(&json);
            let found = find("r.example", none(), Some(&file)).expect("anonymous, not an error");
            assert_eq!(found.login, None);
            let unused = found.unused.expect("why the config was not used");
            let text = unused.to_string();
            assert!(text.contains(&file.display().to_string()), "{text}");
            assert!(text.contains(problem), "{problem} in {text}");
            assert!(text.contains("DOCKER_CONFIG"), "{text}");
            for said in [text, format!("{unused:?}")] {
                assert!(!said.contains("no colon"), "the secret is shown: {said}");
                assert!(!said.contains(&secret), "the secret is shown: {said}");
            }
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
