//! The state of one call's store: a WASI context that grants nothing, captured
//! output, and the memory limiter; and the filesystem, network and descriptor layers
//! ([`super::fs`], [`super::net`], [`super::fds`]), each given its part of the store
//! through its `Has*` trait. Those layers do not know this type.

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::sockets::WasiSocketsCtxView;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

use super::fds::{CallFds, HasFds, SocketView};
use super::fs::{FsState, FsView, HasFs, Pins};
use super::net::{HasNet, NetState, NetView};
use super::output::CapturedOutput;
use crate::call::notes::Denials;
use crate::grants::Capabilities;
use crate::limits::Limits;

/// Table elements a guest may have: far above what real tools use (a Rust guest has
/// a few hundred), far below what would strain the host.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// The most host resources (handles in the call's resource table: descriptors,
/// sockets, streams, pollables, HTTP fields, requests, bodies and responses, lookups)
/// one call may hold at once. Real tools hold a few dozen.
pub(crate) const MAX_RESOURCES: usize = 1024;

/// The most bytes one wasi:http `fields` may hold (names, values and the per-entry
/// overhead wasmtime-wasi-http counts), down from its 128 KiB default: no handle of a
/// call holds more than 64 KiB, so [`MAX_RESOURCES`] handles hold at most 64 MiB.
const MAX_FIELDS_SIZE: usize = 64 << 10;

/// The most bytes one `get-random-bytes` (or `get-insecure-random-bytes`) request
/// may ask for; a request over it traps. The bytes are made on the host before they
/// are copied into the guest, and wasmtime-wasi's own cap is 64 MiB. Guests ask
/// for a few bytes at a time (wasi-libc's `getentropy` at most 256), and may ask
/// again.
pub(crate) const MAX_RANDOM_REQUEST: u64 = 1 << 20;

/// One call's store data.
pub(crate) struct Sandbox {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) stdout: CapturedOutput,
    pub(crate) stderr: CapturedOutput,
    /// The call's mounts and what it did in them (add-only bookkeeping).
    pub(crate) fs: FsState,
    /// The hosts the call may reach (sockets, DNS, HTTP).
    pub(crate) net: NetState,
    /// The files, sockets and connections the call has open.
    pub(crate) fds: CallFds,
    /// How many times the guest reached the host's WASI (every WASI host function
    /// takes one of the views below): an instance made ahead whose instantiation ran
    /// guest code that asked the host for something saw a sandbox of nothing (see
    /// ready.rs).
    pub(crate) host_calls: u64,
}

/// Why a sandbox could not be built (a granted folder vanished, say).
#[derive(Debug, thiserror::Error)]
#[error("cannot prepare the sandbox: {0}")]
pub(crate) struct SandboxError(#[from] pub(crate) super::fs::MountRefused);

impl Sandbox {
    /// A sandbox with exactly `caps` and nothing else. With no capabilities: no
    /// preopened directories, no network (no TCP, UDP or name lookup, every address
    /// refused), no environment variables, no arguments, an empty stdin, and
    /// stdout/stderr captured up to `limits.max_log`.
    /// `pins` holds the mounts' folders as they were at load. What the sandbox is
    /// granted, and what it refuses, is reported to `denials` (the call's notes).
    pub(crate) fn new(
        limits: &Limits,
        caps: &Capabilities,
        pins: &Pins,
        denials: Denials,
    ) -> Result<Self, SandboxError> {
        denials.granted(caps);
        let stdout = CapturedOutput::new(limits.max_log);
        let stderr = CapturedOutput::new(limits.max_log);
        let mut wasi = WasiCtxBuilder::new();
        // WasiCtxBuilder already defaults to no env, args or preopens and a closed
        // stdin; sockets are "allowed with every address denied", so switch the
        // protocols off too rather than rely on the address check alone.
        wasi.stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }))
            .max_random_size(MAX_RANDOM_REQUEST)
            .envs(&caps.env);
        let mut fs = super::fs::configure(&mut wasi, &caps.mounts, pins, limits.max_write)?;
        fs.denials = denials.clone();
        let mut net = super::net::configure(&mut wasi, &caps.network, caps.net_access, denials);
        let fds = CallFds::default();
        net.http.set_field_size_limit(MAX_FIELDS_SIZE);
        net.hooks.count_connections(fds.counter());
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        Ok(Self {
            wasi: wasi.build(),
            table,
            limiter: MemoryLimiter::new(limits.memory),
            stdout,
            stderr,
            fs,
            net,
            fds,
            host_calls: 0,
        })
    }
}

impl WasiView for Sandbox {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.host_calls += 1;
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl HasFs for Sandbox {
    fn fs_view(&mut self) -> FsView<'_> {
        self.host_calls += 1;
        FsView {
            inner: WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            state: &mut self.fs,
            fds: &mut self.fds,
        }
    }
}

impl HasNet for Sandbox {
    fn net_view(&mut self) -> NetView<'_> {
        self.host_calls += 1;
        NetView {
            table: &mut self.table,
            state: &mut self.net,
        }
    }
}

impl WasiHttpView for Sandbox {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        self.net_view().http()
    }
}

impl HasFds for Sandbox {
    fn socket_view(&mut self) -> SocketView<'_> {
        self.host_calls += 1;
        SocketView {
            inner: WasiSocketsCtxView {
                ctx: self.wasi.sockets(),
                table: &mut self.table,
            },
            fds: &mut self.fds,
        }
    }
}

/// Refuses memory growth past the call's limit, summed over the store's memories,
/// and remembers that it did so the trap can name the limit.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: u64,
    total: u64,
    pub(crate) exceeded: bool,
}

impl MemoryLimiter {
    fn new(limit: u64) -> Self {
        Self {
            limit,
            total: 0,
            exceeded: false,
        }
    }

    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes of memory counted so far.
    pub(crate) fn used(&self) -> u64 {
        self.total
    }

    /// Counts `bytes` already in use (an instance made ahead, handed to a call) as
    /// if grown under this limiter.
    pub(crate) fn count_used(&mut self, bytes: u64) {
        self.total = self.total.saturating_add(bytes);
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self
            .total
            .saturating_add(desired.saturating_sub(current) as u64);
        if total > self.limit {
            self.exceeded = true;
            return Ok(false);
        }
        self.total = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_request_past_the_cap_fails_before_anything_is_made() {
        use wasmtime_wasi::p2::bindings::random::{insecure, random};
        let caps = Capabilities::default();
        let mut sandbox = Sandbox::new(
            &Limits::default(),
            &caps,
            &Pins::default(),
            Denials::default(),
        )
        .expect("a sandbox granting nothing");
        let random = sandbox.wasi.random();
        let within = random::Host::get_random_bytes(random, 1 << 20).expect("1 MiB is given");
        assert_eq!(within.len(), 1 << 20);
        for len in [(1 << 20) + 1, 64 << 20] {
            let error = random::Host::get_random_bytes(random, len).expect_err("over the cap");
            assert!(
                error.to_string().contains("exceeds limit 1048576"),
                "{error}"
            );
            let insecure = insecure::Host::get_insecure_random_bytes(random, len);
            assert!(insecure.is_err(), "{len} insecure bytes");
        }
    }

    #[test]
    fn memory_is_limited_in_total() {
        let mut limiter = MemoryLimiter::new(100);
        assert!(limiter.memory_growing(0, 60, None).unwrap());
        assert!(limiter.memory_growing(0, 40, None).unwrap());
        assert!(!limiter.memory_growing(40, 41, None).unwrap());
        assert!(limiter.exceeded);
    }
}
