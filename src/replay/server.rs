//! Accepting connections for the replay server, and stopping it.
//!
//! Input: a bound listener, the [`ReplayState`] (recordings loaded before anything listens, so a
//! bad file fails the start) and a shutdown future. Output: every connection served by the
//! proxy's accept loop ([`crate::accept_loop`]: HTTP/1.1 and h2c, `TCP_NODELAY` so a small SSE frame
//! is not held back waiting for the next) with [`service::handle`]. [`RunningReplay`] runs it on
//! a task, for tests and embedders. On shutdown, in-flight replays get [`GRACE`] to finish.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::library::Usage;
use super::{ReplayError, ReplaySettings, ReplayState, service};
use crate::accept_loop::{self, ListenSettings};
use crate::proxy::server::DRAIN_FLOOR;

/// How long in-flight replays may continue after shutdown is asked for.
pub const GRACE: Duration = Duration::from_secs(5);
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serve until `shutdown` completes, then drain for [`GRACE`]: connections, then the
/// inspections in flight and the writers (forwarded misses' recordings, the violations file);
/// then log the usage report (hits, misses, recordings never used).
pub async fn serve(
    state: Arc<ReplayState>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) {
    let settings = ListenSettings {
        name: "replay",
        header_read: HEADER_READ_TIMEOUT,
        grace: GRACE,
        max_connections: crate::config::ConnectionLimits::default_proxy(),
        metrics: None,
    };
    let began = Arc::new(OnceLock::new());
    let shutdown_began = Arc::clone(&began);
    let accepting = Arc::clone(&state);
    let shutdown = async move {
        shutdown.await;
        // `/readyz` answers 503 from now on, while in-flight replays drain.
        accepting.accepting.store(false, Ordering::Relaxed);
        let _ = shutdown_began.set(Instant::now());
    };
    let serving = Arc::clone(&state);
    let handle = move |request| service::handle(serving.clone(), request);
    accept_loop::serve(listener, settings, shutdown, handle).await;
    // `--on-miss forward` captures are recorded by the inspectors: drain them and the writers.
    let began = began.get().copied().unwrap_or_else(Instant::now);
    let deadline = crate::proxy::admission::drain_deadline(began, GRACE, DRAIN_FLOOR);
    crate::proxy::server::log_drained(&state.admission.drain(deadline).await);
    log_usage(
        &state
            .library
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .usage(),
    );
}

/// How many unused recordings the exit log names; the rest are counted.
const LOGGED_UNUSED: usize = 20;

/// The exit report: hits and misses, and the recordings never used, by name.
fn log_usage(usage: &Usage) {
    tracing::info!(
        recordings = usage.recordings,
        hits = usage.hits,
        misses = usage.misses,
        unused = usage.unused,
        "replay usage"
    );
    if usage.unused == 0 {
        return;
    }
    for cassette in usage.cassettes.iter().filter(|c| !c.unused.is_empty()) {
        let unused = &cassette.unused;
        let list = super::respond::first_of(unused, LOGGED_UNUSED, unused.len());
        tracing::warn!(
            cassette = cassette.cassette.as_deref().unwrap_or("(none)"),
            unused = cassette.unused.len(),
            recordings = %list,
            "recordings never used"
        );
    }
}

/// A replay server on a Tokio task.
pub struct RunningReplay {
    local_addr: SocketAddr,
    state: Arc<ReplayState>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl RunningReplay {
    /// Load the recordings, bind `settings.listen` (port 0 picks a free port) and serve.
    pub async fn start(settings: &ReplaySettings) -> Result<RunningReplay, ReplayError> {
        let state = Arc::new(ReplayState::new(settings)?);
        let addr = settings.listen;
        let bind_error = |cause| ReplayError::Bind { addr, cause };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            // A dropped handle also stops the server.
            let _ = stopped.await;
        };
        let task = tokio::spawn(serve(state.clone(), listener, shutdown));
        Ok(RunningReplay {
            local_addr,
            state,
            stop: Some(stop),
            task,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn state(&self) -> &Arc<ReplayState> {
        &self.state
    }

    /// Stop accepting and drain.
    pub async fn shutdown(mut self) -> Result<(), ReplayError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.map_err(ReplayError::Task)
    }
}
