//! `[mcp.NAME]` sections of piton.toml: upstream MCP servers.
//!
//! ```toml
//! [mcp.everything]
//! command = "npx -y @modelcontextprotocol/server-everything"   # or command = "npx" with args = [...]
//! cwd = "servers/everything"    # relative to piton.toml; no tool may write in it
//! env = { DEBUG = "0" }         # added to HOME, LOGNAME, PATH, SHELL, TERM, USER; ${VAR} allowed
//! timeout = "30s"               # connecting, listing and each call; default: 60 s to connect and list, calls unlimited
//! tools = ["echo", "get-sum"]   # only these (default: all)
//! trust_hints = true            # take its annotations at their word when asking (default: false)
//! protocol = "2026-07-28"       # speak to it statelessly (server/discover); default "2025-11-25" (a session)
//! [mcp.remote]
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { Authorization = "Bearer ${TOKEN}" }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::config::values::{ValueError, parse_duration, parse_env_template, split_command};
use crate::group::{GroupNameError, check_group_name};

/// An upstream MCP server's settings that cannot be used, in an `[mcp.NAME]` section
/// or given to [`UpstreamServer`](crate::upstream::UpstreamServer): each says what to
/// write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A server name that would make `{server}__{tool}` ambiguous.
    #[error("server {0}")]
    Name(#[from] GroupNameError),
    /// Both `command` and `url`.
    #[error("has both `command` and `url`; a server is either a command (stdio) or a URL")]
    CommandAndUrl,
    /// Neither `command` nor `url`.
    #[error("needs `command` (a stdio server) or `url` (a Streamable HTTP server)")]
    NoCommandOrUrl,
    /// `headers` for a command.
    #[error("`headers` are for `url` servers; a command gets `env`")]
    HeadersForCommand,
    /// A `command` of only spaces.
    #[error(
        "is empty; give the program that starts the server, such as \"npx -y \
         @modelcontextprotocol/server-everything\""
    )]
    EmptyCommand,
    /// A library [`StdioCommand`] with no program.
    #[error("the command is empty; give the program that starts the server")]
    NoProgram,
    /// A `cwd` that is not a folder: the path, joined to piton.toml's folder.
    #[error(
        "{} is not a folder; fix the path (relative paths are relative to piton.toml)",
        .0.display()
    )]
    Cwd(PathBuf),
    /// `args`, `cwd` or `env` (the key named) for a `url` server.
    #[error("`{0}` is for `command` servers; a `url` server gets `headers`")]
    ForCommand(&'static str),
    /// A blank name in `tools`.
    #[error("{0:?} is not a tool name; list the server's tool names")]
    ToolName(String),
    /// A `url` that does not parse: the URL and why.
    #[error("url {url:?} is not a URL ({reason}); use http://HOST:PORT/mcp")]
    NotAUrl {
        /// The URL given.
        url: String,
        /// The URL parser's reason.
        reason: String,
    },
    /// A `url` that is not http or https.
    #[error("url {0:?} must start with http:// or https://")]
    Scheme(String),
    /// A header the MCP transport sets itself.
    #[error("header {0} is set by the MCP transport itself; remove it from `headers`")]
    ReservedHeader(String),
    /// A header name HTTP does not allow.
    #[error("header name {0:?} is not a valid HTTP header name")]
    HeaderName(String),
    /// A header value HTTP does not allow: the header's name.
    #[error("the value of header {0} is not a valid HTTP header value")]
    HeaderValue(String),
    /// An `env` variable name that cannot be one.
    #[error(transparent)]
    EnvName(#[from] piton_wit::EnvNameError),
    /// A `command` line, `${VAR}` template or `timeout`.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A `protocol` piton does not speak to a server.
    #[error(
        "protocol {0:?} is not one piton speaks to a server; write \"2025-11-25\" (the \
         default: `initialize`, one session) or \"2026-07-28\" (`server/discover`, stateless)"
    )]
    Protocol(String),
}

/// The MCP revision piton speaks to an upstream server, and so how the server asks
/// its questions during a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpstreamProtocol {
    /// 2025-11-25: `initialize`, one session; the server asks with `elicitation/create`
    /// during the call, and tells when its tools change.
    #[default]
    Session,
    /// 2026-07-28: `server/discover`, then each request stands alone; the server asks
    /// by answering `tools/call` with `input_required`, and the call is made again
    /// with the answers and the server's `requestState`.
    Stateless,
}

/// What piton.toml says about one upstream server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamConfig {
    /// How to reach it.
    pub connect: UpstreamConnect,
    /// The connect, list and per-call timeout; see [`UpstreamServer::with_timeout`].
    pub timeout: Option<Duration>,
    /// Only these tools (names on the server), or all.
    pub tools: Option<Vec<String>>,
    /// `trust_hints = true`: its tools' annotations are taken at their word when
    /// deciding whether to ask the person about a call (the seed's `trust_mcp`).
    pub trust_hints: bool,
    /// The revision spoken to it (`protocol`).
    pub protocol: UpstreamProtocol,
}

/// How an upstream server is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum UpstreamConnect {
    /// A child process spoken to over stdio.
    Stdio(StdioCommand),
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint, such as `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Headers sent with each request (values may hold secrets).
        headers: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for UpstreamConnect {
    /// Header names only: their values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio(command) => f.debug_tuple("Stdio").field(command).finish(),
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// A stdio server's command line.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StdioCommand {
    /// The program, found on `PATH` unless it is a path.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working folder; piton's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Variables added to the safe default environment (`upstream::SAFE_ENV`).
    pub env: BTreeMap<String, String>,
}

impl std::fmt::Debug for StdioCommand {
    /// The variables' names only: their values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl StdioCommand {
    /// `program` with `args`, nothing else set.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }
}

/// Checks an upstream server's name: letters, digits, `-` and single `_`, so that
/// `{server}__{tool}` is unambiguous.
pub fn check_server_name(name: &str) -> Result<(), McpError> {
    check_group_name(name).map_err(McpError::Name)
}

/// Checks a Streamable HTTP server's `url` and `headers` as every connect needs them:
/// an http(s) URL, and header names and values valid in HTTP, none of those the MCP
/// transport sets itself.
pub fn check_http(url: &str, headers: &BTreeMap<String, String>) -> Result<(), McpError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| McpError::NotAUrl {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(McpError::Scheme(url.to_owned()));
    }
    for (key, value) in headers {
        // The MCP transport sets these itself; rmcp refuses them at every connect.
        if [
            "accept",
            "mcp-session-id",
            "mcp-protocol-version",
            "last-event-id",
        ]
        .iter()
        .any(|reserved| key.eq_ignore_ascii_case(reserved))
        {
            return Err(McpError::ReservedHeader(key.clone()));
        }
        if !piton_wit::is_header_name(key) {
            return Err(McpError::HeaderName(key.clone()));
        }
        if !piton_wit::is_header_value(value) {
            return Err(McpError::HeaderValue(key.clone()));
        }
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMcp {
    command: Option<String>,
    args: Option<Vec<String>>,
    cwd: Option<String>,
    env: Option<BTreeMap<String, String>>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    timeout: Option<String>,
    tools: Option<Vec<String>>,
    trust_hints: Option<bool>,
    protocol: Option<String>,
}

/// Parses `[mcp.NAME]`; an error is the key and the mistake.
pub(crate) fn parse_mcp(
    name: &str,
    raw: RawMcp,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<UpstreamConfig, (String, McpError)> {
    let key = format!("mcp.{name}");
    let at = |sub: &str| format!("{key}.{sub}");
    check_server_name(name).map_err(|e| (key.clone(), e))?;
    let connect = match (raw.command, raw.url) {
        (Some(_), Some(_)) => {
            return Err((key, McpError::CommandAndUrl));
        }
        (None, None) => {
            return Err((key, McpError::NoCommandOrUrl));
        }
        (Some(command), None) => {
            if raw.headers.is_some() {
                return Err((at("headers"), McpError::HeadersForCommand));
            }
            let (program, args) = match raw.args {
                Some(args) => (command.trim().to_owned(), args),
                None => {
                    let mut words =
                        split_command(&command).map_err(|e| (at("command"), e.into()))?;
                    if words.is_empty() {
                        (String::new(), Vec::new())
                    } else {
                        let program = words.remove(0);
                        (program, words)
                    }
                }
            };
            if program.is_empty() {
                return Err((at("command"), McpError::EmptyCommand));
            }
            let cwd = match raw.cwd {
                Some(cwd) => {
                    let path = base.join(&cwd);
                    if !path.is_dir() {
                        return Err((at("cwd"), McpError::Cwd(path)));
                    }
                    Some(path)
                }
                None => None,
            };
            let mut vars = BTreeMap::new();
            for (var, value) in raw.env.unwrap_or_default() {
                piton_wit::check_env_name(&var).map_err(|e| (at("env"), e.into()))?;
                let value = parse_env_template(&value, env)
                    .map_err(|e| (at(&format!("env.{var}")), e.into()))?;
                vars.insert(var, value);
            }
            UpstreamConnect::Stdio(StdioCommand {
                program,
                args,
                cwd,
                env: vars,
            })
        }
        (None, Some(url)) => {
            for (given, sub) in [
                (raw.args.is_some(), "args"),
                (raw.cwd.is_some(), "cwd"),
                (raw.env.is_some(), "env"),
            ] {
                if given {
                    return Err((at(sub), McpError::ForCommand(sub)));
                }
            }
            let mut headers = BTreeMap::new();
            for (header, value) in raw.headers.unwrap_or_default() {
                let value = parse_env_template(&value, env)
                    .map_err(|e| (at(&format!("headers.{header}")), e.into()))?;
                headers.insert(header, value);
            }
            UpstreamConnect::Http { url, headers }
        }
    };
    let timeout = match raw.timeout {
        Some(t) => Some(parse_duration(&t).map_err(|e| (at("timeout"), e.into()))?),
        None => None,
    };
    if let Some(tools) = &raw.tools
        && let Some(bad) = tools.iter().find(|t| t.trim().is_empty())
    {
        return Err((at("tools"), McpError::ToolName(bad.clone())));
    }
    let protocol = match raw.protocol.as_deref() {
        None | Some("2025-11-25") => UpstreamProtocol::Session,
        Some("2026-07-28") => UpstreamProtocol::Stateless,
        Some(other) => return Err((at("protocol"), McpError::Protocol(other.to_owned()))),
    };
    let config = UpstreamConfig {
        connect,
        timeout,
        tools: raw.tools,
        trust_hints: raw.trust_hints.unwrap_or(false),
        protocol,
    };
    // The same checks the library makes (URL, header names and values).
    if let UpstreamConnect::Http { url, headers } = &config.connect {
        check_http(url, headers).map_err(|e| (key, e))?;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `[mcp.*]` sections of a piton.toml in the temp folder.
    #[derive(Debug)]
    struct Parsed {
        mcp: BTreeMap<String, UpstreamConfig>,
    }

    #[derive(Deserialize)]
    struct File {
        mcp: BTreeMap<String, RawMcp>,
    }

    fn parse(text: &str) -> Result<Parsed, (String, McpError)> {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        let file: File = toml::from_str(text).expect("[mcp.*] sections");
        let mut mcp = BTreeMap::new();
        for (name, raw) in file.mcp {
            let section = parse_mcp(&name, raw, &std::env::temp_dir(), &env)?;
            mcp.insert(name, section);
        }
        Ok(Parsed { mcp })
    }

    fn error(text: &str) -> (String, McpError) {
        parse(text).expect_err(text)
    }

    #[test]
    fn a_command_server() {
        let config = parse(
            r#"
            [mcp.everything]
            command = "npx -y '@modelcontextprotocol/server-everything'"
            cwd = "."
            env = { DEBUG = "0", KEY = "${TOKEN}" }
            timeout = "30s"
            tools = ["echo", "get-sum"]
            "#,
        )
        .unwrap();
        let server = &config.mcp["everything"];
        let UpstreamConnect::Stdio(command) = &server.connect else {
            panic!("{server:?}")
        };
        assert_eq!(command.program, "npx");
        assert_eq!(
            command.args,
            ["-y", "@modelcontextprotocol/server-everything"]
        );
        assert_eq!(
            command.cwd.as_deref(),
            Some(std::env::temp_dir().join(".").as_path())
        );
        assert_eq!(command.env["KEY"], "s3cret");
        assert_eq!(server.timeout, Some(Duration::from_secs(30)));
        assert_eq!(
            server.tools.as_deref(),
            Some(&["echo".to_owned(), "get-sum".to_owned()][..])
        );
    }

    #[test]
    fn args_keep_the_command_whole() {
        let config = parse("[mcp.s]\ncommand = \"/opt/my server\"\nargs = [\"a b\"]").unwrap();
        let UpstreamConnect::Stdio(command) = &config.mcp["s"].connect else {
            panic!()
        };
        assert_eq!(command.program, "/opt/my server");
        assert_eq!(command.args, ["a b"]);
    }

    #[test]
    fn a_url_server() {
        let config = parse(
            "[mcp.remote]\nurl = \"http://127.0.0.1:3001/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }",
        )
        .unwrap();
        assert_eq!(
            config.mcp["remote"].connect,
            UpstreamConnect::Http {
                url: "http://127.0.0.1:3001/mcp".into(),
                headers: [("Authorization".to_owned(), "Bearer s3cret".to_owned())].into()
            }
        );
        assert_eq!(config.mcp["remote"].timeout, None);
        assert_eq!(config.mcp["remote"].protocol, UpstreamProtocol::Session);
        let modern = "[mcp.m]\nurl = \"http://h/mcp\"\nprotocol = \"2026-07-28\"";
        let config = parse(modern).unwrap();
        assert_eq!(config.mcp["m"].protocol, UpstreamProtocol::Stateless);
    }

    /// A section, the key at fault, a part of the message and the variant.
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        fn(&McpError) -> bool,
    );

    #[test]
    fn errors_name_the_key_and_the_fix() {
        let cases: &[Case] = &[
            ("[mcp.a__b]\ncommand = \"x\"", "mcp.a__b", "__", |e| {
                matches!(e, McpError::Name(GroupNameError::Underscores(_)))
            }),
            ("[mcp.a]\n", "mcp.a", "needs `command`", |e| {
                matches!(e, McpError::NoCommandOrUrl)
            }),
            (
                "[mcp.a]\ncommand = \"x\"\nurl = \"http://h/mcp\"",
                "mcp.a",
                "both",
                |e| matches!(e, McpError::CommandAndUrl),
            ),
            (
                "[mcp.a]\ncommand = \"  \"",
                "mcp.a.command",
                "is empty",
                |e| matches!(e, McpError::EmptyCommand),
            ),
            (
                "[mcp.a]\ncommand = \"x 'open\"",
                "mcp.a.command",
                "quote",
                |e| matches!(e, McpError::Value(ValueError::UnclosedQuote { .. })),
            ),
            (
                "[mcp.a]\ncommand = \"x\"\nheaders = {A = \"b\"}",
                "mcp.a.headers",
                "for `url`",
                |e| matches!(e, McpError::HeadersForCommand),
            ),
            (
                "[mcp.a]\nurl = \"http://h/mcp\"\nenv = {A = \"b\"}",
                "mcp.a.env",
                "for `command`",
                |e| matches!(e, McpError::ForCommand("env")),
            ),
            ("[mcp.a]\nurl = \"ftp://h/mcp\"", "mcp.a", "http://", |e| {
                matches!(e, McpError::Scheme(_))
            }),
            ("[mcp.a]\nurl = \"not a url\"", "mcp.a", "not a URL", |e| {
                matches!(e, McpError::NotAUrl { .. })
            }),
            (
                "[mcp.a]\nurl = \"http://h/\"\nheaders = {A = \"${NOPE}\"}",
                "mcp.a.headers.A",
                "NOPE is not set",
                |e| matches!(e, McpError::Value(ValueError::UnsetVariable(_))),
            ),
            (
                "[mcp.a]\ncommand = \"x\"\ntimeout = \"soon\"",
                "mcp.a.timeout",
                "",
                |e| matches!(e, McpError::Value(ValueError::Duration(_))),
            ),
            (
                "[mcp.a]\ncommand = \"x\"\ncwd = \"no/such/dir\"",
                "mcp.a.cwd",
                "not a folder",
                |e| matches!(e, McpError::Cwd(_)),
            ),
            (
                "[mcp.a]\ncommand = \"x\"\nprotocol = \"2026\"",
                "mcp.a.protocol",
                "\"2026-07-28\" (`server/discover`, stateless)",
                |e| matches!(e, McpError::Protocol(_)),
            ),
            (
                "[mcp.a]\ncommand = \"x\"\ntools = [\"\"]",
                "mcp.a.tools",
                "not a tool name",
                |e| matches!(e, McpError::ToolName(_)),
            ),
        ];
        for (text, key, message, is) in cases {
            let (got_key, got) = error(text);
            assert_eq!(got_key, *key, "{text}: {got}");
            assert!(is(&got), "{text}: {got:?}");
            let shown = got.to_string();
            assert!(shown.contains(message), "{text}: {shown}");
        }
        let unknown = toml::from_str::<File>("[mcp.a]\ncommand = \"x\"\nport = 3")
            .err()
            .expect("unknown key");
        assert!(
            unknown.to_string().contains("unknown field `port`"),
            "{unknown}"
        );
    }
}
