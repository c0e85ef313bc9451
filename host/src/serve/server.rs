//! [`Server`]: `piton serve` as a value a Rust program makes. It loads the tools
//! through a [`Loader`], serves them on stdio, on a byte stream of the caller's or on
//! Streamable HTTP, loads them again whenever the plugins folder or piton.toml
//! changes, and stops without cutting calls short when its [`StopHandle`] says so
//! (and, if asked, on SIGINT or SIGTERM). The `piton serve` command only turns its
//! flags into one and prints.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use piton_host::loader::Loader;
//! use piton_host::serve::{Server, Transport};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let loader = Loader::from_flags(Some("plugins".into()), None)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let server = Server::new(loader, Transport::http(listener))
//!     .with_grace(Duration::from_secs(5))
//!     .stop_on_signals();
//! let stop = server.stop_handle(); // `stop.stop()`, from anywhere, ends it gracefully
//! let started = server.start().await?; // Err: nothing could be loaded
//! println!("serving on http://{}/mcp", started.local_addr().expect("an HTTP server"));
//! started.run().await?; // returns once stopped, the upstream servers closed
//! # drop(stop);
//! # Ok(()) }
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::http::host_check::AllowedHost;
use super::http::limits::HttpLimits;
use super::http::serve_http;
use super::served::Served;
use super::session::ServeError;
use super::signal::{Signal, next_signal};
use super::stdio::serve_until;
use super::stop::DEFAULT_GRACE;
use crate::loader::{Loader, LoaderError};
use crate::plugins::FolderWatch;
use crate::registry::Registry;

/// One load, as [`Server::loading_with`] gives it.
type Loading = Pin<Box<dyn Future<Output = Result<Registry, LoaderError>> + Send>>;

/// What a server loads with, at start and at every reload.
type LoadWith = Arc<dyn Fn(Arc<Loader>) -> Loading + Send + Sync>;

/// How a [`Server`] reaches its clients.
pub enum Transport {
    /// MCP over this process's stdin and stdout, which then carry nothing else. Ends
    /// when stdin closes, or on a stop.
    Stdio,
    /// MCP over a byte stream of the caller's (a pipe, a socket, an in-memory duplex).
    /// Ends when `read` closes, or on a stop.
    Stream {
        /// What the client sends.
        read: Box<dyn AsyncRead + Send + Unpin>,
        /// Where the answers go.
        write: Box<dyn AsyncWrite + Send + Unpin>,
    },
    /// Streamable HTTP at [`MCP_PATH`](super::MCP_PATH) on `listener`, with the probes
    /// beside it (see [`serve_http`]). Ends only on a stop.
    Http {
        /// Where clients connect, already bound.
        listener: TcpListener,
        /// What clients may hold open.
        limits: HttpLimits,
        /// Names besides the bound address that requests may give as Host.
        allowed_hosts: Vec<AllowedHost>,
    },
}

impl Transport {
    /// MCP over `read` and `write`.
    pub fn stream(
        read: impl AsyncRead + Send + Unpin + 'static,
        write: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        Self::Stream {
            read: Box::new(read),
            write: Box::new(write),
        }
    }

    /// Streamable HTTP on `listener`, with the default [`HttpLimits`], answering only
    /// requests that name the bound address.
    pub fn http(listener: TcpListener) -> Self {
        Self::Http {
            listener,
            limits: HttpLimits::default(),
            allowed_hosts: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio => f.write_str("Stdio"),
            Self::Stream { .. } => f.write_str("Stream"),
            Self::Http {
                listener,
                limits,
                allowed_hosts,
            } => f
                .debug_struct("Http")
                .field("addr", &listener.local_addr().ok())
                .field("limits", limits)
                .field("allowed_hosts", allowed_hosts)
                .finish(),
        }
    }
}

/// Tells a [`Server`] to stop: it takes no new calls, lets those in flight answer for
/// up to its grace, closes the upstream servers, and [`Started::run`] returns. Cheap
/// to clone; a stop asked before the server runs ends it as soon as it starts.
#[derive(Clone, Debug)]
pub struct StopHandle(Arc<watch::Sender<bool>>);

impl StopHandle {
    fn new() -> Self {
        Self(Arc::new(watch::Sender::new(false)))
    }

    /// Stops the server (again: nothing more happens).
    pub fn stop(&self) {
        self.0.send_replace(true);
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once a stop is asked for.
    async fn stopped(&self) {
        // The sender lives in `self`, so this never errs.
        let _ = self.0.subscribe().wait_for(|stop| *stop).await;
    }
}

/// `piton serve` for a Rust program: the tools a [`Loader`] loads, served over a
/// [`Transport`] and loaded again when the plugins folder or its piton.toml changes
/// (clients are told: `notifications/tools/list_changed`; calls in flight finish on
/// the tools they started on). Settings have defaults: a grace of [`DEFAULT_GRACE`],
/// no signal handling (a stop comes from a [`StopHandle`]), and a load that logs
/// (with `tracing`) what did not load.
pub struct Server {
    loader: Arc<Loader>,
    transport: Transport,
    grace: Duration,
    signals: bool,
    load: LoadWith,
    stop: StopHandle,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("loader", &self.loader)
            .field("transport", &self.transport)
            .field("grace", &self.grace)
            .field("signals", &self.signals)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Serves what `loader` loads over `transport`.
    pub fn new(loader: impl Into<Arc<Loader>>, transport: Transport) -> Self {
        Self {
            loader: loader.into(),
            transport,
            grace: DEFAULT_GRACE,
            signals: false,
            load: Arc::new(|loader| Box::pin(load_logged(loader))),
            stop: StopHandle::new(),
        }
    }

    /// How long the calls in flight get to answer once a stop begins; those still
    /// running then answer with an error. Default: [`DEFAULT_GRACE`].
    #[must_use]
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Also stops, as its [`StopHandle`] would, on SIGINT or SIGTERM, whose handlers
    /// are in place from when [`Server::start`] returns. Off by default: a library
    /// does not take the host program's signals unasked. Nothing here ever ends the
    /// process: a program that wants a bound on how long a stop takes sets its own
    /// (`piton serve` exits if it has not ended the grace plus 15 s after a signal).
    #[must_use]
    pub fn stop_on_signals(mut self) -> Self {
        self.signals = true;
        self
    }

    /// Loads with `load` (at start and at every reload) instead of
    /// [`Loader::load`] with what did not load logged: to report it another way, as
    /// the CLI does on stderr. An `Err` at start is what [`Server::start`] gives; at a
    /// reload it keeps the tools served until the files change again.
    #[must_use]
    pub fn loading_with<F, Fut>(mut self, load: F) -> Self
    where
        F: Fn(Arc<Loader>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Registry, LoaderError>> + Send + 'static,
    {
        self.load = Arc::new(move |loader| Box::pin(load(loader)));
        self
    }

    /// What stops this server, from any task or thread.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Starts watching the plugins folder and piton.toml (before loading, so no change
    /// is missed; bundled plugins cannot change and are not watched), loads the tools
    /// and, if asked, puts the signal handlers in place. Clients are not answered
    /// before [`Started::run`]. A load that fails closes the loader's upstream
    /// servers and gives why.
    pub async fn start(self) -> Result<Started, LoaderError> {
        let watch = self.loader.watched().map(FolderWatch::start);
        let registry = match (self.load)(self.loader.clone()).await {
            Ok(registry) => registry,
            Err(e) => {
                self.loader.close().await;
                return Err(e);
            }
        };
        let served = Served::new(registry);
        // A reload loads as at start, on the same runtime and upstream connections:
        // when the folder changes, or when kept specs were refused.
        let (loader, load) = (self.loader.clone(), self.load.clone());
        let refused = self.loader.runtime().specs_refused();
        tokio::spawn(Served::reload_on_change(
            Arc::downgrade(&served),
            watch,
            refused,
            move || {
                let loading = load(loader.clone());
                async move { loading.await.ok() }
            },
        ));
        let signal: Option<Pin<Box<dyn Future<Output = Signal> + Send>>> = self
            .signals
            .then(|| Box::pin(next_signal()) as Pin<Box<dyn Future<Output = Signal> + Send>>);
        Ok(Started {
            served,
            loader: self.loader,
            transport: self.transport,
            grace: self.grace,
            stop: self.stop,
            signal,
        })
    }

    /// [`Server::start`], then [`Started::run`].
    pub async fn run(self) -> Result<(), ServerError> {
        Ok(self.start().await?.run().await?)
    }
}

/// A [`Server`] whose tools are loaded and followed, ready to answer.
pub struct Started {
    served: Arc<Served>,
    loader: Arc<Loader>,
    transport: Transport,
    grace: Duration,
    stop: StopHandle,
    signal: Option<Pin<Box<dyn Future<Output = Signal> + Send>>>,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("served", &self.served)
            .field("transport", &self.transport)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

impl Started {
    /// What is served: the registry now, and its changes ([`Served::generation`]).
    pub fn served(&self) -> &Arc<Served> {
        &self.served
    }

    /// Where an HTTP server listens; `None` on stdio or a stream.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.transport {
            Transport::Http { listener, .. } => listener.local_addr().ok(),
            Transport::Stdio | Transport::Stream { .. } => None,
        }
    }

    /// What stops this server (the same as [`Server::stop_handle`] gave).
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Serves until a stop (or, on stdio or a stream, until the input closes): then
    /// it takes no new calls, lets those in flight answer for up to the grace (those
    /// still running then answer with an error), writes the answers, closes the
    /// loader's upstream servers and returns. Reloading ends with it.
    pub async fn run(self) -> Result<(), ServeError> {
        let Self {
            served,
            loader,
            transport,
            grace,
            stop,
            signal,
        } = self;
        let stop = async move {
            match signal {
                Some(signal) => tokio::select! {
                    () = stop.stopped() => {}
                    signal = signal => tracing::info!("stopping: {} arrived", signal.name()),
                },
                None => stop.stopped().await,
            }
        };
        let ended = match transport {
            Transport::Stdio => {
                tracing::info!(tools = served.registry().len(), "serving MCP on stdio");
                // Pipes are read and written on tokio's reactor, not through
                // blocking-pool threads (a hand-off per message): ~60-85 µs less per
                // call, measured by benches/mcp.rs. A terminal or file falls back to
                // the blocking handles.
                let (stdin, stdout) = rmcp::transport::stdio_pipes();
                serve_until(served, stdin, stdout, stop, grace).await
            }
            Transport::Stream { read, write } => {
                serve_until(served, read, write, stop, grace).await
            }
            Transport::Http {
                listener,
                limits,
                allowed_hosts,
            } => serve_http(served, listener, limits, stop, grace, allowed_hosts).await,
        };
        loader.close().await;
        ended
    }
}

/// Why [`Server::run`] ended with a failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Nothing could be loaded at start.
    #[error(transparent)]
    Load(#[from] LoaderError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

/// [`Loader::load`], with each plugin, server and setting that did not make it in
/// logged as a warning, as is a load that failed.
async fn load_logged(loader: Arc<Loader>) -> Result<Registry, LoaderError> {
    let loaded = match loader.load().await {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::warn!(error = %e, "cannot load the tools");
            return Err(e);
        }
    };
    for error in &loaded.server_errors {
        tracing::warn!(%error, "MCP server not added");
    }
    for error in &loaded.errors {
        tracing::warn!(%error, "plugin not loaded");
    }
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    for name in &loaded.unused_config {
        tracing::warn!("piton.toml has [tools.{name}] but no tool is called {name}");
    }
    Ok(loaded.registry)
}
