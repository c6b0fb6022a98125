//! Accepting client connections, and stopping gracefully.
//!
//! Input: a bound [`TcpListener`], the [`ProxyState`] (built first, so a bad CA bundle fails
//! before anything listens) and a shutdown future (signals in the binary, a
//! oneshot in tests through [`RunningProxy`]). Output: every connection served by hyper-util's
//! auto builder (HTTP/1.1 and h2c) with [`service::handle`]. On shutdown: stop accepting, let
//! in-flight exchanges finish for `shutdown.grace`, then cut what is left.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::admin;
use crate::config::Config;
use crate::service::{self, ProxyState};
use crate::tls::TlsError;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot bind {addr}: {cause}")]
    Bind {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("the proxy task failed: {0}")]
    Task(tokio::task::JoinError),
}

/// How a shutdown went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeReport {
    /// Connections still busy when the grace period ran out, and therefore cut.
    pub connections_cut: usize,
}

/// Serve until `shutdown` completes, then drain. Returns once every connection is closed.
pub async fn serve(
    state: Arc<ProxyState>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<ServeReport, ServeError> {
    let config = state.config.clone();
    let grace = config.shutdown.grace;
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.timeouts.header_read)
        // The upstream's Date passes through; tooltap adds none of its own.
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
                let state = state.clone();
                let service = service_fn(move |request| service::handle(state.clone(), request));
                let connection = builder
                    .serve_connection(TokioIo::new(stream), service)
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
    state.ready.store(false, Ordering::Relaxed);
    tracing::info!(
        open = connections.len(),
        grace_ms = grace.as_millis() as u64,
        "draining"
    );
    let connections_cut = match tokio::time::timeout(grace, graceful.shutdown()).await {
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
    Ok(ServeReport { connections_cut })
}

/// A proxy running on a Tokio task: what tests and embedders use.
pub struct RunningProxy {
    local_addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    state: Arc<ProxyState>,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    task: JoinHandle<Result<ServeReport, ServeError>>,
}

impl RunningProxy {
    /// Bind `config.listen` (port 0 picks a free port) and start serving.
    pub async fn start(config: Config) -> Result<RunningProxy, ServeError> {
        let addr = config.listen;
        let state = Arc::new(ProxyState::new(Arc::new(config))?);
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|cause| ServeError::Bind { addr, cause })?;
        let local_addr = listener
            .local_addr()
            .map_err(|cause| ServeError::Bind { addr, cause })?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let stopped = StopSignal(stopped);
        let admin_addr = match state.config.admin.listen {
            Some(addr) => Some(start_admin(&state, addr, stopped.clone()).await?),
            None => None,
        };
        let shutdown = async move {
            // A dropped handle also stops the proxy.
            stopped.wait().await;
        };
        let task = tokio::spawn(serve(state.clone(), listener, shutdown));
        Ok(RunningProxy {
            local_addr,
            admin_addr,
            state,
            stop: Some(stop),
            task,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Where the admin listener (metrics, health) listens, when enabled.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// The proxy's shared state (metrics, inspection), for tests and embedders.
    pub fn state(&self) -> &Arc<ProxyState> {
        &self.state
    }

    /// Stop accepting, drain for the configured grace, and report.
    pub async fn shutdown(mut self) -> Result<ServeReport, ServeError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        (&mut self.task).await.map_err(ServeError::Task)?
    }
}

/// Bind and start the admin listener; it stops when `stop` fires.
pub async fn start_admin(
    state: &Arc<ProxyState>,
    addr: SocketAddr,
    stop: StopSignal,
) -> Result<SocketAddr, ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|cause| ServeError::Bind { addr, cause })?;
    let bound = listener
        .local_addr()
        .map_err(|cause| ServeError::Bind { addr, cause })?;
    let admin_state = admin::AdminState {
        metrics: state.metrics.clone(),
        ready: state.ready.clone(),
    };
    tokio::spawn(admin::serve(listener, admin_state, async move {
        stop.wait().await
    }));
    Ok(bound)
}

/// A stop signal that several tasks can wait on (the proxy and its admin listener).
#[derive(Clone, Debug)]
pub struct StopSignal(pub tokio::sync::watch::Receiver<bool>);

impl StopSignal {
    /// Resolves once stop was requested or the requester is gone.
    pub async fn wait(mut self) {
        let _ = self.0.wait_for(|stopped| *stopped).await;
    }
}
