//! The network a call may reach: the granted host:port pairs, for sockets, DNS and
//! outgoing HTTP.
//!
//! One [`Policy`] per call, built from the call's grants (none for a closed-world
//! call), is asked by all three paths:
//! - sockets (wasi:sockets/tcp): wasmtime-wasi's `socket_addr_check` asks
//!   [`Policy::may_use_socket`]; UDP stays off;
//! - DNS (wasi:sockets/ip-name-lookup): shadowed by [`dns`], which answers only for
//!   granted names, resolves them on the host and drops addresses a name may not lead to;
//! - HTTP (wasi:http): [`outgoing`] checks each request's authority and sends it to the
//!   address it checked, adding the grant's secret headers.
//!
//! A name is resolved at most once per call, on the host, and the answer is kept for the
//! rest of the call: what the guest learns by DNS, what its sockets may connect to and
//! where its HTTP requests go all come from that one answer, so a DNS server cannot
//! rebind a name to another address between the check and the connection. Uses of a
//! name at the same time share its one lookup; a call has at most
//! [`policy::MAX_LOOKUPS_PER_CALL`] lookups running, the process [`policy::MAX_LOOKUPS`], each on a
//! thread of its own rather than on the blocking pool file I/O uses.
//!
//! Raw TCP (wasi:sockets) reaches only grants with `tcp = true`; every grant reaches
//! HTTP(S) through wasi:http, where a read-only call sends GET, HEAD and OPTIONS only.
//!
//! This layer does not know the store's data type: the data implements [`HasNet`]
//! (and wasi:http's `WasiHttpView`, through [`NetView::http`]), and [`add_to_linker`]
//! is generic over it.

mod addr;
mod dns;
mod outgoing;
mod policy;
mod view;

use wasmtime::component::Linker;
use wasmtime_wasi::WasiCtxBuilder;

use crate::call::notes::Denials;
use crate::grants::{NetAccess, NetGrant};

pub(crate) use policy::Policy;
pub(crate) use view::{HasNet, NetState, NetView};

/// Configures sockets for `grants`; none: no network at all (the builder's deny-all
/// settings stay as they are). Refusals are reported to `denials`. Raw TCP is switched on only when a grant opts in to it
/// (`tcp = true`): every other grant is HTTP(S) only, through wasi:http.
pub(crate) fn configure(
    wasi: &mut WasiCtxBuilder,
    grants: &[NetGrant],
    access: NetAccess,
    denials: Denials,
) -> NetState {
    let state = NetState::new(Policy::new(grants, access).reporting_to(denials));
    if grants.iter().any(|g| g.tcp) {
        let policy = state.policy.clone();
        // wasmtime-wasi's own name lookup stays off: `dns` replaces it, and with the
        // flag off even a linker mistake could not reach an unchecked resolver.
        wasi.allow_tcp(true).socket_addr_check(move |addr, usage| {
            let policy = policy.clone();
            Box::pin(async move { policy.may_use_socket(addr, usage).await })
        });
    }
    state
}

/// Adds this layer's WASI functions to the linker (shadowing wasmtime-wasi's): the
/// checked name lookup, and wasi:http, so that components importing it load whether
/// or not they are granted anything.
pub(crate) fn add_to_linker<T: HasNet + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    dns::add_to_linker(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
}
