//! The accept loop shared by the proxy, its admin listener and the replay server: hyper's own
//! HTTP/1.1 and HTTP/2 (h2c) server connections, the protocol picked from the peeked first
//! bytes, `TCP_NODELAY` on every accepted socket, a header-read timeout that also covers a
//! connection's first byte, a cap on open connections, a backoff on accept errors, no `Date`
//! header of tooltap's own on HTTP/1.1, and graceful shutdown.
//! [`listen_address`] reads every `--listen` flag (the proxy's, the admin listener's, replay's).
//!
//! Input: a bound listener, a per-request handler and a shutdown future. Output: every
//! connection served until `shutdown` resolves; then no new connection is accepted, in-flight
//! exchanges get `grace` to finish, and what is left is cut and counted in the [`ServeReport`].
//! At the cap, new connections wait in the kernel's backlog until one closes; the cap, silent
//! sockets and accept errors are counted in `tooltap_limit_hits_total` and logged at most once
//! per [`LOG_EVERY`].

mod graceful;
mod guard;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::metrics::Metrics;
use crate::read_cap::ReadCapped;
use guard::{Backoff, Opening, Throttle};
pub use guard::{cap_for_fds, open_files_limit};

/// Warnings about the connection cap and accept errors are logged at most this often.
pub const LOG_EVERY: Duration = Duration::from_secs(60);
/// Descriptors kept out of the default connection cap (admin, files, runtime).
pub const FD_RESERVE: u64 = 128;

/// How a shutdown went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeReport {
    /// Connections still busy when the grace period ran out, and therefore cut.
    pub connections_cut: usize,
}

/// The timing and bounds of one listener.
#[derive(Clone)]
pub struct ListenSettings {
    /// Names the listener in logs and metrics: `proxy`, `admin` or `replay`.
    pub name: &'static str,
    /// How long a client may take to send its request head (its first byte included).
    pub header_read: Duration,
    /// How long in-flight exchanges may continue after shutdown began.
    pub grace: Duration,
    /// Connections open at once; beyond it new ones wait in the backlog.
    pub max_connections: usize,
    /// Where hits of these bounds are counted (the replay server has no metrics).
    pub metrics: Option<Arc<Metrics>>,
}

impl ListenSettings {
    fn hit(&self, limit: &str) {
        if let Some(metrics) = &self.metrics {
            metrics.limit_hit(limit, self.name);
        }
    }
}

/// Serve `listener` with `handle` until `shutdown` completes, then drain for `settings.grace`.
pub async fn serve<H, Fut, B>(
    listener: TcpListener,
    settings: ListenSettings,
    shutdown: impl Future<Output = ()>,
    handle: H,
) -> ServeReport
where
    H: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut h1 = http1::Builder::new();
    h1.timer(TokioTimer::new())
        .header_read_timeout(settings.header_read)
        // The upstream's (or the recording's) Date passes through; tooltap adds none of its own.
        .auto_date_header(false);
    let mut h2 = http2::Builder::new(TokioExecutor::new());
    h2.timer(TokioTimer::new());
    let builders = Arc::new((h1, h2));
    let graceful = graceful::Shutdown::new();
    let settings = Arc::new(settings);
    let permits = Arc::new(Semaphore::new(settings.max_connections.max(1)));
    let mut cap_log = Throttle::new(LOG_EVERY);
    let mut error_log = Throttle::new(LOG_EVERY);
    let mut backoff = Backoff::default();
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                settings.hit("connections_max");
                if let Some(suppressed) = cap_log.due() {
                    tracing::warn!(
                        listener = settings.name,
                        max = settings.max_connections,
                        suppressed,
                        "connection cap reached: new connections wait in the backlog until one closes (logged at most once a minute)"
                    );
                }
                tokio::select! {
                    () = &mut shutdown => break,
                    Some(_finished) = connections.join_next(), if !connections.is_empty() => continue,
                    permit = permits.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_closed) => break,
                    },
                }
            }
        };
        tokio::select! {
            () = &mut shutdown => break,
            Some(_finished) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // EMFILE and friends: back off instead of spinning on the error.
                        settings.hit("accept_error");
                        if let Some(suppressed) = error_log.due() {
                            tracing::warn!(
                                listener = settings.name,
                                %error,
                                suppressed,
                                "accept failed; backing off (logged at most once a minute)"
                            );
                        }
                        let pause = backoff.next();
                        tokio::select! {
                            () = &mut shutdown => break,
                            () = tokio::time::sleep(pause) => continue,
                        }
                    }
                };
                backoff.reset();
                if let Err(error) = stream.set_nodelay(true) {
                    tracing::debug!(%error, %peer, "cannot set TCP_NODELAY");
                }
                let handle = handle.clone();
                let builders = builders.clone();
                let watcher = graceful.watcher();
                let settings = settings.clone();
                connections.spawn(async move {
                    let _permit = permit;
                    let opening = guard::first_bytes(&stream, settings.header_read).await;
                    let io = TokioIo::new(ReadCapped(stream));
                    let (h1, h2) = &*builders;
                    let served = match opening {
                        Opening::Http1 => {
                            let connection = h1.serve_connection(io, service_fn(handle));
                            graceful::watched(connection, watcher, |c| c.graceful_shutdown()).await
                        }
                        Opening::Http2 => {
                            let connection = h2.serve_connection(io, service_fn(handle));
                            graceful::watched(connection, watcher, |c| c.graceful_shutdown()).await
                        }
                        Opening::Silent => {
                            settings.hit("header_read_timeout");
                            tracing::debug!(%peer, listener = settings.name, "closed a connection that sent nothing");
                            return;
                        }
                        Opening::Closed => return,
                    };
                    if let Err(error) = served {
                        // hyper's header-read timer fired.
                        if error.is_timeout() {
                            settings.hit("header_read_timeout");
                        }
                        tracing::debug!(%peer, %error, "client connection ended with an error");
                    }
                });
            }
        }
    }
    drop(listener);
    tracing::info!(
        open = connections.len(),
        grace_ms = settings.grace.as_millis() as u64,
        "draining"
    );
    graceful.begin();
    let all_ended = async { while connections.join_next().await.is_some() {} };
    let connections_cut = match tokio::time::timeout(settings.grace, all_ended).await {
        Ok(()) => 0,
        Err(_elapsed) => {
            // Reap tasks that finished but were not joined yet, so `len` counts live ones only.
            while connections.try_join_next().is_some() {}
            let open = connections.len();
            tracing::warn!(open, "grace period over, cutting the remaining connections");
            open
        }
    };
    connections.shutdown().await;
    ServeReport { connections_cut }
}

/// A `--listen` value: an IP address and a port. A bare port (`4640`) or a host name is
/// refused with the form that is wanted, not only "invalid socket address syntax".
pub fn listen_address(value: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = value.parse::<SocketAddr>() {
        return Ok(address);
    }
    let example = match value.parse::<u16>() {
        Ok(port) => format!("127.0.0.1:{port}"),
        Err(_) => "127.0.0.1:8787".to_owned(),
    };
    Err(format!(
        "an address is wanted: an IP and a port, e.g. {example} (or [::1]:8787; port 0 picks \
         a free one)"
    ))
}
