//! The process's shutdown trigger: the first SIGINT (Ctrl-C) or SIGTERM (`docker stop`).
//!
//! Input: OS signals. Output: a future that completes once, handed to `proxy::server::serve`, which
//! then stops accepting and drains in-flight exchanges for `shutdown.grace`. On Unix the handlers
//! are installed when [`signal`] is called, not when its future is first polled: `main` calls it
//! before it logs "ready", so a SIGTERM sent the moment a supervisor sees that line drains and
//! exits 0 instead of meeting the default disposition and killing the process.

use std::future::Future;

/// Installs the SIGINT and SIGTERM handlers now (elsewhere, Ctrl-C only, on first poll); the
/// returned future completes on the first of them. A handler that cannot be installed is
/// logged and that signal ignored, rather than stopping the proxy at once. Needs a Tokio
/// runtime with signals enabled.
pub fn signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        let install = |kind: SignalKind, name: &'static str| match signal(kind) {
            Ok(stream) => Some(stream),
            Err(error) => {
                tracing::error!(%error, "cannot listen for {name}");
                None
            }
        };
        let received = |stream: Option<Signal>| async move {
            match stream {
                Some(mut stream) => {
                    stream.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let interrupt = received(install(SignalKind::interrupt(), "SIGINT"));
        let terminate = received(install(SignalKind::terminate(), "SIGTERM"));
        async move {
            tokio::select! {
                () = interrupt => tracing::info!("SIGINT received, shutting down"),
                () = terminate => tracing::info!("SIGTERM received, shutting down"),
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
        tracing::info!("SIGINT received, shutting down");
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    /// Sends SIGTERM to this test process before the future is ever polled. Were the handler
    /// installed on first poll, the default disposition would kill the whole test binary.
    #[test]
    fn a_sigterm_before_the_first_poll_completes_the_future_instead_of_killing_the_process() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let shutdown = super::signal();
            let status = std::process::Command::new("kill")
                .args(["-TERM", &std::process::id().to_string()])
                .status()
                .expect("kill runs");
            assert!(status.success());
            tokio::time::timeout(Duration::from_secs(10), shutdown)
                .await
                .expect("the SIGTERM completes the shutdown future");
        });
    }
}
