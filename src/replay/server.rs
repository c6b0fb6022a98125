//! Accepting connections for the replay server, and stopping it.
//!
//! Input: a bound listener, the [`ReplayState`] (recordings loaded before anything listens, so a
//! bad file fails the start) and a shutdown future. Output: every connection served by
//! hyper-util's auto builder (HTTP/1.1 and h2c) with [`service::handle`], `TCP_NODELAY` set so a
//! small SSE frame is not held back waiting for the next. [`RunningReplay`] runs it on a task,
//! for tests and embedders. On shutdown, in-flight replays get [`GRACE`] to finish.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use super::{ReplayError, ReplaySettings, ReplayState, service};

/// How long in-flight replays may continue after shutdown is asked for.
pub const GRACE: Duration = Duration::from_secs(5);
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serve until `shutdown` completes, then drain for [`GRACE`].
pub async fn serve(
    state: Arc<ReplayState>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
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
    if tokio::time::timeout(GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("grace period over, cutting the remaining replay connections");
    }
    connections.shutdown().await;
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
