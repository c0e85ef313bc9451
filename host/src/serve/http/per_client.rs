//! `serve --http`'s share per client: how many connections (or sessions) one client
//! holds at once, so that one client cannot take them all.
//!
//! A client is its peer address: an IPv4 address, or an IPv6 address's /64 (one host
//! is usually given a whole /64 and can pick any address in it). An IPv4 address
//! mapped into IPv6 counts as the IPv4 one. Headers such as `X-Forwarded-For` are not
//! trusted: anyone can send them. Behind a proxy or load balancer every client has
//! the proxy's address, so they share one share.
//!
//! A connection past its client's share is answered 429 and closed ([`refuse`]); a
//! session past it, 429 too (see `sessions`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// One client, as its share is counted: see the module's docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Client(IpAddr);

impl Client {
    /// The client at the peer address `ip`.
    pub(super) fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Self(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                let prefix = v6.to_bits() & !((1_u128 << 64) - 1);
                Self(IpAddr::V6(Ipv6Addr::from_bits(prefix)))
            }
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// What each client holds, each at most `max`.
#[derive(Debug)]
pub(super) struct Shares {
    held: Mutex<HashMap<Client, usize>>,
    max: usize,
}

impl Shares {
    /// At most `max` (at least 1) for each client.
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            held: Mutex::default(),
            max: max.max(1),
        })
    }

    /// The most a client may hold.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// One more for `client`, given back when the [`Held`] is dropped; `None` when it
    /// holds `max` already.
    pub(super) fn take(self: &Arc<Self>, client: Client) -> Option<Held> {
        // Nothing panics while the lock is held: a poisoned map is still right.
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(client).or_insert(0);
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Held {
            shares: self.clone(),
            client,
        })
    }

    /// How many `client` holds.
    #[cfg(test)]
    fn of(&self, client: Client) -> usize {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.get(&client).copied().unwrap_or(0)
    }
}

/// One connection or session of a client's share, counted until dropped.
#[derive(Debug)]
pub(super) struct Held {
    shares: Arc<Shares>,
    client: Client,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self
            .shares
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.client) {
            *count = count.saturating_sub(1);
            // A client that holds nothing leaves the map, so it does not grow with
            // every address ever seen.
            if *count == 0 {
                held.remove(&self.client);
            }
        }
    }
}

/// The most read of a refused connection's request: its head, then its body.
const MAX_READ: usize = 16 << 10;

/// Answers the requests of a connection of `client`, which has `max` open already,
/// with 429 saying so, and closes it after the first, or after `linger`. The request
/// is read first: a client may take an answer that comes before its request for an
/// error, and closing with what it sent unread would reset the connection, losing
/// the answer.
pub(super) async fn refuse(stream: TcpStream, client: Client, max: usize, linger: Duration) {
    let message = Bytes::from(format!(
        "Too Many Requests: this client ({client}) has {max} connections open to piton, the \
         most one client may have (--max-connections-per-client {max}). Use fewer at once (a \
         kept-alive connection carries many requests), or close one, then retry.\n"
    ));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let message = message.clone();
        async move {
            let mut body = request.into_body();
            let mut read = 0;
            while read < MAX_READ {
                match body.frame().await {
                    Some(Ok(frame)) => {
                        read += frame.data_ref().map_or(0, Bytes::len);
                    }
                    Some(Err(_)) | None => break,
                }
            }
            let mut response = Response::new(Full::new(message));
            *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            Ok::<_, Infallible>(response)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .max_buf_size(MAX_READ)
        .serve_connection(TokioIo::new(stream), service);
    // Past `linger` it is dropped, closing it.
    if let Ok(Err(error)) = tokio::time::timeout(linger, connection).await {
        tracing::debug!(%client, %error, "a refused connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn a_client_is_its_ipv4_address_or_its_ipv6_slash_64() {
        assert_eq!(
            Client::of(ip("10.0.0.1")),
            Client::of(ip("::ffff:10.0.0.1"))
        );
        assert_ne!(Client::of(ip("10.0.0.1")), Client::of(ip("10.0.0.2")));
        assert_eq!(
            Client::of(ip("2001:db8:1:2:aaaa::1")),
            Client::of(ip("2001:db8:1:2:ffff:1:2:3"))
        );
        assert_ne!(
            Client::of(ip("2001:db8:1:2::1")),
            Client::of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            Client::of(ip("2001:db8:1:2::9")).to_string(),
            "2001:db8:1:2::/64"
        );
        assert_eq!(Client::of(ip("127.0.0.2")).to_string(), "127.0.0.2");
    }

    #[test]
    fn a_client_holds_at_most_its_share_and_others_are_not_counted_with_it() {
        let shares = Shares::new(2);
        let (a, b) = (Client::of(ip("127.0.0.2")), Client::of(ip("127.0.0.3")));
        let first = shares.take(a).expect("first");
        let _second = shares.take(a).expect("second");
        assert!(shares.take(a).is_none());
        let other = shares.take(b).expect("another client");
        drop(first);
        assert_eq!(shares.of(a), 1);
        let _again = shares.take(a).expect("a place freed");
        drop(other);
        assert_eq!(shares.of(b), 0);
        assert!(shares.held.lock().expect("not poisoned").get(&b).is_none());
    }
}
