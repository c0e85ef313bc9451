//! `piton serve`: its flags (the transport, the HTTP limits, the grace) made into the
//! library's [`Server`], which serves every tool over MCP and reloads when the plugins
//! folder changes; what it prints; and the process's backstop on a signal.

use clap::Args as ClapArgs;

use super::load::{PluginsArg, load_reported, loader};
use super::out::Outcome;
use super::signal::stop_signal;
use crate::serve::{self, AllowedHost, HttpLimits, Server, Transport, per_client};

/// What `serve --http` holds open for its clients, at most.
#[derive(Debug, ClapArgs)]
#[command(next_help_heading = "Limits with --http")]
pub(super) struct HttpLimitsArg {
    /// Connections open at once; past it, new ones wait (in the listen backlog) until
    /// one closes.
    #[arg(long, value_name = "N", default_value = "512", requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// Connections one client (one IP address; for IPv6 one /64) may hold at once;
    /// past it, its new ones get 429. Default: a quarter of --max-connections. Behind
    /// a proxy every client has the proxy's address: raise it to --max-connections.
    #[arg(long, value_name = "N", requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_connections_per_client: Option<u32>,
    /// MCP sessions open at once; past it, `initialize` gets 503 until one is closed
    /// (DELETE) or expires. 2026-07-28 requests need no session.
    #[arg(long, value_name = "N", default_value = "256", requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_sessions: u32,
    /// MCP sessions one client (as for --max-connections-per-client) may hold at once;
    /// past it, its `initialize` gets 429. Default: a quarter of --max-sessions.
    #[arg(long, value_name = "N", requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_sessions_per_client: Option<u32>,
    /// Time a client has to send a request's headers, from its first byte (or from
    /// connecting); then the connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", requires = "http",
          value_parser = crate::config::values::parse_duration)]
    header_timeout: std::time::Duration,
    /// Time a client has to send a request's body, from its headers; then the
    /// connection is closed. Bodies are at most 4 MiB.
    #[arg(long, value_name = "DURATION", default_value = "30s", requires = "http",
          value_parser = crate::config::values::parse_duration)]
    body_timeout: std::time::Duration,
    /// Time a kept-alive connection may sit between requests. Answers being worked
    /// on or streamed (tool calls, event streams) are never cut.
    #[arg(long, value_name = "DURATION", default_value = "60s", requires = "http",
          value_parser = crate::config::values::parse_duration)]
    idle_timeout: std::time::Duration,
    /// Time an MCP session may go without a message before it ends. Keep it above the
    /// longest tool timeout: a call in flight sends none.
    #[arg(long, value_name = "DURATION", default_value = "5m", requires = "http",
          value_parser = crate::config::values::parse_duration)]
    session_timeout: std::time::Duration,
}

impl HttpLimitsArg {
    pub(super) fn limits(&self) -> HttpLimits {
        let max_connections = self.max_connections as usize;
        let max_sessions = self.max_sessions as usize;
        // A share above the whole is the whole.
        let share =
            |given: Option<u32>, max: usize| given.map_or(per_client(max), |n| n as usize).min(max);
        HttpLimits {
            max_connections,
            max_connections_per_client: share(self.max_connections_per_client, max_connections),
            max_sessions,
            max_sessions_per_client: share(self.max_sessions_per_client, max_sessions),
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            idle_timeout: self.idle_timeout,
            session_timeout: self.session_timeout,
        }
    }
}

/// `serve --http`'s settings.
pub(super) struct Http {
    /// Where to listen, as given.
    pub(super) addr: String,
    pub(super) limits: HttpLimits,
    /// Names besides the bound address that requests may give as Host.
    pub(super) allowed_hosts: Vec<AllowedHost>,
}

/// Serves the registry over MCP, on stdio (stdout carries only the protocol) or on
/// HTTP at `http`, reloading it when the plugins folder changes: the library's
/// [`Server`], with what did not load said on stderr, and the address printed.
///
/// SIGTERM or SIGINT stops it: no new connections or calls, the calls in flight get
/// `grace` to answer (those still running then answer with an error), then the
/// upstream servers are closed and it exits 0. Past the grace, the time answers get to
/// be written and the upstream servers to close, the process ends whatever is still
/// running (cli/signal.rs): the library never ends its program, the command does.
pub(super) async fn serve(
    plugins: PluginsArg,
    http: Option<Http>,
    grace: std::time::Duration,
    approve: Option<crate::config::approve::AskMode>,
    code_mode: bool,
) -> Outcome {
    // A bad address fails before anything is loaded.
    let (transport, addr) = match http {
        Some(http) => match listen(&http.addr).await {
            Ok(listener) => {
                let addr = listener.local_addr();
                let transport = Transport::Http {
                    listener,
                    limits: http.limits,
                    allowed_hosts: http.allowed_hosts,
                };
                (transport, Some(addr))
            }
            Err(message) => {
                eprintln!("error: {message}");
                return Outcome::Usage;
            }
        },
        None => (Transport::Stdio, None),
    };
    let Some(mut loader) = loader(plugins) else {
        return Outcome::Usage;
    };
    if code_mode {
        loader = loader.with_code_mode();
    }
    // `serve` asks the person before the calls piton.toml's [approve] names.
    let loader = loader.with_consent(crate::consent::Keeper::new(approve));
    let server = Server::new(loader, transport)
        .with_grace(grace)
        .loading_with(|loader| async move { load_reported(&loader).await });
    let stop = server.stop_handle();
    // The load said on stderr why it failed.
    let Ok(started) = server.start().await else {
        return Outcome::Usage;
    };
    // From here a signal stops serving gracefully rather than killing the process
    // (made now, so the handlers are in place before `listening on` is printed).
    let signal = stop_signal(grace + serve::SHUTDOWN_FLUSH + super::signal::CLOSE);
    tokio::spawn(async move {
        signal.await;
        stop.stop();
    });
    match addr {
        Some(Ok(addr)) => {
            if !addr.ip().is_loopback() {
                eprintln!(
                    "warning: serving on {addr}, not a loopback address: anyone who can \
                     reach it can call every tool (there is no authentication); only \
                     requests that address it by IP (or by a name given with \
                     --allow-host) are answered"
                );
            }
            eprintln!("listening on http://{addr}{}", serve::MCP_PATH);
        }
        Some(Err(e)) => eprintln!("warning: cannot read the listening address: {e}"),
        None => {}
    }
    match started.run().await {
        Ok(()) => Outcome::Success,
        Err(e) => {
            eprintln!("error: {e}");
            Outcome::Stopped
        }
    }
}

/// Binds `addr` (`IP:PORT`, or `localhost:PORT` for 127.0.0.1), or says why not and
/// what to do.
async fn listen(addr: &str) -> Result<tokio::net::TcpListener, String> {
    let parsed = match addr.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}").parse(),
        None => addr.parse::<std::net::SocketAddr>(),
    };
    let Ok(socket) = parsed else {
        return Err(format!(
            "--http {addr}: not an address to listen on; give IP:PORT, e.g. \
             --http 127.0.0.1:8080 (port 0 picks a free port)"
        ));
    };
    tokio::net::TcpListener::bind(socket).await.map_err(|e| {
        format!(
            "--http {addr}: cannot listen there: {e}; pick another port (0 picks a free \
             one) or an address of this machine, e.g. --http 127.0.0.1:0"
        )
    })
}
