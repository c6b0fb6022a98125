//! The accept loop shared by the proxy and the replay server: hyper-util's auto builder
//! (HTTP/1.1 and h2c), `TCP_NODELAY` on every accepted socket, a header-read timeout, no `Date`
//! header of tooltap's own, and graceful shutdown.
//!
//! Input: a bound listener, a per-request handler and a shutdown future. Output: every
//! connection served until `shutdown` resolves; then no new connection is accepted, in-flight
//! exchanges get `grace` to finish, and what is left is cut and counted in the [`ServeReport`].

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// How a shutdown went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeReport {
    /// Connections still busy when the grace period ran out, and therefore cut.
    pub connections_cut: usize,
}

/// The timing of one listener.
#[derive(Debug, Clone, Copy)]
pub struct ListenSettings {
    /// How long a client may take to send its request head.
    pub header_read: Duration,
    /// How long in-flight exchanges may continue after shutdown began.
    pub grace: Duration,
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
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(settings.header_read)
        // The upstream's (or the recording's) Date passes through; tooltap adds none of its own.
        .auto_date_header(false);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_finished) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // EMFILE and friends: back off instead of spinning on the error.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                if let Err(error) = stream.set_nodelay(true) {
                    tracing::debug!(%error, %peer, "cannot set TCP_NODELAY");
                }
                let handle = handle.clone();
                let connection = builder
                    .serve_connection(TokioIo::new(stream), service_fn(handle))
                    .into_owned();
                let watched = graceful.watch(connection);
                connections.spawn(async move {
                    if let Err(error) = watched.await {
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
    let connections_cut = match tokio::time::timeout(settings.grace, graceful.shutdown()).await {
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
