//! A component's tools from what it declares: asked of its code in an instance with
//! no capabilities (or taken from specs kept in the cache, see `specs`), then each
//! spec and hints checked as a load checks them. A `plugin` gives one tool; a
//! `toolbox-plugin` gives one [`WasmTool`] per tool it declares, all sharing its code.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::bindings::{self, ToolDecl};
use super::code::Code;
use super::diagnose::{self, World};
use super::instance::{FUEL_EXHAUSTED, Instances, Role, SPEC_FUEL, TOOLBOX_FUEL, from_wit_hints};
use super::runtime::WasmRuntime;
use super::tool::WasmTool;
use super::trap::trap_text;
use crate::config::ToolConfig;
use crate::error::{CallError, LoadError, LoadErrorKind};
use crate::source::ToolSource;
use crate::tool::{ComponentInfo, ToolSpec};

/// The most tools one toolbox may declare.
const MAX_TOOLS: usize = 128;

/// Asking a component what it declares failed: the trap, and how many bytes piton
/// reads of the answer.
pub(super) struct ReadFailed {
    error: CallError,
    fuel: usize,
}

impl WasmRuntime {
    /// What the component of `code` declares, asked of its code in an instance with
    /// no capabilities under the default limits: a `plugin`'s one tool (which
    /// always has `hints-for`), or a toolbox's tools.
    pub(super) async fn declared(&self, code: &Arc<Code>) -> Result<Vec<ToolDecl>, ReadFailed> {
        match code.world() {
            World::Plugin => {
                let instances = Instances::new(self.clone(), code.clone(), Role::Plugin);
                let (spec, hints) = instances.read_plugin().await.map_err(|error| ReadFailed {
                    error,
                    fuel: SPEC_FUEL,
                })?;
                Ok(vec![ToolDecl {
                    spec,
                    hints,
                    has_hints_for: true,
                }])
            }
            World::Toolbox => {
                let asker = Instances::new(self.clone(), code.clone(), asker());
                asker.read_toolbox().await.map_err(|error| ReadFailed {
                    error,
                    fuel: TOOLBOX_FUEL,
                })
            }
        }
    }

    /// The tools of `code` that `decls` declare, each spec and hints checked.
    pub(super) fn tools_from(
        &self,
        code: &Arc<Code>,
        source: &ToolSource,
        info: &ComponentInfo,
        decls: Vec<ToolDecl>,
    ) -> Result<Vec<WasmTool>, LoadError> {
        let fail = |message: String| LoadError {
            plugin: source.clone(),
            kind: LoadErrorKind::Invalid(message),
        };
        if code.world() == World::Plugin {
            let instances = Instances::new(self.clone(), code.clone(), Role::Plugin);
            let [ToolDecl { spec, hints, .. }] = <[ToolDecl; 1]>::try_from(decls)
                .map_err(|decls| fail(format!("a plugin of {} tools", decls.len())))?;
            let spec = spec_of(spec).map_err(fail)?;
            let hints = from_wit_hints(hints).map_err(|e| fail(format!("its hints: {e}")))?;
            let tool = WasmTool::new(
                instances,
                source.clone(),
                info.clone(),
                spec,
                hints,
                &ToolConfig::default(),
            )
            .map_err(|e| fail(e.to_string()))?;
            return Ok(vec![tool]);
        }
        if decls.is_empty() {
            return Err(fail("a toolbox that declares no tools".to_owned()));
        }
        if decls.len() > MAX_TOOLS {
            return Err(fail(format!(
                "a toolbox of {} tools, more than piton loads from one component \
                 ({MAX_TOOLS}); split it",
                decls.len()
            )));
        }
        // The toolbox's tools share its instances made ahead.
        let shared = Instances::new(self.clone(), code.clone(), asker());
        let mut names = BTreeSet::new();
        let mut tools = Vec::with_capacity(decls.len());
        for ToolDecl {
            spec,
            hints,
            has_hints_for,
        } in decls
        {
            let name = spec.name.clone();
            if !names.insert(name.clone()) {
                return Err(fail(format!(
                    "a toolbox that declares two tools named `{}`; give each tool its own name",
                    diagnose::one_line(&name)
                )));
            }
            let named = |m: String| fail(format!("its tool `{}`: {m}", diagnose::one_line(&name)));
            let instances = shared.sibling(Role::Toolbox {
                tool: Arc::from(name.as_str()),
                has_hints_for,
            });
            let spec = spec_of(spec).map_err(named)?;
            let hints = from_wit_hints(hints).map_err(|e| named(format!("its hints: {e}")))?;
            tools.push(
                WasmTool::new(
                    instances,
                    source.clone(),
                    info.clone(),
                    spec,
                    hints,
                    &ToolConfig::default(),
                )
                .map_err(|e| named(e.to_string()))?,
            );
        }
        Ok(tools)
    }
}

/// The role that asks a toolbox for its tools: no tool of its own.
fn asker() -> Role {
    Role::Toolbox {
        tool: Arc::from(""),
        has_hints_for: false,
    }
}

/// The host's spec from the guest's, its sizes and schema checked.
fn spec_of(spec: bindings::plugin::piton::tool::types::ToolSpec) -> Result<ToolSpec, String> {
    crate::tool::check_spec_size(&spec.description, spec.input_schema.len())
        .map_err(|e| e.to_string())?;
    Ok(ToolSpec {
        input_schema: serde_json::from_str(&spec.input_schema)
            .map_err(|e| format!("its input schema is not JSON: {e}"))?,
        name: spec.name,
        description: spec.description,
        parallel: spec.parallel,
    })
}

impl ReadFailed {
    /// As a load error of `source`: over the bytes piton reads says how much that is.
    pub(super) fn of(self, source: &ToolSource) -> LoadError {
        let Self { error, fuel } = self;
        let text = trap_text(error);
        LoadError {
            plugin: source.clone(),
            kind: if text.contains(FUEL_EXHAUSTED) {
                LoadErrorKind::Invalid(format!(
                    "{} over {}, more than piton reads (a description may have \
                     at most {}, an input schema at most {} of JSON); shorten them",
                    if fuel == TOOLBOX_FUEL {
                        "its tools' specs are together"
                    } else {
                        "its spec is"
                    },
                    crate::limits::format_size(fuel as u64),
                    crate::limits::format_size(crate::tool::MAX_DESCRIPTION as u64),
                    crate::limits::format_size(crate::tool::MAX_INPUT_SCHEMA as u64),
                ))
            } else {
                LoadErrorKind::Trap(text)
            },
        }
    }

    /// In words.
    pub(super) fn text(self) -> String {
        trap_text(self.error)
    }
}
