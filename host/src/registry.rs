//! The tool map: names to tools, and the call path every tool shares.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::approve::{ApprovalRequest, Approver, Decision};
use crate::error::LoadErrorKind;
use crate::schema::InputSchema;
use crate::tool::{check_spec_size, check_tool_name};
use crate::upstream::UpstreamServer;
use crate::{Args, CallError, DynTool, Hints, LoadError, Tool, ToolError, ToolResult, ToolSource};

/// Every tool by name: the seed's `tool_map`.
///
/// [`Registry::call`] is the one call path: it finds the tool (connecting an
/// upstream MCP server the first time one of its tools is needed), checks the
/// arguments, asks the tool for the call's hints and narrows them to its own, asks
/// the [`Approver`] if there is one, then runs it.
#[derive(Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<Entry>>,
    servers: BTreeMap<String, UpstreamServer>,
    approver: Option<Arc<dyn Approver>>,
}

/// A tool and its compiled input schema.
pub(crate) struct Entry {
    pub(crate) tool: DynTool,
    pub(crate) schema: InputSchema,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.tools.keys())
            .field("servers", &self.servers.keys())
            .field("approver", &self.approver.is_some())
            .finish()
    }
}

/// Every tool of a registry, upstream servers' included, from [`Registry::list`].
#[derive(Default)]
pub struct Listing {
    /// The tools, sorted by name.
    pub tools: Vec<DynTool>,
    /// Upstream servers that could not be listed (each a [`CallError::Connection`]),
    /// and `tools` entries in piton.toml a server does not have.
    pub errors: Vec<CallError>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. Its name must match `[A-Za-z0-9_-]{1,64}`, its description and
    /// input schema must fit [`check_spec_size`](crate::check_spec_size), its input
    /// schema must be an object schema, and no other tool
    /// may have its name: a duplicate is an error naming both sources, never a silent
    /// override.
    pub fn add(&mut self, tool: impl Tool + 'static) -> Result<(), LoadError> {
        self.add_shared(Arc::new(tool))
    }

    /// Adds a shared tool; see [`Registry::add`].
    pub fn add_shared(&mut self, tool: DynTool) -> Result<(), LoadError> {
        let fail = |kind| LoadError {
            plugin: tool.source(),
            kind,
        };
        let spec = tool.spec();
        check_tool_name(&spec.name).map_err(|e| fail(LoadErrorKind::Invalid(e)))?;
        check_spec_size(&spec.description, spec.input_schema.to_string().len())
            .map_err(|e| fail(LoadErrorKind::Invalid(e)))?;
        let schema = if tool.checks_whole_schema() {
            InputSchema::new(&spec.input_schema)
        } else {
            InputSchema::required_only(&spec.input_schema)
        }
        .map_err(|e| fail(LoadErrorKind::Invalid(e)))?;
        if let Some(other) = self.tools.get(&spec.name) {
            return Err(fail(LoadErrorKind::Duplicate {
                name: spec.name.clone(),
                other: other.tool.source(),
            }));
        }
        if let Some((server, _)) = spec.name.split_once("__")
            && self.servers.contains_key(server)
        {
            return Err(fail(LoadErrorKind::Invalid(format!(
                "tool `{}` is in the name space of MCP server `{server}` (mcp:{server}, \
                 piton.toml [mcp.{server}]): every `{server}__*` name is that server's; \
                 rename the tool (piton.toml [tools.NAME] name = ...)",
                spec.name
            ))));
        }
        self.tools
            .insert(spec.name.clone(), Arc::new(Entry { tool, schema }));
        Ok(())
    }

    /// Adds an upstream MCP server; its tools join as `{server}__{tool}` when it is
    /// first used (nothing connects here). Its name must be unique and no tool may
    /// already use its `{server}__` prefix.
    ///
    /// The whole `{server}__` name space is the server's, not only the names it lists:
    /// its tools are not known until it connects and may change at any time, so a tool
    /// added here with such a name (before or after the server) is refused, naming
    /// both sources. The CLI adds servers first, so piton.toml's servers keep their
    /// names and a wasm tool in their name space is the one refused.
    pub fn add_mcp(&mut self, server: UpstreamServer) -> Result<(), LoadError> {
        let name = server.name().to_owned();
        let fail = |message: String| LoadError {
            plugin: ToolSource::Mcp(name.clone()),
            kind: LoadErrorKind::Invalid(message),
        };
        if self.servers.contains_key(&name) {
            return Err(fail(format!(
                "MCP server `{name}` is added twice; give each server its own name"
            )));
        }
        let prefix = format!("{name}__");
        if let Some(entry) = self
            .tools
            .iter()
            .find_map(|(t, entry)| t.starts_with(&prefix).then_some(entry))
        {
            return Err(fail(format!(
                "MCP server `{name}` (piton.toml [mcp.{name}]) is not added: tool `{}` of {} \
                 is in its name space (every `{name}__*` name is the server's); rename the \
                 tool or the server",
                entry.tool.spec().name,
                entry.tool.source()
            )));
        }
        self.servers.insert(name, server);
        Ok(())
    }

    /// The upstream MCP servers, sorted by name.
    pub fn servers(&self) -> impl Iterator<Item = &UpstreamServer> {
        self.servers.values()
    }

    /// Asks `approver` before every call from now on (the seed's loop that asks
    /// before calls that are not read-only: see [`AllowByReadOnly`](crate::AllowByReadOnly)).
    pub fn set_approver(&mut self, approver: impl Approver + 'static) {
        self.approver = Some(Arc::new(approver));
    }

    /// The tool called `name`, if it is loaded here (upstream MCP servers' tools are
    /// found by [`Registry::find`] and [`Registry::list`], which may connect).
    pub fn get(&self, name: &str) -> Option<&DynTool> {
        self.tools.get(name).map(|e| &e.tool)
    }

    /// The tool called `name`, connecting its upstream MCP server if needed.
    pub async fn find(&self, name: &str) -> Result<DynTool, CallError> {
        self.entry(name, true).await.map(|e| e.tool.clone())
    }

    /// The tools loaded here (wasm and native), sorted by name; see
    /// [`Registry::list`] for every tool with the upstream servers' ones.
    pub fn tools(&self) -> impl Iterator<Item = &DynTool> {
        self.tools.values().map(|e| &e.tool)
    }

    /// Every tool, connecting each upstream server that is not connected yet (all at
    /// once). A server that cannot be reached is an error in the listing; the other
    /// tools are still listed.
    pub async fn list(&self) -> Listing {
        let mut tools: BTreeMap<String, DynTool> = self
            .tools
            .iter()
            .map(|(name, e)| (name.clone(), e.tool.clone()))
            .collect();
        let mut errors = Vec::new();
        let listed = futures::future::join_all(
            self.servers
                .values()
                .map(|s| async move { (s, s.entries(true).await) }),
        )
        .await;
        for (server, result) in listed {
            match result {
                Ok(entries) => {
                    for name in server.missing(&entries) {
                        errors.push(CallError::Connection {
                            server: server.name().to_owned(),
                            message: format!(
                                "has no tool `{name}` (named in its `tools` list); it has: {}",
                                entries
                                    .iter()
                                    .map(|e| e.tool.spec().name.clone())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        });
                    }
                    for entry in entries.iter() {
                        tools
                            .entry(entry.tool.spec().name.clone())
                            .or_insert_with(|| entry.tool.clone());
                    }
                }
                Err(error) => errors.push(error),
            }
        }
        Listing {
            tools: tools.into_values().collect(),
            errors,
        }
    }

    /// Every name known without connecting, sorted: the tools loaded here and those
    /// of upstream servers already listed.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.keys().cloned().collect();
        for server in self.servers.values() {
            names.extend(server.cached_names());
        }
        names.sort();
        names.dedup();
        names
    }

    /// How many tools are loaded here (upstream servers' tools not counted).
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is loaded here and no upstream server is added.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.servers.is_empty()
    }

    /// The entry of `name`: a tool loaded here, or `{server}__{tool}` of an upstream
    /// server (connected first if needed; with `reconnect`, a closed connection is
    /// made again, else its tools are still found so that the call reports the loss).
    async fn entry(&self, name: &str, reconnect: bool) -> Result<Arc<Entry>, CallError> {
        if let Some(entry) = self.tools.get(name) {
            return Ok(entry.clone());
        }
        if let Some((server, _)) = name.split_once("__")
            && let Some(server) = self.servers.get(server)
        {
            let entries = server.entries(reconnect).await?;
            if let Some(entry) = entries.iter().find(|e| e.tool.spec().name == name) {
                return Ok(entry.clone());
            }
        }
        Err(CallError::UnknownTool {
            name: name.to_owned(),
            known: self.names(),
        })
    }

    /// Calls a tool.
    ///
    /// Arguments that are not a JSON object, or that break the input schema, are an
    /// input error and the tool is never entered. `Ok` holds what the model gets
    /// (content or an error result); `Err` stops the run (unknown tool, trap).
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolResult, CallError> {
        let entry = self.entry(name, false).await?;
        if !args.is_object() {
            return Ok(Err(not_an_object(&args)));
        }
        if let Err(error) = entry.schema.check(&args) {
            return Ok(Err(error));
        }
        let args = match args {
            Value::Object(args) => args,
            other => return Ok(Err(not_an_object(&other))),
        };
        let hints = call_hints(entry.tool.as_ref(), &args).await?;
        if let Some(approver) = &self.approver {
            let request = ApprovalRequest {
                tool: entry.tool.as_ref(),
                args: &args,
                hints,
            };
            if let Decision::Deny(reason) = approver.approve(&request).await {
                tracing::info!(tool = name, %reason, "call not approved");
                return Ok(Err(ToolError::Failed(format!(
                    "the call was not approved: {reason}"
                ))));
            }
        }
        // `idempotent` is not a capability: it only lets the host try again once after a
        // fault of its own (not the tool's), since a second run has no further effect.
        match entry.tool.call(&args, hints).await {
            Err(CallError::Host { message, .. }) if hints.is_idempotent() => {
                tracing::warn!(tool = name, %message, "host fault in an idempotent call; retrying once");
                entry.tool.call(&args, hints).await
            }
            result => result,
        }
    }

    /// The hints of one call of `name` with `args`: the tool's `hints_for` answer
    /// narrowed to the tool's own hints (a wider answer is clamped and logged). These
    /// are the hints the call's sandbox is built from.
    pub async fn hints_for(&self, name: &str, args: &Args) -> Result<Hints, CallError> {
        let entry = self.entry(name, true).await?;
        call_hints(entry.tool.as_ref(), args).await
    }

    /// Runs a batch of calls as the seed does: the calls of `parallel` tools together,
    /// then each call of a tool with `parallel = false` alone, in order. Results come
    /// back in the order of `calls`. An unknown tool is an error in its own slot.
    pub async fn call_batch(
        &self,
        calls: Vec<(String, Value)>,
    ) -> Vec<Result<ToolResult, CallError>> {
        let mut results: Vec<Option<Result<ToolResult, CallError>>> =
            calls.iter().map(|_| None).collect();
        let (together, alone): (Vec<_>, Vec<_>) = calls
            .into_iter()
            .enumerate()
            .partition(|(_, (name, _))| self.get(name).is_none_or(|t| t.spec().parallel));
        let parallel = futures::future::join_all(
            together
                .into_iter()
                .map(|(i, (name, args))| async move { (i, self.call(&name, args).await) }),
        )
        .await;
        for (i, result) in parallel {
            results[i] = Some(result);
        }
        for (i, (name, args)) in alone {
            results[i] = Some(self.call(&name, args).await);
        }
        results.into_iter().flatten().collect()
    }
}

/// A tool that is already read-only and closed-world has nothing narrower to say, so
/// it is not asked (this saves an instance per call).
async fn call_hints(tool: &dyn Tool, args: &Args) -> Result<Hints, CallError> {
    let bound = tool.hints();
    if bound == Hints::read_only().open_world(false) {
        return Ok(bound);
    }
    let Some(answer) = tool.hints_for(args).await? else {
        return Ok(bound);
    };
    let (hints, widened) = answer.narrowed_by(bound);
    if widened {
        tracing::warn!(
            tool = tool.spec().name,
            claimed = %answer,
            allowed = %bound,
            "hints-for claimed more than the tool's hints; clamped"
        );
    }
    Ok(hints)
}

fn not_an_object(args: &Value) -> ToolError {
    ToolError::Input(piton_wit::not_an_object(args))
}
