//! One call's network policy: which host:port pairs its grants allow, for sockets,
//! DNS and HTTP, and the names it resolved (once per call, on a thread of its own,
//! at most a few at a time), so every path uses the one answer.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use wasmtime_wasi::sockets::SocketAddrUse;

use super::addr::is_public;
use crate::call::notes::{Capability, Denials};
use crate::grants::{Host, NetAccess, NetGrant};

/// Resolves one name to its addresses, blocking: the system resolver, or a fake one
/// in tests. It runs on a thread of its own, never on tokio's blocking pool (which
/// every call's file I/O uses).
pub(crate) type Resolver = Arc<dyn Fn(&str) -> std::io::Result<Vec<IpAddr>> + Send + Sync>;

/// The most lookups one call has running at once. Identical lookups are shared, so
/// this counts distinct granted names.
pub(super) const MAX_LOOKUPS_PER_CALL: usize = 4;

/// The most lookups running at once in the whole process. A lookup still running when
/// its call ends cannot be stopped (the system resolver blocks); it keeps its place
/// here until the resolver gives up, so finished calls cannot pile lookups up.
pub(super) const MAX_LOOKUPS: usize = 16;

/// Places for running lookups, process-wide.
static LOOKUPS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_LOOKUPS);

/// How long a failed lookup stands before a new use of the name may try again: a
/// guest that loops on a name that does not resolve starts one lookup a second.
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(1);

/// The system resolver (getaddrinfo).
fn system_resolver() -> Resolver {
    Arc::new(|name| {
        use std::net::ToSocketAddrs as _;
        Ok((name, 0).to_socket_addrs()?.map(|a| a.ip()).collect())
    })
}

/// What a lookup found: addresses (canonical, unfiltered), or a failure and when.
#[derive(Clone, Debug)]
enum Resolved {
    Found(Arc<[IpAddr]>),
    Failed(Instant),
}

/// One name's lookup, shared by every use of the name in the call.
type Lookup = Shared<BoxFuture<'static, Resolved>>;

/// One call's network grants, and the names resolved for it so far.
pub(crate) struct Policy {
    pub(super) grants: Vec<NetGrant>,
    /// What the call may do with them.
    pub(super) access: NetAccess,
    /// Granted name (lowercase, as granted) → its lookup, running or done.
    resolved: Mutex<HashMap<String, Lookup>>,
    /// This call's places for running lookups.
    lookups: Arc<tokio::sync::Semaphore>,
    resolver: Resolver,
    /// Where refusals are reported (the call's observer).
    denials: Denials,
}

impl Policy {
    pub(crate) fn new(grants: &[NetGrant], access: NetAccess) -> Self {
        Self::with_resolver(grants, access, system_resolver())
    }

    pub(crate) fn with_resolver(
        grants: &[NetGrant],
        access: NetAccess,
        resolver: Resolver,
    ) -> Self {
        Self {
            grants: grants.to_vec(),
            access,
            resolved: Mutex::default(),
            lookups: Arc::new(tokio::sync::Semaphore::new(MAX_LOOKUPS_PER_CALL)),
            resolver,
            denials: Denials::default(),
        }
    }

    /// This policy, reporting what it refuses to `denials`.
    pub(crate) fn reporting_to(mut self, denials: Denials) -> Self {
        self.denials = denials;
        self
    }

    /// Reports a refusal of `target` (host:port, or a name) for `why`.
    pub(super) fn denied(&self, target: &dyn std::fmt::Display, why: &'static str) {
        self.denials.deny(Capability::Net, target, why);
    }

    /// No grants: no network at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// Whether a guest socket may be used for `usage` with `addr`. Connecting needs a
    /// grant with `tcp = true` for the address; the one bind allowed is the implicit
    /// one wasmtime-wasi checks before a connect (the unspecified address, port 0);
    /// listening, accepting and UDP are refused.
    pub(crate) async fn may_use_socket(&self, addr: SocketAddr, usage: SocketAddrUse) -> bool {
        match usage {
            SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
            SocketAddrUse::TcpConnect => {
                let allowed = self.reachable(addr, true).await;
                if !allowed {
                    tracing::debug!(%addr, "connection refused: no grant with tcp = true");
                    self.denied(
                        &addr,
                        "raw TCP to an address no grant with tcp = true reaches",
                    );
                }
                allowed
            }
            _ => false,
        }
    }

    /// Whether the host may connect to `addr` for an HTTP request: granted literally,
    /// or a public address of a name granted with this port.
    pub(crate) async fn may_connect(&self, addr: SocketAddr) -> bool {
        self.reachable(addr, false).await
    }

    /// Whether `addr` is granted literally, or is a public address of a name granted
    /// with its port; for a raw socket (`raw`), by a grant with `tcp = true`.
    async fn reachable(&self, addr: SocketAddr, raw: bool) -> bool {
        let addr = canonical(addr);
        let grants = self
            .grants
            .iter()
            .filter(|g| g.port == addr.port() && (g.tcp || !raw));
        let mut names = Vec::new();
        for grant in grants {
            match &grant.host {
                Host::Ip(ip) if ip.to_canonical() == addr.ip() => return true,
                Host::Name(name) => names.push(name),
                Host::Ip(_) => {}
            }
        }
        if !is_public(addr.ip()) {
            return false;
        }
        for name in names {
            if self.addresses_of(name).await.contains(&addr.ip()) {
                return true;
            }
        }
        false
    }

    /// Whether `ip` is granted literally with any port.
    pub(super) fn ip_granted(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.grants
            .iter()
            .any(|g| matches!(g.host, Host::Ip(granted) if granted.to_canonical() == ip))
    }

    /// The granted name that `name` stands for (case-insensitive, one trailing dot
    /// ignored), if any: the name the host resolves is always the grant's own.
    pub(super) fn granted_name(&self, name: &str) -> Option<&str> {
        self.grants.iter().find_map(|g| match &g.host {
            Host::Name(granted) if same_name(granted, name) => Some(granted.as_str()),
            _ => None,
        })
    }

    /// The addresses a granted name may lead to for DNS answers: its public ones and
    /// those also granted literally.
    pub(super) async fn answers_for(&self, granted: &str) -> Vec<IpAddr> {
        let mut answers = self.addresses_of(granted).await;
        answers.retain(|&ip| is_public(ip) || self.ip_granted(ip));
        answers
    }

    /// Every address of a granted name, resolved on the host once per call: every use
    /// of the name, at once or later, shares one lookup and sees the same answer. A
    /// failed lookup yields no address; a use after [`RETRY_FAILED_AFTER`] tries again.
    pub(super) async fn addresses_of(&self, granted: &str) -> Vec<IpAddr> {
        let lookup = {
            let mut resolved = self.resolved.lock().unwrap_or_else(PoisonError::into_inner);
            let stale = |lookup: &Lookup| matches!(lookup.peek(), Some(Resolved::Failed(at)) if at.elapsed() >= RETRY_FAILED_AFTER);
            match resolved.get(granted) {
                Some(lookup) if !stale(lookup) => lookup.clone(),
                _ => {
                    let lookup = self.start_lookup(granted);
                    resolved.insert(granted.to_owned(), lookup.clone());
                    lookup
                }
            }
        };
        match lookup.await {
            Resolved::Found(addresses) => addresses.to_vec(),
            Resolved::Failed(_) => Vec::new(),
        }
    }

    /// A lookup of `name`, started when first awaited: it waits for a place among
    /// the call's lookups and the process's, then resolves on a thread of its own. A
    /// lookup still waiting when its call ends never starts.
    fn start_lookup(&self, name: &str) -> Lookup {
        let name = name.to_owned();
        let resolver = self.resolver.clone();
        let per_call = self.lookups.clone();
        async move {
            let failed = || Resolved::Failed(Instant::now());
            let (Ok(call_place), Ok(process_place)) =
                (per_call.acquire_owned().await, LOOKUPS.acquire().await)
            else {
                return failed();
            };
            let (send, answer) = tokio::sync::oneshot::channel();
            let thread = std::thread::Builder::new()
                .name("piton-dns".to_owned())
                .spawn({
                    let name = name.clone();
                    move || {
                        let _places = (call_place, process_place);
                        let _ = send.send(resolver(&name));
                    }
                });
            if let Err(error) = thread {
                tracing::warn!(%error, "cannot start a thread for a name lookup");
                return failed();
            }
            match answer.await {
                Ok(Ok(addresses)) => {
                    Resolved::Found(addresses.into_iter().map(|ip| ip.to_canonical()).collect())
                }
                Ok(Err(error)) => {
                    tracing::debug!(name, %error, "granted name does not resolve");
                    failed()
                }
                // The resolver panicked: a host fault, seen by the guest as no answer.
                Err(_) => failed(),
            }
        }
        .boxed()
        .shared()
    }
}

/// Whether two DNS names are the same: ASCII case and one trailing dot do not count.
pub(super) fn same_name(a: &str, b: &str) -> bool {
    let bare = |n: &str| n.strip_suffix('.').unwrap_or(n).to_owned();
    bare(a).eq_ignore_ascii_case(&bare(b))
}

fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

#[cfg(test)]
impl Policy {
    /// A policy for a call that is not read-only, with the system resolver.
    pub(crate) fn full(grants: &[NetGrant]) -> Self {
        Self::new(grants, NetAccess::Full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(host: Host, port: u16) -> NetGrant {
        NetGrant {
            host,
            port,
            headers: Vec::new(),
            tcp: false,
        }
    }

    fn ip(text: &str) -> Host {
        Host::Ip(text.parse().unwrap())
    }

    #[tokio::test]
    async fn sockets_reach_granted_addresses_only() {
        let policy = Policy::full(&[NetGrant {
            tcp: true,
            ..grant(ip("127.0.0.1"), 8080)
        }]);
        let check = |addr: &str, usage| {
            let addr: SocketAddr = addr.parse().unwrap();
            policy.may_use_socket(addr, usage)
        };
        use SocketAddrUse::*;
        assert!(check("127.0.0.1:8080", TcpConnect).await);
        assert!(check("[::ffff:127.0.0.1]:8080", TcpConnect).await);
        assert!(!check("127.0.0.1:8081", TcpConnect).await);
        assert!(!check("127.0.0.2:8080", TcpConnect).await);
        assert!(check("0.0.0.0:0", TcpBind).await);
        assert!(check("[::]:0", TcpBind).await);
        assert!(!check("0.0.0.0:8080", TcpBind).await);
        assert!(!check("127.0.0.1:0", TcpBind).await);
        assert!(!check("0.0.0.0:0", TcpListen).await);
        assert!(!check("127.0.0.1:8080", UdpSend).await);
    }

    #[tokio::test]
    async fn a_name_never_leads_to_loopback() {
        let policy = Policy::full(&[grant(Host::Name("localhost".into()), 8080)]);
        assert!(!policy.addresses_of("localhost").await.is_empty());
        assert!(policy.answers_for("localhost").await.is_empty());
        assert!(!policy.may_connect("127.0.0.1:8080".parse().unwrap()).await);
        assert!(!policy.may_connect("[::1]:8080".parse().unwrap()).await);
    }

    #[tokio::test]
    async fn a_literal_grant_lets_a_name_lead_to_its_address() {
        let policy = Policy::full(&[
            grant(Host::Name("localhost".into()), 8080),
            grant(ip("127.0.0.1"), 8080),
        ]);
        let answers = policy.answers_for("localhost").await;
        assert_eq!(answers, ["127.0.0.1".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn names_match_without_case_or_trailing_dot() {
        let policy = Policy::full(&[grant(Host::Name("example.com".into()), 443)]);
        assert_eq!(policy.granted_name("EXAMPLE.com."), Some("example.com"));
        assert_eq!(policy.granted_name("example.com.evil"), None);
        assert_eq!(policy.granted_name("www.example.com"), None);
        assert!(Policy::full(&[]).is_empty());
    }

    /// A resolver that knows one public name, and counts its lookups.
    fn one_public_name() -> Resolver {
        Arc::new(|name| match name {
            "api.example.com" => Ok(vec![
                "93.184.215.14".parse().map_err(std::io::Error::other)?,
            ]),
            _ => Err(std::io::Error::other("no such name")),
        })
    }

    #[tokio::test]
    async fn raw_tcp_needs_a_grant_with_tcp_true() {
        use SocketAddrUse::TcpConnect;
        let public: SocketAddr = "93.184.215.14:5432".parse().unwrap();
        let loopback: SocketAddr = "127.0.0.1:5432".parse().unwrap();
        let name = || grant(Host::Name("api.example.com".into()), 5432);
        let literal = || grant(ip("127.0.0.1"), 5432);
        for access in [NetAccess::ReadOnly, NetAccess::Full] {
            // HTTP only: the address may be reached, by the host's own requests.
            let http_only = Policy::with_resolver(&[name(), literal()], access, one_public_name());
            assert!(http_only.may_connect(public).await);
            assert!(
                !http_only.may_use_socket(public, TcpConnect).await,
                "{access:?}"
            );
            assert!(
                !http_only.may_use_socket(loopback, TcpConnect).await,
                "{access:?}"
            );
            // Opted in.
            let tcp = |g: NetGrant| NetGrant { tcp: true, ..g };
            let opted_in =
                Policy::with_resolver(&[tcp(name()), tcp(literal())], access, one_public_name());
            assert!(
                opted_in.may_use_socket(public, TcpConnect).await,
                "{access:?}"
            );
            assert!(
                opted_in.may_use_socket(loopback, TcpConnect).await,
                "{access:?}"
            );
            assert!(
                !opted_in
                    .may_use_socket("93.184.215.15:5432".parse().unwrap(), TcpConnect)
                    .await
            );
        }
    }

    /// A resolver that takes `delay` to fail, and counts lookups and the most in flight.
    fn slow_failing(
        delay: std::time::Duration,
    ) -> (Resolver, Arc<[std::sync::atomic::AtomicUsize; 3]>) {
        use std::sync::atomic::Ordering::SeqCst;
        let counts: Arc<[std::sync::atomic::AtomicUsize; 3]> = Arc::default();
        let resolver: Resolver = Arc::new({
            let counts = counts.clone();
            move |_| {
                let [started, in_flight, most] = &*counts;
                started.fetch_add(1, SeqCst);
                let now = in_flight.fetch_add(1, SeqCst) + 1;
                most.fetch_max(now, SeqCst);
                std::thread::sleep(delay);
                in_flight.fetch_sub(1, SeqCst);
                Err(std::io::Error::other("no such name"))
            }
        });
        (resolver, counts)
    }

    fn names(n: usize) -> Vec<NetGrant> {
        (0..n)
            .map(|i| grant(Host::Name(format!("n{i}.example.com")), 443))
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lookups_are_shared_and_capped_per_call() {
        use std::sync::atomic::Ordering::SeqCst;
        let (resolver, counts) = slow_failing(std::time::Duration::from_millis(50));
        let policy = Arc::new(Policy::with_resolver(&names(10), NetAccess::Full, resolver));
        let mut lookups = tokio::task::JoinSet::new();
        for _ in 0..20 {
            for i in 0..10 {
                let policy = policy.clone();
                lookups
                    .spawn(async move { policy.addresses_of(&format!("n{i}.example.com")).await });
            }
        }
        while let Some(answer) = lookups.join_next().await {
            assert!(answer.unwrap().is_empty());
        }
        let [started, _, most] = &*counts;
        // One lookup per name, however many asked at once; no more than the cap at once.
        assert_eq!(started.load(SeqCst), 10);
        assert!(most.load(SeqCst) <= MAX_LOOKUPS_PER_CALL, "{most:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_finished_call_starts_no_more_lookups() {
        use std::sync::atomic::Ordering::SeqCst;
        let (resolver, counts) = slow_failing(std::time::Duration::from_millis(200));
        let policy = Arc::new(Policy::with_resolver(&names(10), NetAccess::Full, resolver));
        let mut lookups = tokio::task::JoinSet::new();
        for i in 0..10 {
            let policy = policy.clone();
            lookups.spawn(async move { policy.addresses_of(&format!("n{i}.example.com")).await });
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // The call ends: its waiting lookups go with it.
        lookups.abort_all();
        drop(policy);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let [started, in_flight, _] = &*counts;
        assert!(started.load(SeqCst) <= MAX_LOOKUPS_PER_CALL, "{started:?}");
        assert_eq!(in_flight.load(SeqCst), 0);
    }
}
