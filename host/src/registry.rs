//! The tool map: names to tools and tool groups, and the call path every tool
//! shares (find, check the arguments, narrow the hints, approve, run).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::approve::{ApprovalRequest, Approver, Decision};
use crate::call::CallContext;
use crate::consent::{Channel, Consent, Verdict};
use crate::error::{CallError, LoadError, LoadErrorKind};
use crate::group::{CheckedTool, DynGroup, ToolGroup, check_group_name};
use crate::observe::{Approval, Facts, Observer};
use crate::tool::{Args, Caller, DynTool, Nested, Tool, ToolError, ToolResult};
use piton_wit::Hints;

/// Every tool by name: the seed's `tool_map`.
///
/// It holds tools loaded here (wasm and native) and [tool groups](ToolGroup) (upstream
/// MCP servers) whose tools join as `{group}__{tool}` when first listed.
/// [`Registry::call`] is the one call path: it finds the tool (listing its group the
/// first time one of its tools is needed), checks the arguments, asks the tool for
/// the call's hints and narrows them to its own, asks the [`Approver`] if there is
/// one, then runs it, watched by its [`Observer`].
pub struct Registry {
    tools: BTreeMap<String, Arc<CheckedTool>>,
    groups: BTreeMap<String, DynGroup>,
    approver: Option<Arc<dyn Approver>>,
    /// [`Observer::disabled`] until one is set.
    observer: Arc<Observer>,
    consent: Option<Arc<Consent>>,
    /// The metric handles of the tools loaded here, made once (see `observe`).
    stats: HashMap<String, crate::observe::ToolStats>,
    /// With `[code] only`: the one tool clients see and call (code mode's); the
    /// others are reached only through it.
    only: Option<String>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            tools: BTreeMap::new(),
            groups: BTreeMap::new(),
            approver: None,
            observer: Observer::disabled(),
            consent: None,
            stats: HashMap::new(),
            only: None,
        }
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.tools.keys())
            .field("groups", &self.groups.keys())
            .field("approver", &self.approver.is_some())
            .field("only", &self.only)
            .finish()
    }
}

/// Every tool of a registry, its groups' included, from [`Registry::list`].
#[derive(Default)]
pub struct Listing {
    /// The tools, sorted by name.
    pub tools: Vec<DynTool>,
    /// Groups that could not be listed (each a [`CallError::Connection`] for an
    /// upstream server), and tools a group's configuration names that it lacks.
    pub errors: Vec<CallError>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. It must pass [`CheckedTool::new`] (name, sizes, an object input
    /// schema), and no other tool may have its name
    /// nor a group its `{group}__` name space: a duplicate is an error naming both
    /// sources, never a silent override.
    pub fn add(&mut self, tool: impl Tool + 'static) -> Result<(), LoadError> {
        self.add_shared(Arc::new(tool))
    }

    /// Adds a shared tool; see [`Registry::add`].
    pub fn add_shared(&mut self, tool: DynTool) -> Result<(), LoadError> {
        let fail = |kind| LoadError {
            plugin: tool.source(),
            kind,
        };
        let checked = CheckedTool::new(tool.clone())
            .map_err(|e| fail(LoadErrorKind::Invalid(e.to_string())))?;
        let name = &tool.spec().name;
        if let Some(other) = self.tools.get(name) {
            return Err(fail(LoadErrorKind::Duplicate {
                name: name.clone(),
                other: other.tool().source(),
            }));
        }
        if let Some((prefix, _)) = name.split_once("__")
            && let Some(group) = self.groups.get(prefix)
        {
            return Err(fail(LoadErrorKind::Invalid(format!(
                "tool `{name}` is in the name space of {}: every `{prefix}__*` name is its; \
                 rename the tool (piton.toml [tools.NAME] name = ...)",
                group.described()
            ))));
        }
        if let Some(stats) = self.observer.tool_stats(name) {
            self.stats.insert(name.clone(), stats);
        }
        self.tools.insert(name.clone(), Arc::new(checked));
        Ok(())
    }

    /// Adds a tool group (an [`UpstreamServer`](crate::upstream::UpstreamServer));
    /// its tools join as `{group}__{tool}` when it is first listed (nothing connects
    /// here). Its name must be unique and no tool may already use its `{group}__`
    /// prefix.
    ///
    /// The whole `{group}__` name space is the group's, not only the names it lists:
    /// its tools are not known until it is listed and may change at any time, so a
    /// tool added here with such a name (before or after the group) is refused,
    /// naming both sources. The loader adds groups first, so piton.toml's servers
    /// keep their names and a wasm tool in their name space is the one refused.
    pub fn add_group(&mut self, group: impl ToolGroup + 'static) -> Result<(), LoadError> {
        self.add_shared_group(Arc::new(group))
    }

    /// Adds a shared tool group; see [`Registry::add_group`].
    pub fn add_shared_group(&mut self, group: DynGroup) -> Result<(), LoadError> {
        let name = group.name().to_owned();
        let fail = |message: String| LoadError {
            plugin: group.source(),
            kind: LoadErrorKind::Invalid(message),
        };
        check_group_name(&name).map_err(|e| fail(format!("{}: {e}", group.described())))?;
        if self.groups.contains_key(&name) {
            return Err(fail(format!(
                "{} is added twice; give each its own name",
                group.described()
            )));
        }
        let prefix = format!("{name}__");
        if let Some(entry) = self
            .tools
            .iter()
            .find_map(|(t, entry)| t.starts_with(&prefix).then_some(entry))
        {
            return Err(fail(format!(
                "{} is not added: tool `{}` of {} is in its name space (every `{name}__*` \
                 name is its); rename the tool or the group",
                group.described(),
                entry.tool().spec().name,
                entry.tool().source()
            )));
        }
        self.groups.insert(name, group);
        Ok(())
    }

    /// The tool groups, sorted by name.
    pub fn groups(&self) -> impl Iterator<Item = &DynGroup> {
        self.groups.values()
    }

    /// Closes what every group holds open (upstream servers' connections and
    /// processes), all at once; a later use opens them again.
    pub async fn close(&self) {
        futures::future::join_all(self.groups.values().map(|group| group.close())).await;
    }

    /// Asks `approver` before every call from now on (the seed's loop that asks
    /// before calls that are not read-only: see [`AllowByReadOnly`](crate::approve::AllowByReadOnly)).
    pub fn set_approver(&mut self, approver: impl Approver + 'static) {
        self.approver = Some(Arc::new(approver));
    }

    /// Asks the person, through the caller's MCP client, before the calls `consent`
    /// names: see [`Registry::call_asking`]. `piton serve` sets it from piton.toml's
    /// `[approve]`.
    pub fn set_consent(&mut self, consent: Arc<Consent>) {
        self.consent = Some(consent);
    }

    /// The consent policy, if one is set.
    pub fn consent(&self) -> Option<&Arc<Consent>> {
        self.consent.as_ref()
    }

    /// Serves the registry as the tool `name` alone (`[code] only`): [`Registry::list`]
    /// lists it and nothing else, and a call of any other name is an unknown tool.
    /// The other tools are still there for the calls `name` makes through
    /// [`Tool::call_through`].
    pub fn set_only(&mut self, name: &str) {
        self.only = Some(name.to_owned());
    }

    /// The one tool served, if [`Registry::set_only`] said so.
    pub fn only(&self) -> Option<&str> {
        self.only.as_deref()
    }

    /// Counts every call in `observer`'s metrics and writes its audit record, from
    /// now on. The metric series of tools `observer` knows that this registry lacks
    /// are dropped (a reload left them out).
    pub fn set_observer(&mut self, observer: Arc<Observer>) {
        self.stats = self
            .tools
            .keys()
            .filter_map(|name| Some((name.clone(), observer.tool_stats(name)?)))
            .collect();
        observer.keep_only(&self.names());
        self.observer = observer;
    }

    /// The observer set by [`Registry::set_observer`], if one was.
    pub fn observer(&self) -> Option<&Arc<Observer>> {
        (!self.observer.is_disabled()).then_some(&self.observer)
    }

    /// The tool called `name` if it is loaded here, without listing any group.
    pub fn get(&self, name: &str) -> Option<&DynTool> {
        self.tools.get(name).map(|e| e.tool())
    }

    /// The tool called `name`, listing its group if needed (which may connect).
    pub async fn find(&self, name: &str) -> Result<DynTool, CallError> {
        self.entry(name, true).await.map(|e| e.tool().clone())
    }

    /// Every tool a client sees, listing each group that is not listed yet (all at
    /// once). A group that cannot be listed is an error in the listing; the other
    /// tools are still listed. With [`Registry::set_only`], the one tool.
    pub async fn list(&self) -> Listing {
        let mut listing = self.list_all().await;
        if let Some(only) = &self.only {
            listing.tools.retain(|tool| tool.spec().name == *only);
        }
        listing
    }

    /// Every tool, as [`Registry::list`] lists them, whatever
    /// [`Registry::set_only`] says: the tools code mode's programs may call.
    pub async fn list_all(&self) -> Listing {
        let mut tools: BTreeMap<String, DynTool> = self
            .tools
            .iter()
            .map(|(name, e)| (name.clone(), e.tool().clone()))
            .collect();
        let mut errors = Vec::new();
        let listed = futures::future::join_all(
            self.groups
                .values()
                .map(|g| async move { (g, g.tools(true).await) }),
        )
        .await;
        for (group, result) in listed {
            match result {
                Ok(listed) => {
                    errors.extend(group.problems(&listed));
                    let prefix = format!("{}__", group.name());
                    for entry in listed.iter() {
                        // A group lists only its own name space; anything else is
                        // left out, as calls would never reach it.
                        if !entry.tool().spec().name.starts_with(&prefix) {
                            tracing::warn!(
                                group = group.name(),
                                tool = entry.tool().spec().name,
                                "a tool outside the group's name space is left out"
                            );
                            continue;
                        }
                        tools
                            .entry(entry.tool().spec().name.clone())
                            .or_insert_with(|| entry.tool().clone());
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

    /// Every name known without listing, sorted: the tools loaded here and those of
    /// groups already listed.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.keys().cloned().collect();
        for group in self.groups.values() {
            names.extend(group.known_names());
        }
        names.sort();
        names.dedup();
        names
    }

    /// How many tools are loaded here (groups' tools not counted).
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is loaded here and no group is added.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.groups.is_empty()
    }

    /// The entry of `name`: a tool loaded here, or `{group}__{tool}` of a group
    /// (listed first if needed; with `refresh`, a closed connection is made again,
    /// else its tools are still found so that the call reports the loss).
    async fn entry(&self, name: &str, refresh: bool) -> Result<Arc<CheckedTool>, CallError> {
        if let Some(entry) = self.tools.get(name) {
            return Ok(entry.clone());
        }
        if let Some((group, _)) = name.split_once("__")
            && let Some(group) = self.groups.get(group)
        {
            let listed = group.tools(refresh).await?;
            if let Some(entry) = listed.iter().find(|e| e.tool().spec().name == name) {
                return Ok(entry.clone());
            }
        }
        Err(CallError::UnknownTool {
            name: name.to_owned(),
            known: self.names(),
        })
    }

    /// Calls a tool, in a new [`CallContext`] (no trace context).
    ///
    /// Arguments that are not a JSON object, or that break the input schema, are an
    /// input error and the tool is never entered. `Ok` holds what the model gets
    /// (content or an error result); `Err` stops the run (unknown tool, trap).
    ///
    /// With an [`Observer`], the call is counted in its metrics and gets an audit
    /// record, whatever its outcome.
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolResult, CallError> {
        self.call_with(&CallContext::new(), name, args).await
    }

    /// Calls a tool in `ctx` ([`Registry::call_with`]), for a client that can be
    /// asked over `channel` when the [`Consent`] policy asks about the call (see
    /// [`Registry::set_consent`]).
    pub async fn call_asking(
        &self,
        ctx: &CallContext,
        name: &str,
        args: Value,
        channel: &Channel<'_>,
    ) -> Result<ToolResult, CallError> {
        if let Some(only) = self.only.as_deref().filter(|only| *only != name) {
            let watch = self.observer.watch(ctx, name, &args);
            let result = Err(CallError::UnknownTool {
                name: name.to_owned(),
                known: vec![only.to_owned()],
            });
            watch.finish(&result);
            return result;
        }
        self.observed(ctx, name, args, channel).await.0
    }

    /// Calls a tool watched by the observer; the flag says whether the call was
    /// refused before it ran (not approved, or the person did not allow it).
    async fn observed(
        &self,
        ctx: &CallContext,
        name: &str,
        args: Value,
        channel: &Channel<'_>,
    ) -> (Result<ToolResult, CallError>, bool) {
        let mut watch = self.observer.watch(ctx, name, &args);
        let result = match self.entry(name, false).await {
            Ok(entry) => {
                watch.found(entry.tool().as_ref(), self.stats.get(name));
                self.call_entry(ctx, &entry, name, args, channel, &mut watch.facts)
                    .await
            }
            Err(error) => Err(error),
        };
        let refused = matches!(watch.facts.approval, Approval::Deny(_))
            || watch.facts.consent.is_some_and(|c| !c.runs());
        watch.finish(&result);
        (result, refused)
    }

    /// Records a `tools/call` of `name` refused before it reached the tool: a
    /// 2026-07-28 retry whose answer to an upstream server's question no waiting
    /// call took, because `why`. Audited and counted like a call that failed, its
    /// answer noted as refused; gives the error result the model reads.
    pub(crate) fn refused_answer(
        &self,
        ctx: &CallContext,
        name: &str,
        args: &Value,
        why: &str,
    ) -> ToolResult {
        let mut watch = self.observer.watch(ctx, name, args);
        if let Some(tool) = self.get(name) {
            watch.found(tool.as_ref(), self.stats.get(name));
        }
        ctx.notes().upstream_question(
            crate::call::notes::QuestionOutcome::AnswerRefused,
            Some(why),
        );
        let result = Err(ToolError::Failed(why.to_owned()));
        watch.finish(&Ok(result.clone()));
        result
    }

    /// Calls a tool in `ctx`, a context the caller made (a transport, with the
    /// trace context its client sent); see [`Registry::call`]. A context is one
    /// call's: what its sandboxes note is read out when the call ends.
    pub async fn call_with(
        &self,
        ctx: &CallContext,
        name: &str,
        args: Value,
    ) -> Result<ToolResult, CallError> {
        self.call_asking(ctx, name, args, &Channel::Cannot).await
    }

    /// Calls the tool of `entry`; `facts` learns the call's hints and approval.
    async fn call_entry(
        &self,
        ctx: &CallContext,
        entry: &CheckedTool,
        name: &str,
        args: Value,
        channel: &Channel<'_>,
        facts: &mut Facts,
    ) -> Result<ToolResult, CallError> {
        if !args.is_object() {
            return Ok(Err(not_an_object(&args)));
        }
        let args = match entry.check_args(args).await? {
            Ok(args) => args,
            Err(error) => return Ok(Err(error)),
        };
        let args = match args {
            Value::Object(args) => args,
            other => return Ok(Err(not_an_object(&other))),
        };
        let hints = call_hints(ctx, entry.tool().as_ref(), &args).await?;
        facts.hints = Some(hints);
        // A tool whose calls only call other tools (code mode) is not asked about:
        // each call it makes is, when it makes it.
        let asked = !entry.tool().only_calls_tools();
        if let Some(approver) = self.approver.as_ref().filter(|_| asked) {
            let request = ApprovalRequest {
                tool: entry.tool().as_ref(),
                args: &args,
                hints,
            };
            let decision = approver.approve(&request).await;
            if let Decision::Deny(reason) = decision {
                tracing::info!(tool = name, %reason, "call not approved");
                let error = format!("the call was not approved: {reason}");
                facts.approval = Approval::Deny(reason);
                return Ok(Err(ToolError::Failed(error)));
            }
            facts.approval = Approval::Allow;
        }
        if let Some(consent) = self.consent.as_ref().filter(|_| asked) {
            match consent
                .decide(entry.tool().as_ref(), &args, hints, channel)
                .await
            {
                Verdict::Run(outcome) => facts.consent = Some(outcome),
                Verdict::Refuse(outcome, message) => {
                    tracing::info!(
                        tool = name,
                        decision = outcome.as_str(),
                        "call not approved"
                    );
                    facts.consent = Some(outcome);
                    return Ok(Err(ToolError::Failed(message)));
                }
                Verdict::Ask { question, state } => {
                    facts.consent = Some(crate::consent::Outcome::Asked);
                    return Err(CallError::InputRequired {
                        tool: name.to_owned(),
                        message: question.message,
                        schema: question.schema,
                        state,
                    });
                }
            }
        }
        // `idempotent` is not a capability: it only lets the host try again once after a
        // fault of its own (not the tool's), since a second run has no further effect.
        let tool = entry.tool();
        match tool.call_through(self, ctx, &args, hints).await {
            Err(CallError::Host { message, .. }) if hints.is_idempotent() => {
                tracing::warn!(tool = name, %message, "host fault in an idempotent call; retrying once");
                tool.call_through(self, ctx, &args, hints).await
            }
            result => result,
        }
    }

    /// The hints of one call of `name` with `args`: the tool's `hints_for` answer
    /// narrowed to the tool's own hints (a wider answer is clamped and logged). These
    /// are the hints the call's sandbox is built from.
    pub async fn hints_for(&self, name: &str, args: &Args) -> Result<Hints, CallError> {
        let entry = self.entry(name, true).await?;
        call_hints(&CallContext::new(), entry.tool().as_ref(), args).await
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

/// A program's calls (code mode) take the client's path, whatever
/// [`Registry::set_only`] says: the person is asked over the run's asker, which
/// carries the question to their client (a 2025-11-25 session's
/// `elicitation/create`, or a 2026-07-28 `input_required` while the run waits on
/// this replica); a client that cannot be asked gets the refusal.
#[async_trait::async_trait]
impl Caller for Registry {
    async fn call_nested(&self, ctx: &CallContext, name: &str, args: Value) -> Nested {
        let scope = ctx.scope().unwrap_or("program");
        let channel = match ctx.asker() {
            Some(asker) => Channel::Session {
                asker: asker.as_ref(),
                scope,
            },
            None => Channel::Cannot,
        };
        match self.observed(ctx, name, args, &channel).await {
            (Ok(Err(ToolError::Failed(message))), true) => Nested::Refused(message),
            (Ok(result), _) => Nested::Ran(result),
            (Err(error), _) => Nested::Stopped(error),
        }
    }
}

/// A tool that is already read-only and closed-world has nothing narrower to say, so
/// it is not asked (this saves an instance per call).
async fn call_hints(ctx: &CallContext, tool: &dyn Tool, args: &Args) -> Result<Hints, CallError> {
    let bound = tool.hints();
    if bound == Hints::read_only().open_world(false) {
        return Ok(bound);
    }
    let Some(answer) = tool.hints_for(ctx, args).await? else {
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
