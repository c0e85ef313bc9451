//! Code mode (`[code]`, `run_python`): programs that call the registry's tools, the
//! bad programs a model may write (each contained), and what the person and the
//! operator see of a run's calls.

mod bad;
mod cli;
mod observed;
mod programs;
mod scenario;

use piton_host::loader::{Loaded, Loader};
use piton_host::plugins::PluginsAt;
use piton_host::{CallError, Registry, ToolError, ToolResult};
use serde_json::json;

use crate::support::{plugins_folder, runtime, texts};

/// A plugins folder of `plugins` with `toml` as its piton.toml, loaded, and a
/// folder for the tools' data (`{DATA}` in `toml`), outside the plugins folder,
/// which piton never lets a tool write.
pub(super) struct Code {
    pub(super) loader: Loader,
    pub(super) loaded: Loaded,
    /// The plugins folder, kept while the registry is.
    _folder: tempfile::TempDir,
    pub(super) data: tempfile::TempDir,
}

impl Code {
    /// Loads `plugins` with `toml`; the load must report no error.
    pub(super) async fn load(plugins: &[(&str, &str)], toml: &str) -> Self {
        Self::load_with(plugins, toml, |_| {}).await
    }

    /// [`Code::load`], with `prepare` given the data folder before piton.toml is
    /// read.
    pub(super) async fn load_with(
        plugins: &[(&str, &str)],
        toml: &str,
        prepare: impl FnOnce(&std::path::Path),
    ) -> Self {
        Self::load_as(plugins, toml, prepare, false).await
    }

    /// [`Code::load_with`]; with `consent`, as `piton serve` loads: asking the
    /// person before the calls piton.toml's `[approve]` names.
    pub(super) async fn load_as(
        plugins: &[(&str, &str)],
        toml: &str,
        prepare: impl FnOnce(&std::path::Path),
        consent: bool,
    ) -> Self {
        let folder = plugins_folder(plugins);
        let data = tempfile::tempdir().expect("temp dir");
        prepare(data.path());
        let text = toml.replace("{DATA}", &data.path().display().to_string());
        std::fs::write(folder.path().join("piton.toml"), text).expect("write piton.toml");
        let mut loader = Loader::new(runtime().clone(), PluginsAt::Folder(folder.path().into()));
        if consent {
            loader = loader.with_consent(piton_host::consent::Keeper::new(None));
        }
        let loaded = loader.load().await.expect("the folder loads");
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        Self {
            loader,
            loaded,
            _folder: folder,
            data,
        }
    }

    pub(super) fn registry(&self) -> &Registry {
        &self.loaded.registry
    }

    /// Runs `code` with `run_python`; the run must not stop (no `Err`).
    pub(super) async fn run(&self, code: &str) -> ToolResult {
        self.run_as("run_python", code).await
    }

    /// Runs `code` with the code-mode tool named `tool`.
    pub(super) async fn run_as(&self, tool: &str, code: &str) -> ToolResult {
        match self.registry().call(tool, json!({"code": code})).await {
            Ok(result) => result,
            Err(error) => panic!("the run stopped instead of answering: {error}"),
        }
    }

    /// Runs `code`, expecting content; the model text of each block.
    pub(super) async fn ok(&self, code: &str) -> Vec<String> {
        let result = self.run(code).await;
        assert!(result.is_ok(), "{code}: {result:?}");
        texts(&result)
    }

    /// Runs `code`, expecting an error result; its text.
    pub(super) async fn fails(&self, code: &str) -> String {
        match self.run(code).await {
            Err(ToolError::Failed(text)) => text,
            other => panic!("{code}: expected an error result, got {other:?}"),
        }
    }
}

/// piton.toml for code mode with `more` lines in its `[code]` table.
pub(super) fn code_toml(more: &str) -> String {
    format!("[code]\nenabled = true\n{more}\n")
}

/// The run of a registry without code mode has no `run_python`.
#[tokio::test]
async fn code_mode_is_off_unless_asked() {
    let code = Code::load(&[("word_count.wasm", piton_tests::plugins::WORD_COUNT)], "").await;
    match code
        .registry()
        .call("run_python", json!({"code": "1"}))
        .await
    {
        Err(CallError::UnknownTool { known, .. }) => assert_eq!(known, ["word_count"]),
        other => panic!("no run_python: {other:?}"),
    }
}

/// `piton:tool/registry` is code mode's interpreter's alone: a plugin that imports it
/// (to call other tools, and so reach their grants) is refused at load, saying why,
/// while code mode is on in the same registry; the other plugins load.
#[tokio::test]
async fn a_plugin_that_imports_the_registry_is_refused_at_load() {
    let folder = plugins_folder(&[
        ("word_count.wasm", piton_tests::plugins::WORD_COUNT),
        ("borrow.wasm", piton_tests::guests::HOSTILE_REGISTRY_IMPORT),
    ]);
    std::fs::write(folder.path().join("piton.toml"), code_toml("")).expect("piton.toml");
    let loader = Loader::new(runtime().clone(), PluginsAt::Folder(folder.path().into()));
    let loaded = loader.load().await.expect("the folder loads");
    assert_eq!(loaded.registry.names(), ["run_python", "word_count"]);
    let [error] = loaded.errors.as_slice() else {
        panic!("one error: {:?}", loaded.errors);
    };
    let text = error.to_string();
    assert!(text.contains("borrow.wasm"), "{text}");
    assert!(
        text.contains("imports piton:tool/registry@0.1.2, which piton gives code mode's")
            && text.contains("remove the import"),
        "{text}"
    );
}
