//! Running the proxy: serving its listener through [`crate::accept_loop`], and stopping gracefully.
//!
//! Input: a bound [`TcpListener`], the [`ProxyState`] (built first, so a bad CA bundle fails
//! before anything listens) and a shutdown future (signals in the binary, a
//! watch channel in tests through [`RunningProxy`]). Output: every connection served with
//! [`service::handle`]; on shutdown `/readyz` turns 503, in-flight exchanges finish for
//! `shutdown.grace`, then what is left is cut. Also starts the admin listener.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::accept_loop::{self, ListenSettings};
use crate::admin;
use crate::config::Config;
use crate::proxy::service::{self, ProxyState};
use crate::tls::TlsError;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot bind {addr}: {cause}")]
    Bind {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error(
        "the admin listener (/metrics, /healthz) cannot bind {addr}: {cause}; choose another \
         address with --admin-listen (TOOLTAP_ADMIN_LISTEN, admin.listen) or turn it off with \
         --admin-listen off"
    )]
    AdminBind {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("the proxy task failed: {0}")]
    Task(tokio::task::JoinError),
}

pub use crate::accept_loop::ServeReport;
pub use crate::proxy::admission::Drained;

/// How a proxy stopped: the connections its grace cut, and what inspection drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopReport {
    /// Connections still busy when the grace period ran out, and therefore cut.
    pub connections_cut: usize,
    /// The inspections and writers drained after the connections closed.
    pub drained: Drained,
}

/// After the grace cut connections, their inspections still get this long (at most the grace)
/// to write the cut exchanges' verdicts and recordings.
pub const DRAIN_FLOOR: Duration = Duration::from_secs(1);

/// Serve until `shutdown` completes, then drain: connections for `shutdown.grace`, then the
/// inspections in flight and every writer, until the same grace has passed (at least
/// [`DRAIN_FLOOR`] after the connections closed). Returns once all of it is done or the
/// deadline came.
pub async fn serve(
    state: Arc<ProxyState>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<StopReport, ServeError> {
    let settings = ListenSettings {
        name: "proxy",
        header_read: state.config.timeouts.header_read,
        grace: state.config.shutdown.grace,
        max_connections: state.config.connections.proxy,
        metrics: Some(state.metrics.clone()),
    };
    let grace = settings.grace;
    let ready = state.ready.clone();
    let began = Arc::new(OnceLock::new());
    let shutdown_began = Arc::clone(&began);
    let shutdown = async move {
        shutdown.await;
        let _ = shutdown_began.set(Instant::now());
        // `/readyz` answers 503 from now on, while in-flight exchanges drain.
        ready.store(false, Ordering::Relaxed);
    };
    let serving = Arc::clone(&state);
    let handle = move |request| service::handle(serving.clone(), request);
    let ServeReport { connections_cut } =
        accept_loop::serve(listener, settings, shutdown, handle).await;
    let began = began.get().copied().unwrap_or_else(Instant::now);
    let drained = state
        .admission
        .drain(crate::proxy::admission::drain_deadline(
            began,
            grace,
            DRAIN_FLOOR,
        ))
        .await;
    log_drained(&drained);
    Ok(StopReport {
        connections_cut,
        drained,
    })
}

/// One line saying what the drain finished, and a warning naming what it left.
pub fn log_drained(drained: &Drained) {
    let Drained {
        inspections,
        inspections_left,
        writers_flushed,
        writers_left,
    } = *drained;
    if drained.complete() {
        tracing::info!(
            inspections,
            writers_flushed,
            "drained: every inspection finished and every writer flushed"
        );
    } else {
        tracing::warn!(
            inspections,
            inspections_left,
            writers_flushed,
            writers_left,
            "grace period over before inspection drained: the verdicts and recordings of \
             inspections_left exchanges, and what writers_left writers held, are lost"
        );
    }
}

/// A proxy running on a Tokio task: what tests and embedders use.
pub struct RunningProxy {
    local_addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    state: Arc<ProxyState>,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    task: JoinHandle<Result<StopReport, ServeError>>,
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
    pub async fn shutdown(mut self) -> Result<StopReport, ServeError> {
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
        .map_err(|cause| ServeError::AdminBind { addr, cause })?;
    let bound = listener
        .local_addr()
        .map_err(|cause| ServeError::AdminBind { addr, cause })?;
    let admin_state = admin::AdminState {
        metrics: state.metrics.clone(),
        ready: state.ready.clone(),
        verdicts: state.admission.verdicts().clone(),
    };
    let settings = ListenSettings {
        name: "admin",
        header_read: state.config.timeouts.header_read,
        grace: admin::GRACE,
        max_connections: state.config.connections.admin,
        metrics: Some(state.metrics.clone()),
    };
    tokio::spawn(admin::serve(listener, admin_state, settings, async move {
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
