//! Loading a component file as tools: compile (or take from the compile cache), find
//! which piton world it exports, and read its tools' specs and hints in an instance
//! with no capabilities. A `plugin` gives one tool; a `toolbox-plugin` gives one
//! [`WasmTool`] per tool it declares, all sharing one pre-linked component.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::bindings::{self, PluginPre, ToolboxPluginPre};
use super::diagnose::{self, World};
use super::runtime::WasmRuntime;
use super::tool::{
    FUEL_EXHAUSTED, Guest, Pre, SPEC_FUEL, WasmTool, from_wit_hints, root_message, trap_text,
};
use crate::error::{LoadError, LoadErrorKind};
use crate::grants::Capabilities;
use crate::limits::Limits;
use crate::source::ToolSource;
use crate::tool::{ComponentInfo, Tool as _, ToolSpec};

/// The most tools one toolbox may declare.
const MAX_TOOLS: usize = 128;

/// The most bytes the host copies out of a toolbox's `tools` (every spec together).
const TOOLBOX_FUEL: usize = 8 << 20;

impl WasmRuntime {
    /// Loads the component in `path` as one tool (a `plugin`, or a toolbox of one
    /// tool); see [`WasmRuntime::load_file_tools`] for any toolbox.
    pub async fn load_file(&self, path: &Path) -> Result<WasmTool, LoadError> {
        let source = ToolSource::File(path.to_path_buf());
        one_tool(source, self.load_file_tools(path).await?)
    }

    /// Loads the component in `path` as its tools: one for a `plugin`, each tool of a
    /// `toolbox-plugin`.
    pub async fn load_file_tools(&self, path: &Path) -> Result<Vec<WasmTool>, LoadError> {
        let source = ToolSource::File(path.to_path_buf());
        if tokio::fs::metadata(path).await.is_ok_and(|m| m.is_dir()) {
            return Err(LoadError {
                plugin: source,
                kind: LoadErrorKind::Folder,
            });
        }
        match tokio::fs::read(path).await {
            Ok(bytes) => self.load_tools(source, bytes).await,
            Err(e) => Err(LoadError {
                plugin: source,
                kind: LoadErrorKind::Io(e),
            }),
        }
    }

    /// Loads a component from its bytes as one tool (a `plugin`, or a toolbox of one
    /// tool); see [`WasmRuntime::load_tools`] for any toolbox.
    pub async fn load(&self, source: ToolSource, bytes: Vec<u8>) -> Result<WasmTool, LoadError> {
        one_tool(source.clone(), self.load_tools(source, bytes).await?)
    }

    /// Loads a component from its bytes: compiles it (or takes it from the compile
    /// cache), checks that it fits the `plugin` or the `toolbox-plugin` world, and
    /// reads its tools' specs and hints in an instance with no capabilities.
    pub async fn load_tools(
        &self,
        source: ToolSource,
        bytes: Vec<u8>,
    ) -> Result<Vec<WasmTool>, LoadError> {
        let fail = |kind| LoadError {
            plugin: source.clone(),
            kind,
        };
        if let Some(problem) = diagnose::header_problem(&bytes) {
            return Err(fail(LoadErrorKind::Compile(problem)));
        }
        let len = bytes.len();
        let runtime = self.clone();
        let (component, info, exports) = tokio::task::spawn_blocking(move || {
            let sha256 = hex::encode(Sha256::digest(&bytes));
            let component = runtime.compile(&bytes, &sha256)?;
            let engine = &runtime.inner.engine;
            let imports = component
                .component_type()
                .imports(engine)
                .map(|(name, _)| name.to_owned())
                .collect();
            let exports: Vec<String> = component
                .component_type()
                .exports(engine)
                .map(|(name, _)| name.to_owned())
                .collect();
            let info = ComponentInfo {
                sha256,
                size: bytes.len() as u64,
                imports,
            };
            wasmtime::Result::Ok((component, info, exports))
        })
        .await
        .map_err(|e| fail(LoadErrorKind::Compile(diagnose::one_line(&e.to_string()))))?
        .map_err(|e| {
            fail(LoadErrorKind::Compile(diagnose::compile_problem(
                &root_message(&e),
                len,
            )))
        })?;
        let world = diagnose::world_of(&exports).map_err(|p| fail(LoadErrorKind::Contract(p)))?;

        let does_not_fit = |e: wasmtime::Error| {
            let name = match world {
                World::Plugin => "plugin",
                World::Toolbox => "toolbox-plugin",
            };
            fail(LoadErrorKind::Contract(format!(
                "does not fit the piton:tool@0.1 `{name}` world: {}",
                diagnose::one_line(&root_message(&e))
            )))
        };
        let instance_pre = self
            .inner
            .linker
            .instantiate_pre(&component)
            .map_err(does_not_fit)?;
        match world {
            World::Plugin => {
                let pre = PluginPre::new(instance_pre).map_err(does_not_fit)?;
                let tool = WasmTool::new(self.clone(), Pre::Plugin(Arc::new(pre)), source, info);
                Ok(vec![self.read_plugin(tool).await?])
            }
            World::Toolbox => {
                let pre = ToolboxPluginPre::new(instance_pre).map_err(does_not_fit)?;
                self.read_toolbox(Arc::new(pre), source, info).await
            }
        }
    }

    /// `tool` with its spec and hints, asked of a `plugin`.
    async fn read_plugin(&self, mut tool: WasmTool) -> Result<WasmTool, LoadError> {
        let (spec, hints) = tool
            .in_fresh_instance(
                &Limits::default(),
                &Capabilities::default(),
                SPEC_FUEL,
                Box::new(|store, guest| {
                    Box::pin(async move {
                        let Guest::Plugin(plugin) = guest else {
                            return Err(wasmtime::Error::msg("not a plugin"));
                        };
                        let guest = plugin.piton_tool_tool();
                        let spec = guest.call_spec(&mut *store).await?;
                        let hints = guest.call_hints(&mut *store).await?;
                        Ok((spec, hints))
                    })
                }),
            )
            .await
            .map_err(|e| read_failed(&tool, e, SPEC_FUEL))?;
        let source = tool.source();
        let fail = |message| LoadError {
            plugin: source.clone(),
            kind: LoadErrorKind::Invalid(message),
        };
        tool.spec = spec_of(spec).map_err(fail)?;
        tool.hints = from_wit_hints(hints).map_err(|e| fail(format!("its hints: {e}")))?;
        Ok(tool)
    }

    /// One tool per declaration of a toolbox's `tools`, each sharing `pre`.
    async fn read_toolbox(
        &self,
        pre: Arc<ToolboxPluginPre<super::sandbox::Sandbox>>,
        source: ToolSource,
        info: ComponentInfo,
    ) -> Result<Vec<WasmTool>, LoadError> {
        let asker = WasmTool::new(
            self.clone(),
            Pre::Toolbox {
                pre: pre.clone(),
                tool: Arc::from(""),
                has_hints_for: false,
            },
            source.clone(),
            info.clone(),
        );
        let decls = asker
            .in_fresh_instance(
                &Limits::default(),
                &Capabilities::default(),
                TOOLBOX_FUEL,
                Box::new(|store, guest| {
                    Box::pin(async move {
                        let Guest::Toolbox(toolbox) = guest else {
                            return Err(wasmtime::Error::msg("not a toolbox"));
                        };
                        toolbox.piton_tool_toolbox().call_tools(store).await
                    })
                }),
            )
            .await
            .map_err(|e| read_failed(&asker, e, TOOLBOX_FUEL))?;
        let fail = |message: String| LoadError {
            plugin: source.clone(),
            kind: LoadErrorKind::Invalid(message),
        };
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
        let mut names = BTreeSet::new();
        let mut tools = Vec::with_capacity(decls.len());
        for bindings::ToolDecl {
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
            let mut tool = WasmTool::new(
                self.clone(),
                Pre::Toolbox {
                    pre: pre.clone(),
                    tool: Arc::from(name.as_str()),
                    has_hints_for,
                },
                source.clone(),
                info.clone(),
            );
            tool.spec = spec_of(spec).map_err(named)?;
            tool.hints = from_wit_hints(hints).map_err(|e| named(format!("its hints: {e}")))?;
            tools.push(tool);
        }
        Ok(tools)
    }
}

/// The only tool of `tools`, or an error saying the component holds several.
fn one_tool(source: ToolSource, mut tools: Vec<WasmTool>) -> Result<WasmTool, LoadError> {
    match (tools.pop(), tools.is_empty()) {
        (Some(tool), true) => Ok(tool),
        _ => Err(LoadError {
            plugin: source,
            kind: LoadErrorKind::Contract(format!(
                "a toolbox of {} tools where one tool was expected; load it as a toolbox",
                tools.len() + 1
            )),
        }),
    }
}

/// The host's spec from the guest's, its sizes and schema checked.
fn spec_of(spec: bindings::plugin::piton::tool::types::ToolSpec) -> Result<ToolSpec, String> {
    crate::tool::check_spec_size(&spec.description, spec.input_schema.len())?;
    Ok(ToolSpec {
        input_schema: serde_json::from_str(&spec.input_schema)
            .map_err(|e| format!("its input schema is not JSON: {e}"))?,
        name: spec.name,
        description: spec.description,
        parallel: spec.parallel,
    })
}

/// A trap while reading specs, as a load error: over `fuel` says how much piton reads.
fn read_failed(tool: &WasmTool, error: crate::error::CallError, fuel: usize) -> LoadError {
    let text = trap_text(error);
    LoadError {
        plugin: tool.source(),
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
