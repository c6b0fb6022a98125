//! The process's shutdown trigger: the first SIGINT (Ctrl-C) or SIGTERM (`docker stop`).
//!
//! Input: OS signals. Output: a future that completes once, handed to `proxy::server::serve`, which
//! then stops accepting and drains in-flight exchanges for `shutdown.grace`.

/// Completes on the first SIGINT or SIGTERM. If a handler cannot be installed, that signal is
/// logged and ignored rather than stopping the proxy at once.
pub async fn signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received, shutting down"),
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
    }
}
