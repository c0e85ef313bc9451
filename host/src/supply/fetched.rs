//! What a fetch gives (a checked temporary file in the plugins folder) and why one
//! fails, shared by the ways of fetching (URL, path, OCI registry).

use std::path::Path;

use crate::limits::format_size;
use crate::supply::login::{ConfigUnused, LoginError};

/// How a fetch is bounded: piton.toml's `[supply]` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchLimits {
    /// The most bytes the component may have.
    pub max_size: u64,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            max_size: crate::config::supply::DEFAULT_MAX_SIZE,
        }
    }
}

/// A component fetched into a temporary file of the plugins folder: put in place
/// whole once checked (its bytes synced to disk first), removed when dropped
/// otherwise.
#[derive(Debug)]
pub struct Fetched {
    /// The temporary file (its name does not end in `.wasm`, so no load reads it).
    pub temp: tempfile::NamedTempFile,
    /// The SHA-256 of its bytes, in hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// For an OCI reference, the manifest digest it resolved to (`sha256:HEX`).
    pub resolved: Option<String>,
}

impl Fetched {
    /// `sha256:HEX` of the bytes, as piton.lock records it.
    pub fn digest(&self) -> String {
        format!("sha256:{}", self.sha256)
    }
}

/// A fetch that failed: the reference and why.
#[derive(Debug, thiserror::Error)]
#[error("{reference}: {problem}")]
pub struct FetchError {
    /// The reference as written.
    pub reference: String,
    /// Why it failed.
    pub problem: FetchProblem,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchProblem {
    /// The HTTP client could not be set up.
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    /// The request failed in transport.
    #[error("cannot fetch {url}: {error}")]
    Request {
        /// The URL.
        url: String,
        /// The transport's error.
        error: String,
    },
    /// An answer that is not a success.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// A redirect not followed.
    #[error(
        "refused a redirect from {from} to {to}: {why}; fetch from where it leads, if you trust it"
    )]
    Redirect {
        /// Where it was asked.
        from: String,
        /// Where it leads.
        to: String,
        /// Why it was refused.
        why: &'static str,
    },
    /// More bytes than the limit.
    #[error(
        "{what} is {}, over the limit of {}; raise [supply] max_size in piton.toml if you \
         trust it",
        format_size(*size),
        format_size(*limit)
    )]
    TooLarge {
        /// What: "the component", "the manifest".
        what: &'static str,
        /// Its size, or what was read before stopping.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Bytes whose digest is not the one expected.
    #[error("{what} has digest {found}, but {expected} was expected; nothing was kept")]
    Digest {
        /// What: "the component", "the manifest", "the layer".
        what: &'static str,
        /// The digest expected.
        expected: String,
        /// The digest of the bytes.
        found: String,
    },
    /// A tag that named another manifest when it was pulled by its digest.
    #[error(
        "the tag {tag} resolved to {resolved}, but the manifest the registry gave for that \
         digest is {found}: the tag moved during the pull (or the registry is broken); \
         nothing was kept, try again"
    )]
    TagMoved {
        /// The tag.
        tag: String,
        /// What the tag resolved to first.
        resolved: String,
        /// The digest of the manifest then given.
        found: String,
    },
    /// A manifest of another kind than one Wasm component.
    #[error("{0}")]
    Manifest(String),
    /// The registry refused or failed the token handshake or a push.
    #[error("the registry: {0}")]
    Registry(String),
    /// The registry asks for a login, or refused the one given.
    #[error(
        "{}",
        login_message(.registry, *.status, .login.as_deref(), .helper.as_deref(), .unused.as_deref())
    )]
    Login {
        /// `HOST[:PORT]`.
        registry: String,
        /// The HTTP status: 401, 403.
        status: u16,
        /// The account given (`user (from WHERE)`), if any.
        login: Option<String>,
        /// The credential helper Docker keeps its login for the registry in, if any.
        helper: Option<String>,
        /// Why Docker's config.json was not read for a login, if so (boxed: rare, and
        /// every fetch result carries this error's size).
        unused: Option<Box<ConfigUnused>>,
    },
    /// The login in the environment cannot be used.
    #[error("cannot use the registry login: {0}")]
    Credentials(#[from] LoginError),
    /// The registry names a token service the login is not sent to.
    #[error(
        "{registry} asks for the login of {login} to be sent to {realm} for a token, and \
         {refusal}; piton did not send it"
    )]
    TokenRealm {
        /// `HOST[:PORT]`.
        registry: String,
        /// The token service's URL, as the registry gave it.
        realm: String,
        /// `user (from WHERE)`.
        login: String,
        /// Why it was not sent.
        refusal: RealmRefusal,
    },
    /// The token service's answer is no token.
    #[error("the registry: {0}")]
    Token(TokenProblem),
    /// A local file that cannot be read.
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
    /// The temporary file cannot be written.
    #[error("cannot write the plugins folder: {0}")]
    Write(#[source] std::io::Error),
}

/// What [`FetchProblem::Login`] says.
fn login_message(
    registry: &str,
    status: u16,
    login: Option<&str>,
    helper: Option<&str>,
    unused: Option<&ConfigUnused>,
) -> String {
    match login {
        Some(who) => format!(
            "{registry} refused the login of {who} (HTTP {status}): check the user name and \
             password, and that the account may do this there"
        ),
        None => {
            let helper = helper.map_or_else(String::new, |helper| {
                format!(
                    " (Docker keeps its login for it with docker-credential-{helper}, a \
                     program piton does not run)"
                )
            });
            let unused = unused.map_or_else(String::new, |unused| format!(" ({unused})"));
            format!(
                "{registry} asks for a login (HTTP {status}){helper}: set \
                 PITON_REGISTRY_USERNAME and PITON_REGISTRY_PASSWORD, with \
                 PITON_REGISTRY_HOST={registry}, or log in with `docker login {registry}` \
                 (piton reads Docker's config.json){unused}"
            )
        }
    }
}

/// A new temporary file in `folder`, named so that no load reads it.
pub(crate) fn temp_in(folder: &Path) -> Result<tempfile::NamedTempFile, FetchProblem> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".piton-add-").suffix(".part");
    readable(&mut builder);
    builder.tempfile_in(folder).map_err(FetchProblem::Write)
}

/// Files piton puts in the plugins folder are readable by all, as a file copied there
/// would be (a temporary file is otherwise only its owner's).
pub(crate) fn readable(builder: &mut tempfile::Builder<'_, '_>) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    #[cfg(not(unix))]
    let _ = builder;
}

/// Why a login is not sent to a token service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RealmRefusal {
    /// Neither HTTP nor HTTPS.
    #[error("it is not an HTTPS URL")]
    Scheme,
    /// Plain HTTP to a host that is not loopback: anyone on the way reads it.
    #[error("it is plain HTTP off loopback, which anyone on the way could read")]
    PlainHttp,
    /// Another host (or port) than the registry's, not named.
    #[error(
        "it is on another host than the registry: if you trust that host with the login, \
         name it (HOST or HOST:PORT) in PITON_REGISTRY_TOKEN_HOSTS"
    )]
    OtherHost,
}

/// A token service's answer that is no token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenProblem {
    /// The realm is not a URL.
    #[error("the registry names a token service that is not a URL")]
    Realm,
    /// Not JSON with `token` or `access_token`.
    #[error("its token service answered something that is not a token")]
    NotAToken,
    /// A token that cannot go in a header.
    #[error("its token service gave a token that cannot be sent in a header")]
    NotAHeader,
}
