//! Code for tools made from kept specs (see `specs`): compiled for the first call
//! that needs it, or by the optimised compile in the background, whichever comes
//! first; and never run before the specs it gives were found to be the kept ones.

use std::sync::Arc;

use super::code::{Code, Linking, Now};
use super::engine::Tier;
use super::runtime::WasmRuntime;
use super::specs::{Declared, Specs};

impl WasmRuntime {
    /// Starts a baseline compile of `code`'s component for a call that found no code,
    /// unless one was started already; the call waits for [`Code::settled`]. If the
    /// baseline compiler cannot compile it, the optimised compile queued at load gives
    /// the code.
    pub(super) fn compile_for_call(&self, code: &Arc<Code>) {
        let Some(bytes) = code.start_urgent() else {
            return;
        };
        let (runtime, code) = (self.clone(), code.clone());
        tokio::spawn(async move {
            let compiled = runtime.compile_baseline(bytes).await;
            let linked = compiled.and_then(|(component, baseline)| {
                let imports = imports_of(&component, &baseline.engine);
                Linking::new(&baseline.linker, &component, code.world(), Tier::Baseline)
                    .map(|linking| (linking, imports))
            });
            match linked {
                Ok((linking, imports)) => runtime.install_checked(&code, linking, imports).await,
                Err(error) => tracing::debug!(
                    error = %super::trap::root_message(&error),
                    "no baseline code: the call waits for the optimised code"
                ),
            }
        });
    }

    /// Moves `code`'s tools to `linking` (whose component imports `imports`): at once
    /// when their specs came from the code, else once the specs `linking` gives are
    /// found to be the kept ones they were made from. Kept specs that differ are
    /// refused, and replaced by the code's own.
    pub(super) async fn install_checked(
        &self,
        code: &Arc<Code>,
        linking: Linking,
        imports: Vec<String>,
    ) {
        let Some(kept) = code.unchecked().cloned() else {
            if !matches!(code.now(), Now::Awaiting) {
                code.install(Arc::new(linking));
            }
            return;
        };
        let candidate = Arc::new(Code::new(code.world(), linking, imports.clone()));
        let given = match self.declared(&candidate).await {
            Ok(decls) => Specs {
                sha256: kept.sha256.clone(),
                world: kept.world,
                imports,
                tools: decls.iter().map(Declared::of).collect(),
            },
            Err(failed) => {
                self.refuse(
                    code,
                    &kept.sha256,
                    &format!("its code fails to give them: {}", failed.text()),
                );
                return;
            }
        };
        if given != kept {
            // Replaced before the tools are loaded again, so that load reads these.
            if let Some(kept) = self.keep_specs(given) {
                let _ = kept.await;
            }
            self.refuse(code, &kept.sha256, "they differ");
            return;
        }
        if let Now::Ready(linking) = candidate.now() {
            code.install(linking);
        }
    }

    /// Refuses `code`'s calls for `why`, counted in [`WasmRuntime::specs_refused`];
    /// the `piton:specs` section of the component `sha256` is not read again.
    pub(super) fn refuse(&self, code: &Code, sha256: &str, why: &str) {
        self.inner.refused_digests.insert(sha256);
        if code.refuse(why) {
            tracing::warn!(
                why,
                sha256,
                "the specs kept in the compile cache, or written into the component by \
                 `piton build`, are not what the component's code gives: its tools are \
                 loaded again from its code"
            );
            self.inner.refused.send_modify(|n| *n += 1);
        }
    }

    /// How many times kept specs were found not to be what their component's code
    /// gives (see `specs`): each time, the tools made from them refuse calls and must
    /// be loaded again, as `piton serve` and the CLI's commands do.
    pub fn specs_refused(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.refused.subscribe()
    }
}

/// The interfaces `component` (compiled by `engine`) imports.
pub(super) fn imports_of(
    component: &wasmtime::component::Component,
    engine: &wasmtime::Engine,
) -> Vec<String> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect()
}
