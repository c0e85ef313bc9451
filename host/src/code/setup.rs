//! Code mode's tool joins a registry: made at the end of a load, when every other
//! tool is there (upstream servers' listed now), from piton.toml's `[code]`.

use std::sync::Arc;

use tokio::sync::OnceCell;

use super::interpreter::Interpreter;
use super::tool::CodeTool;
use crate::config::code::CodeSettings;
use crate::error::{LoadError, LoadErrorKind};
use crate::limits::format_size;
use crate::registry::Registry;
use crate::source::ToolSource;
use crate::wasm::WasmRuntime;

/// Adds code mode's tool to `registry`, its programs allowed the tools there that
/// `settings` allow, on `runtime`'s interpreter (compiled into `interpreter` the
/// first time). With `[code] only` the registry is then served as that tool alone.
/// `Ok` holds what a person should know: names that match no tool, servers that
/// could not be listed.
pub(crate) async fn add_code_tool(
    runtime: &WasmRuntime,
    interpreter: &OnceCell<Arc<Interpreter>>,
    settings: &CodeSettings,
    registry: &mut Registry,
) -> Result<Vec<String>, LoadError> {
    let fail = |message: String| LoadError {
        plugin: ToolSource::Bundled("code-mode".into()),
        kind: LoadErrorKind::Invalid(message),
    };
    let most = runtime.config().max_memory;
    if settings.memory > most {
        return Err(fail(format!(
            "piton.toml [code] memory of {} is over [runtime] max_memory of {}, the most \
             any instance may have; lower one or raise the other",
            format_size(settings.memory),
            format_size(most)
        )));
    }
    let interpreter = interpreter
        .get_or_try_init(|| async { Interpreter::load(runtime).await.map(Arc::new) })
        .await
        .map_err(|error| fail(error.to_string()))?
        .clone();
    let listing = registry.list_all().await;
    let mut warnings: Vec<String> = listing
        .errors
        .iter()
        .map(|error| format!("code mode: programs cannot call what is not listed: {error}"))
        .collect();
    for name in settings.tools.iter().flatten() {
        if !listing.tools.iter().any(|tool| tool.spec().name == *name) {
            warnings.push(format!(
                "piton.toml [code] tools names `{name}`, which is not loaded; programs \
                 cannot call it"
            ));
        }
    }
    // A run holds an instance while its calls need others: at most half of them run.
    let max_runs = (runtime.config().max_instances / 2).max(1) as usize;
    registry.add(CodeTool::new(
        settings,
        &listing.tools,
        interpreter,
        max_runs,
    ))?;
    if settings.only {
        registry.set_only(&settings.name);
    }
    Ok(warnings)
}
