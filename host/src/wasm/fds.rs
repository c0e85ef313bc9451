//! Open host file descriptors: a cap per call and a budget for all calls together, so
//! that no call (nor all of them at once) can use up the descriptors piton needs to
//! open the next call's mounts, accept `serve --http` connections or start upstream
//! servers.
//!
//! What counts: every file or directory a guest opens (`open-at`), every TCP socket it
//! creates, every connection the host makes for its wasi:http requests. Mounts are
//! opened by the host for each call and are not counted: they are what the rest of
//! the process's descriptors are kept for.
//!
//! Descriptors and sockets are counted while they sit in the call's resource table: a
//! count is given back when the next open finds the table entry gone, and all of them
//! when the call ends. HTTP connections give theirs back when the connection closes.
//!
//! This layer does not know the store's data type: the data implements [`HasFds`],
//! and [`add_to_linker`] is generic over it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddressFamily};
use wasmtime_wasi::p2::bindings::sockets::tcp_create_socket;
use wasmtime_wasi::p2::{SocketError, SocketResult, TcpSocket};
use wasmtime_wasi::sockets::WasiSocketsCtxView;

/// The most files, directories, sockets and HTTP connections one call may have open,
/// when the process's open-file limit allows every instance as many (see [`Budget`]).
pub(crate) const MAX_OPEN_PER_CALL: usize = 256;

/// The least a call may have open, however low the process's limit: below this,
/// ordinary tools (a walk through nested folders) would fail.
const MIN_OPEN_PER_CALL: usize = 16;

/// Descriptors kept for piton itself whatever the calls do: a quarter of the process
/// limit, at least this many.
const RESERVED_FOR_HOST: u64 = 256;

/// Why a call may not open one more descriptor.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FdLimit {
    /// The call holds its share.
    #[error("a call may have at most {0} files, sockets and connections open")]
    Call(usize),
    /// All calls together hold what the process may give them.
    #[error(
        "the tools running now hold all {0} descriptors piton gives tools (a quarter of the \
         process's open-file limit is kept for piton; raise it with `ulimit -n`)"
    )]
    Process(usize),
}

/// The descriptors all calls together may hold, and each call.
struct Budget {
    used: AtomicUsize,
    max: usize,
    per_call: usize,
}

static BUDGET: OnceLock<Budget> = OnceLock::new();

impl Budget {
    /// The tools' share of an open-file `limit`: all but a quarter of it (at least 256)
    /// kept for piton; and each call's part of that share, so that `instances` calls
    /// at once cannot use it up (between 16 and 256).
    fn new(limit: u64, instances: usize) -> Self {
        let reserved = RESERVED_FOR_HOST.max(limit / 4);
        let max = usize::try_from(limit.saturating_sub(reserved)).unwrap_or(usize::MAX);
        let per_call = (max / instances.max(1)).clamp(MIN_OPEN_PER_CALL, MAX_OPEN_PER_CALL);
        Self {
            used: AtomicUsize::new(0),
            max,
            per_call,
        }
    }
}

/// The process-wide budget, set by the first runtime (or the first open).
fn budget() -> &'static Budget {
    BUDGET.get_or_init(|| Budget::new(raise_open_file_limit(), 64))
}

/// Sets the budget up for `instances` calls at once, if no runtime did before: raises
/// the soft open-file limit to the hard one (as far as the system lets it), then
/// shares the limit out.
pub(crate) fn init(instances: usize) {
    let budget = BUDGET.get_or_init(|| Budget::new(raise_open_file_limit(), instances));
    tracing::debug!(
        for_tools = budget.max,
        per_call = budget.per_call,
        "open file descriptors"
    );
}

/// Raises the soft open-file limit to the hard one, and returns the soft limit in
/// force. A limit the system reports as unlimited counts as 2^20.
#[cfg(unix)]
fn raise_open_file_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    const UNLIMITED: u64 = 1 << 20;
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(UNLIMITED);
    let hard = limit.maximum.unwrap_or(UNLIMITED);
    if hard <= soft {
        return soft;
    }
    // macOS refuses more than OPEN_MAX (10240) for a process; try the hard limit
    // first, then that.
    for target in [hard, hard.min(10240)] {
        let raised = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(target),
                maximum: limit.maximum,
            },
        );
        if raised.is_ok() {
            return target;
        }
    }
    soft
}

#[cfg(not(unix))]
fn raise_open_file_limit() -> u64 {
    8192
}

/// One open descriptor, counted for its call and the process until dropped.
#[derive(Debug)]
pub(crate) struct FdToken {
    call: Arc<AtomicUsize>,
}

impl Drop for FdToken {
    fn drop(&mut self) {
        self.call.fetch_sub(1, Ordering::AcqRel);
        budget().used.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A call's count, to take tokens from where the store is out of reach (the task
/// that sends an HTTP request).
#[derive(Clone, Debug, Default)]
pub(crate) struct FdCounter(Arc<AtomicUsize>);

impl FdCounter {
    /// A token for one more open descriptor, or why there may be none.
    pub(crate) fn acquire(&self) -> Result<FdToken, FdLimit> {
        let call = &self.0;
        let budget = budget();
        call.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < budget.per_call).then_some(n + 1)
        })
        .map_err(|_| FdLimit::Call(budget.per_call))?;
        let process = budget
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < budget.max).then_some(n + 1)
            });
        if process.is_err() {
            call.fetch_sub(1, Ordering::AcqRel);
            return Err(FdLimit::Process(budget.max));
        }
        Ok(FdToken { call: call.clone() })
    }
}

/// What a resource-table entry holding a descriptor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Descriptor,
    Socket,
}

/// The descriptors one call holds in its resource table.
#[derive(Debug, Default)]
pub(crate) struct CallFds {
    counter: FdCounter,
    held: Vec<(u32, Kind, FdToken)>,
    /// Whether a refusal was logged already (once per call is enough).
    logged: bool,
}

impl CallFds {
    /// The call's counter, for descriptors held outside its table.
    pub(crate) fn counter(&self) -> FdCounter {
        self.counter.clone()
    }

    /// A token for one more descriptor. First gives back the tokens of entries the
    /// guest has dropped since.
    pub(crate) fn reserve(&mut self, table: &ResourceTable) -> Result<FdToken, FdLimit> {
        self.held.retain(|(rep, kind, _)| match kind {
            Kind::Descriptor => table.get::<Descriptor>(&Resource::new_borrow(*rep)).is_ok(),
            Kind::Socket => table.get::<TcpSocket>(&Resource::new_borrow(*rep)).is_ok(),
        });
        self.counter.acquire().inspect_err(|error| {
            if !std::mem::replace(&mut self.logged, true) {
                tracing::warn!(%error, "a tool's open was refused");
            }
        })
    }

    /// Keeps `token` for the descriptor now at table index `rep`.
    pub(crate) fn hold_descriptor(&mut self, rep: u32, token: FdToken) {
        self.hold(rep, Kind::Descriptor, token);
    }

    fn hold(&mut self, rep: u32, kind: Kind, token: FdToken) {
        self.held.retain(|(held, _, _)| *held != rep);
        self.held.push((rep, kind, token));
    }
}

/// Marks [`SocketView`] as the data `tcp-create-socket` gets.
struct SocketLayer;

impl HasData for SocketLayer {
    type Data<'a> = SocketView<'a>;
}

/// wasmtime-wasi's sockets, and the call's descriptors.
pub(crate) struct SocketView<'a> {
    /// wasmtime-wasi's sockets context and the call's resource table.
    pub(crate) inner: WasiSocketsCtxView<'a>,
    /// The call's open descriptors.
    pub(crate) fds: &'a mut CallFds,
}

/// Store data that has the call's descriptors: what this layer needs of it.
pub(crate) trait HasFds {
    /// The sockets and descriptors `tcp-create-socket` works on.
    fn socket_view(&mut self) -> SocketView<'_>;
}

impl network::Host for SocketView<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        network::Host::convert_error_code(&mut self.inner, error)
    }

    fn network_error_code(
        &mut self,
        error: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        network::Host::network_error_code(&mut self.inner, error)
    }
}

impl network::HostNetwork for SocketView<'_> {
    fn drop(&mut self, this: Resource<network::Network>) -> wasmtime::Result<()> {
        network::HostNetwork::drop(&mut self.inner, this)
    }
}

impl tcp_create_socket::Host for SocketView<'_> {
    fn create_tcp_socket(
        &mut self,
        address_family: IpAddressFamily,
    ) -> SocketResult<Resource<TcpSocket>> {
        let token = self
            .fds
            .reserve(self.inner.table)
            .map_err(|_| ErrorCode::NewSocketLimit)?;
        let socket = tcp_create_socket::Host::create_tcp_socket(&mut self.inner, address_family)?;
        self.fds.hold(socket.rep(), Kind::Socket, token);
        Ok(socket)
    }
}

/// Shadows `wasi:sockets/tcp-create-socket` with the counted version (the caller
/// allows shadowing).
pub(crate) fn add_to_linker<T: HasFds + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    tcp_create_socket::add_to_linker::<T, SocketLayer>(linker, T::socket_view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_shared_out_so_that_every_instance_gets_its_part() {
        let b = Budget::new(20_000, 64);
        assert_eq!((b.max, b.per_call), (15_000, 234));
        let b = Budget::new(1 << 20, 64);
        assert_eq!((b.max, b.per_call), (786_432, 256));
        let b = Budget::new(1024, 64);
        assert_eq!((b.max, b.per_call), (768, 16));
        let b = Budget::new(100, 64);
        assert_eq!((b.max, b.per_call), (0, 16));
    }

    #[test]
    fn a_call_holds_at_most_its_share_and_gives_it_back() {
        let counter = FdCounter::default();
        let per_call = budget().per_call;
        let tokens: Vec<_> = (0..per_call)
            .map(|_| counter.acquire().expect("within the share"))
            .collect();
        assert!(matches!(counter.acquire(), Err(FdLimit::Call(n)) if n == per_call));
        // Another call has its own share.
        let other = FdCounter::default();
        drop(other.acquire().expect("another call"));
        drop(tokens);
        assert_eq!(counter.0.load(Ordering::Acquire), 0);
        assert!(counter.acquire().is_ok());
    }
}
