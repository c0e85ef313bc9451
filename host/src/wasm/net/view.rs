//! What the network layer keeps for one call ([`NetState`]: its policy and
//! wasi:http's context) and what it needs of a call's store ([`HasNet`]).

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

use super::outgoing;
use super::policy::Policy;
use crate::grants::NetAccess;

/// What the network layer keeps for one call.
pub(crate) struct NetState {
    /// The call's grants and its resolved names.
    pub(crate) policy: Arc<Policy>,
    /// wasi:http's per-store settings.
    pub(crate) http: wasmtime_wasi_http::WasiHttpCtx,
    /// How wasi:http sends requests: through the policy.
    pub(crate) hooks: outgoing::Hooks,
}

impl std::fmt::Debug for NetState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetState")
            .field("grants", &self.policy.grants)
            .finish_non_exhaustive()
    }
}

impl Default for NetState {
    fn default() -> Self {
        Self::new(Policy::new(&[], NetAccess::ReadOnly))
    }
}

impl NetState {
    pub(super) fn new(policy: Policy) -> Self {
        let policy = Arc::new(policy);
        Self {
            hooks: outgoing::Hooks::new(policy.clone()),
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            policy,
        }
    }
}

/// What the network layer sees of a call's store: its resource table and its state.
pub(crate) struct NetView<'a> {
    /// The call's resource table.
    pub(crate) table: &'a mut ResourceTable,
    /// The call's network state.
    pub(crate) state: &'a mut NetState,
}

impl<'a> NetView<'a> {
    /// wasi:http's view of the call, for the store data's `WasiHttpView`: its
    /// requests go out through the call's policy.
    pub(crate) fn http(self) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView {
            ctx: &mut self.state.http,
            table: self.table,
            hooks: &mut self.state.hooks,
        }
    }
}

/// Store data that has a call's network: what this layer needs of it.
pub(crate) trait HasNet: WasiHttpView {
    /// The call's resource table and network state.
    fn net_view(&mut self) -> NetView<'_>;
}
