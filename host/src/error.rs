//! Errors that stop a run, and errors that keep a plugin from loading.

use std::time::Duration;

use crate::source::ToolSource;

/// Why a call stops the run instead of giving the model a result.
///
/// A trap is a bug in the tool (the seed: "an exception stops the run"); the CLI
/// exits 3 and MCP answers with a JSON-RPC error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool has this name.
    #[error("unknown tool `{name}`; known tools: {}", known_list(.known))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Every name the registry knows, sorted.
        known: Vec<String>,
    },
    /// The tool trapped: a panic, a limit, or a broken contract.
    #[error("tool `{tool}` {trap}")]
    Trap {
        /// The tool's name.
        tool: String,
        /// What happened.
        trap: Trap,
    },
    /// The connection to an upstream MCP server could not be made or was lost. The
    /// next call of one of its tools connects again.
    #[error("MCP server `{server}`: {message}")]
    Connection {
        /// The server's name.
        server: String,
        /// What failed.
        message: String,
    },
    /// The call was not run: every instance is taken and as many calls as allowed
    /// wait for one (piton.toml `[runtime] max_instances` and `max_queued`). Nothing
    /// of the tool ran, so the caller may send it again later; over MCP it is a
    /// JSON-RPC error with this text.
    #[error(
        "tool `{tool}` was not run: piton is busy, with {instances} calls running and \
         {queued} waiting for an instance, the most piton.toml's [runtime] max_instances \
         and max_queued allow; try again shortly, or raise max_queued"
    )]
    Busy {
        /// The tool's name.
        tool: String,
        /// `max_instances`: the calls that may run at once.
        instances: u32,
        /// `max_queued`: the calls that may wait for an instance.
        queued: u32,
    },
    /// The call needs the person's approval first, and the client asks over MCP
    /// 2026-07-28 rounds: the answer is `input_required` with this question and
    /// sealed state, and the client sends the call again with the answer. Nothing
    /// of the tool ran.
    #[error("tool `{tool}` waits for the user's approval: {message}")]
    InputRequired {
        /// The tool's name.
        tool: String,
        /// What the person is asked, in words.
        message: String,
        /// The form: the elicitation's `requestedSchema`.
        schema: serde_json::Value,
        /// The `requestState` the retry must carry.
        state: String,
    },
    /// The host could not run the call (for example, no instance slot was free).
    #[error("tool `{tool}` could not run: {message}")]
    Host {
        /// The tool's name.
        tool: String,
        /// What failed.
        message: String,
    },
}

impl CallError {
    /// A trap of `tool`.
    pub fn trap(tool: impl Into<String>, trap: Trap) -> Self {
        Self::Trap {
            tool: tool.into(),
            trap,
        }
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "none".to_owned()
    } else {
        known.join(", ")
    }
}

/// What a trap was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Trap {
    /// The call ran past its deadline.
    #[error("exceeded its deadline of {0:?} and was stopped")]
    Deadline(Duration),
    /// The guest tried to grow its memory past the limit.
    #[error("exceeded its memory limit of {} and trapped", crate::limits::format_size(*.0))]
    Memory(u64),
    /// The result was larger than the output limit.
    #[error("returned {actual} bytes, over its output limit of {}", crate::limits::format_size(*.limit))]
    Output {
        /// The limit in bytes.
        limit: u64,
        /// What the tool returned.
        actual: u64,
    },
    /// The call held more host resources (handles) at once than its limit.
    #[error(
        "exceeded its limit of {0} host resources (open files, sockets, streams, pollables, \
         HTTP fields, requests and bodies held at once) and trapped"
    )]
    Resources(usize),
    /// The guest trapped (a panic is an `unreachable` trap) or broke the contract.
    #[error("trapped: {0}")]
    Guest(String),
}

/// Why a plugin did not load. The other plugins still load.
#[derive(Debug, thiserror::Error)]
#[error("{plugin}: {kind}")]
pub struct LoadError {
    /// The file (or bundled name) that failed.
    pub plugin: ToolSource,
    /// Why.
    pub kind: LoadErrorKind,
}

/// The reason in a [`LoadError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    /// A folder whose name ends in `.wasm`.
    #[error("a folder, not a component file; rename it or move it out of the plugins folder")]
    Folder,
    /// Not a WebAssembly component (not wasm, empty, a core module, truncated), or it
    /// does not compile: what it is and the fix, in one line.
    #[error("{0}")]
    Compile(String),
    /// It exports neither `piton:tool/tool@0.1` nor `piton:tool/toolbox@0.1` (a
    /// wasi:cli command, another interface or version), or imports something piton
    /// does not give: what it is and the fix, in one line.
    #[error("{0}")]
    Contract(String),
    /// `spec` or `hints` trapped or ran too long.
    #[error("trapped while reading its spec or hints: {0}")]
    Trap(String),
    /// The tool's spec or hints break a rule.
    #[error("{0}")]
    Invalid(String),
    /// Its SHA-256 is not the one piton.toml pins: it was not loaded (a file pin:
    /// neither compiled nor run).
    #[error(
        "refused: its sha256 is {actual}, but piton.toml's {section} pins sha256 = \"{pinned}\"; \
         if this file is the one to run, pin it with sha256 = \"{actual}\" (as `piton inspect` \
         prints it), else put the pinned file back"
    )]
    Pinned {
        /// The section that pins it, as written: `[plugins."a.wasm"]`, `[tools.a]`.
        section: String,
        /// The digest pinned, in hex.
        pinned: String,
        /// The digest of the file, in hex.
        actual: String,
    },
    /// Its SHA-256 is not the one piton.lock records for its file: it was neither
    /// compiled nor run.
    #[error(transparent)]
    Locked(Box<LockedFile>),
    /// piton.toml's `[trust]` requires a signature this file does not have (or one
    /// it no longer trusts): it was neither compiled nor run.
    #[error("{0}")]
    Untrusted(String),
    /// Its SHA-256 is not that of the bytes a check made a moment before read (a
    /// signature verified over them, a fetch that hashed them): the file changed in
    /// between, and was neither compiled nor run.
    #[error(
        "refused: its sha256 is {actual}, but {by} was checked over sha256:{checked} a \
         moment before: the file changed in between, so none of it ran; try again, and \
         find out what changes it"
    )]
    Changed {
        /// What checked it: "the signature beside it (FILE)", "the fetch".
        by: String,
        /// The digest checked, in hex.
        checked: String,
        /// The digest of the bytes read now, in hex.
        actual: String,
    },
    /// Two tools with one name.
    #[error(
        "tool `{name}` is also defined by {other}; rename one (piton.toml can rename) or remove it"
    )]
    Duplicate {
        /// The name both use.
        name: String,
        /// The source that loaded first.
        other: ToolSource,
    },
    /// Other plugin files declare a tool of this name too, and piton.toml does not say
    /// whose it is: none of them is served under it, and none gets its settings.
    #[error(
        "tool `{name}` is also declared by {}, so neither is served and neither gets \
         piton.toml's [tools.{name}] grants; remove one of the files, or give the name to \
         one with [tools.{name}] from = \"FILE.wasm\"",
        sources(.others)
    )]
    Contested {
        /// The name they declare.
        name: String,
        /// The other sources that declare it.
        others: Vec<ToolSource>,
    },
    /// piton.toml's `[tools.NAME] from` gives the name to another file.
    #[error(
        "tool `{name}` is not served: piton.toml's [tools.{name}] from = \"{from}\" gives \
         the name and its grants to {}",
        bound_to(.name, .from, .bound)
    )]
    NotFrom {
        /// The tool's name.
        name: String,
        /// The file name `from` gives.
        from: String,
        /// What that file is.
        bound: Bound,
    },
}

/// The file a `[tools.NAME] from` names, as a load found it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Bound {
    /// It declares the tool too (this source).
    Declared(ToolSource),
    /// It was read, but gives no tool of that name (or did not load).
    NoSuchTool,
    /// The plugins folder has no such file.
    NoSuchFile,
}

fn sources(sources: &[ToolSource]) -> String {
    let names: Vec<String> = sources.iter().map(ToString::to_string).collect();
    names.join(" and ")
}

fn bound_to(name: &str, from: &str, bound: &Bound) -> String {
    match bound {
        Bound::Declared(source) => {
            format!(
                "{source}, which declares it too; remove this file, or rename the tool in its source"
            )
        }
        Bound::NoSuchTool => format!(
            "{from}, but {from} gives no tool named {name} (or did not load: see its error), so \
             none is served; set from to the file whose tool should have the name"
        ),
        Bound::NoSuchFile => format!(
            "{from}, but the plugins folder has no file {from}, so none is served; put the file \
             back, or set from to the file whose tool should have the name"
        ),
    }
}

/// A plugins folder file whose SHA-256 is not the one piton.lock records for it.
#[derive(Debug, thiserror::Error)]
#[error(
    "refused: its sha256 is {actual}, but {} records sha256:{locked} for it \
     ([components.{name}], added from {added_from}); the file changed since `piton add` \
     put it there: put the recorded file back, or fetch it again with \
     `piton add {added_from} --name {name} --force`",
    .lock.display()
)]
pub struct LockedFile {
    /// The lock file.
    pub lock: std::path::PathBuf,
    /// The component's name in it.
    pub name: String,
    /// Where it was added from.
    pub added_from: String,
    /// The digest recorded, in hex.
    pub locked: String,
    /// The digest of the file, in hex.
    pub actual: String,
}
