//! wasi:sockets/ip-name-lookup, checked: a guest may resolve only the names it is
//! granted, since a lookup of any other name would carry data out through DNS even
//! when no connection is allowed. The host resolves the grant's own name (never the
//! guest's string) and answers only with the addresses the name may lead to.
//!
//! This replaces the whole interface, resource included. The resource's Rust type in
//! the generated bindings is wasmtime-wasi's `ResolveAddressStream`, which only
//! wasmtime-wasi can build; the table entry behind each handle is our own
//! [`LookupStream`] instead, and since every function that touches such a handle is
//! defined here, each one reads it back as a `LookupStream` by its table index.

use std::net::IpAddr;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures::future::BoxFuture;
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{
    self, Host, HostResolveAddressStream, ResolveAddressStream,
};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress};
use wasmtime_wasi::p2::{DynPollable, Network, Pollable, SocketError, subscribe};

use super::policy::Policy;
use super::view::HasNet;

/// Adds the checked ip-name-lookup interface, shadowing wasmtime-wasi's.
pub(super) fn add_to_linker<T: HasNet + 'static>(
    linker: &mut wasmtime::component::Linker<T>,
) -> wasmtime::Result<()> {
    ip_name_lookup::add_to_linker::<T, NameLookup>(linker, |data| {
        let view = data.net_view();
        LookupView {
            table: view.table,
            policy: &view.state.policy,
        }
    })
}

/// Marks the store data's view for the generated bindings.
struct NameLookup;

impl HasData for NameLookup {
    type Data<'a> = LookupView<'a>;
}

/// What the lookup functions see of a call's store.
pub(super) struct LookupView<'a> {
    table: &'a mut ResourceTable,
    policy: &'a Arc<Policy>,
}

/// What the guest waits on: a granted name's lookup, then its answers one by one.
/// The lookup runs only while someone waits for it, and is shared with every other
/// use of the name in the call (see [`Policy`]); the guest's handle holds no task.
enum LookupStream {
    Pending(BoxFuture<'static, Result<Vec<IpAddr>, ErrorCode>>),
    Ready(Result<std::vec::IntoIter<IpAddr>, ErrorCode>),
}

#[async_trait::async_trait]
impl Pollable for LookupStream {
    async fn ready(&mut self) {
        if let Self::Pending(lookup) = self {
            let outcome = lookup.as_mut().await;
            *self = Self::Ready(outcome.map(Vec::into_iter));
        }
    }
}

/// The handle the guest holds for our table entry.
fn as_ours(handle: &Resource<ResolveAddressStream>) -> Resource<LookupStream> {
    Resource::new_borrow(handle.rep())
}

// The generated bindings need the network interface's host traits too (its error
// conversion); these are wasmtime-wasi's own, for our view.
impl network::Host for LookupView<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        error.downcast()
    }

    fn network_error_code(
        &mut self,
        error: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        let error = self.table.get(&error)?;
        Ok(error.downcast_ref::<std::io::Error>().map(ErrorCode::from))
    }
}

impl network::HostNetwork for LookupView<'_> {
    fn drop(&mut self, network: Resource<Network>) -> wasmtime::Result<()> {
        self.table.delete(network)?;
        Ok(())
    }
}

impl Host for LookupView<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        // As in wasmtime-wasi: the network handle is the capability; it must be valid.
        self.table.get(&network)?;
        let stream = match self.lookup(&name) {
            Lookup::Refused(code) => {
                // Debug-quoted: the name is the guest's and could hold newlines.
                tracing::debug!(name = ?name, "name lookup refused");
                self.policy
                    .denied(&name, "a name lookup of a name no grant names");
                return Err(code.into());
            }
            Lookup::Literal(ip) => LookupStream::Ready(Ok(vec![ip].into_iter())),
            Lookup::Resolve(granted) => {
                let policy = self.policy.clone();
                LookupStream::Pending(Box::pin(async move {
                    let answers = policy.answers_for(&granted).await;
                    if answers.is_empty() {
                        Err(ErrorCode::NameUnresolvable)
                    } else {
                        Ok(answers)
                    }
                }))
            }
        };
        let ours = self.table.push(stream)?;
        Ok(Resource::new_own(ours.rep()))
    }
}

/// What to do with one lookup.
enum Lookup {
    Refused(ErrorCode),
    /// An address the guest wrote itself: no DNS involved.
    Literal(IpAddr),
    /// A granted name, as granted.
    Resolve(String),
}

impl LookupView<'_> {
    fn lookup(&self, name: &str) -> Lookup {
        if self.policy.is_empty() {
            return Lookup::Refused(ErrorCode::AccessDenied);
        }
        let bare = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return if self.policy.ip_granted(ip) {
                Lookup::Literal(ip)
            } else {
                Lookup::Refused(ErrorCode::AccessDenied)
            };
        }
        match self.policy.granted_name(name) {
            Some(granted) => Lookup::Resolve(granted.to_owned()),
            None => Lookup::Refused(ErrorCode::AccessDenied),
        }
    }
}

impl HostResolveAddressStream for LookupView<'_> {
    fn resolve_next_address(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        let stream = self.table.get_mut(&as_ours(&stream))?;
        if let LookupStream::Pending(lookup) = stream {
            // Non-blocking, as the interface asks: the guest waits with `subscribe`.
            let mut cx = Context::from_waker(Waker::noop());
            match lookup.as_mut().poll(&mut cx) {
                Poll::Pending => return Err(ErrorCode::WouldBlock.into()),
                Poll::Ready(outcome) => *stream = LookupStream::Ready(outcome.map(Vec::into_iter)),
            }
        }
        match stream {
            LookupStream::Ready(Ok(answers)) => Ok(answers.next().map(IpAddress::from)),
            LookupStream::Ready(Err(code)) => Err((*code).into()),
            LookupStream::Pending(_) => Err(ErrorCode::WouldBlock.into()),
        }
    }

    fn subscribe(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        subscribe(self.table, as_ours(&stream))
    }

    fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        self.table
            .delete(Resource::<LookupStream>::new_own(stream.rep()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::{Host, NetGrant};

    fn decide(grants: &[NetGrant], name: &str) -> String {
        let policy = Arc::new(Policy::full(grants));
        let view = LookupView {
            table: &mut ResourceTable::new(),
            policy: &policy,
        };
        match view.lookup(name) {
            Lookup::Refused(ErrorCode::AccessDenied) => "denied".to_owned(),
            Lookup::Refused(_) => "refused otherwise".to_owned(),
            Lookup::Literal(ip) => format!("literal {ip}"),
            Lookup::Resolve(granted) => format!("resolve {granted}"),
        }
    }

    #[test]
    fn only_granted_names_and_addresses_are_looked_up() {
        let grants = [
            NetGrant {
                host: Host::Name("example.com".into()),
                port: 443,
                headers: Vec::new(),
                tcp: false,
            },
            NetGrant {
                host: Host::Ip("::1".parse().unwrap()),
                port: 8080,
                headers: Vec::new(),
                tcp: false,
            },
        ];
        let table = [
            ("Example.COM.", "resolve example.com"),
            ("example.com.evil.net", "denied"),
            ("evil.net", "denied"),
            ("[::1]", "literal ::1"),
            ("::1", "literal ::1"),
            ("127.0.0.1", "denied"),
        ];
        for (name, decision) in table {
            assert_eq!(decide(&grants, name), decision, "{name}");
        }
        assert_eq!(decide(&[], "example.com"), "denied");
    }
}
