//! The tool map: names to tools, and the call path every tool shares.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::LoadErrorKind;
use crate::schema::InputSchema;
use crate::tool::check_tool_name;
use crate::{Args, CallError, DynTool, Hints, LoadError, Tool, ToolError, ToolResult};

/// Every tool by name: the seed's `tool_map`.
///
/// [`Registry::call`] is the one call path: it finds the tool, checks the arguments,
/// asks the tool for the call's hints and narrows them to its own, then runs it.
#[derive(Default)]
pub struct Registry {
    tools: BTreeMap<String, Entry>,
}

struct Entry {
    tool: DynTool,
    schema: InputSchema,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. Its name must match `[A-Za-z0-9_-]{1,64}`, its input schema must
    /// be an object schema, its hints must agree with each other, and no other tool
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
        let schema =
            InputSchema::new(&spec.input_schema).map_err(|e| fail(LoadErrorKind::Invalid(e)))?;
        tool.hints()
            .validate()
            .map_err(|e| fail(LoadErrorKind::Invalid(format!("its hints: {e}"))))?;
        if let Some(other) = self.tools.get(&spec.name) {
            return Err(fail(LoadErrorKind::Duplicate {
                name: spec.name.clone(),
                other: other.tool.source(),
            }));
        }
        self.tools.insert(spec.name.clone(), Entry { tool, schema });
        Ok(())
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&DynTool> {
        self.tools.get(name).map(|e| &e.tool)
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &DynTool> {
        self.tools.values().map(|e| &e.tool)
    }

    /// Every name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Calls a tool.
    ///
    /// Arguments that are not a JSON object, or that break the input schema, are an
    /// input error and the tool is never entered. `Ok` holds what the model gets
    /// (content or an error result); `Err` stops the run (unknown tool, trap).
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolResult, CallError> {
        let Some(entry) = self.tools.get(name) else {
            return Err(CallError::UnknownTool {
                name: name.to_owned(),
                known: self.names(),
            });
        };
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
        // `idempotent` is not a capability: it only lets the host try again once after a
        // fault of its own (not the tool's), since a second run has no further effect.
        match entry.tool.call(&args, hints).await {
            Err(CallError::Host { message, .. }) if hints.idempotent => {
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
        match self.tools.get(name) {
            Some(entry) => call_hints(entry.tool.as_ref(), args).await,
            None => Err(CallError::UnknownTool {
                name: name.to_owned(),
                known: self.names(),
            }),
        }
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
    if bound == Hints::read_only(false) {
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
    let kind = match args {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    ToolError::Input(format!("the arguments must be a JSON object, not {kind}"))
}
