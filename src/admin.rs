//! The admin listener: `/metrics` (Prometheus text format), `/healthz`, `/readyz`, and
//! `/__tooltap/verdicts` (the last exchanges' verdicts, waiting for pending ones:
//! [`crate::inspect::verdicts`]; what a test harness asks after each test).
//!
//! It listens on its own address (loopback by default), separate from the proxied traffic, so a
//! scrape can never be confused with a client request and the proxy's routes stay transparent.
//! `/healthz` answers while the process runs; `/readyz` answers 200 while the proxy accepts and
//! 503 once shutdown has begun, so a load balancer stops sending new work first.
//! Connections go through the same accept loop as the proxy's ([`crate::accept_loop`]), with a cap
//! of their own (`proxy.admin_max_connections`), so silent or piled-up scrapers cannot take
//! the proxy's descriptors or keep `/metrics` from answering.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use tokio::net::TcpListener;

use crate::accept_loop::{self, ListenSettings};

use crate::inspect::verdicts::Verdicts;
use crate::metrics::Metrics;

/// What the admin endpoints read.
#[derive(Clone)]
pub struct AdminState {
    pub metrics: Arc<Metrics>,
    /// False once shutdown has begun.
    pub ready: Arc<AtomicBool>,
    /// The proxy's verdict board, served on [`VERDICTS`].
    pub verdicts: Arc<Verdicts>,
}

/// The path of the verdicts query, the same as `tooltap replay`'s.
pub const VERDICTS: &str = "/__tooltap/verdicts";

/// How long an in-flight scrape may finish after shutdown began.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Serve the admin endpoints on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    state: AdminState,
    settings: ListenSettings,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let state = Arc::new(state);
    let handle = move |req: Request<Incoming>| {
        let state = state.clone();
        async move {
            if req.uri().path() == VERDICTS && req.method() == Method::GET {
                return Ok::<_, Infallible>(
                    verdicts_answer(&state.verdicts, req.uri().query()).await,
                );
            }
            Ok(answer(&state, &req))
        }
    };
    accept_loop::serve(listener, settings, shutdown, handle).await;
}

fn answer(state: &AdminState, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    }
    match req.uri().path() {
        "/metrics" => {
            let mut response = text(StatusCode::OK, &state.metrics.render());
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            response
        }
        "/healthz" => text(StatusCode::OK, "ok\n"),
        "/readyz" if state.ready.load(Ordering::Relaxed) => text(StatusCode::OK, "ready\n"),
        "/readyz" => text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n"),
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: the admin listener serves /metrics, /healthz, /readyz and GET \
             /__tooltap/verdicts\n",
        ),
    }
}

async fn verdicts_answer(verdicts: &Verdicts, query: Option<&str>) -> Response<Full<Bytes>> {
    let response = match crate::inspect::verdicts::answer(verdicts, query).await {
        Ok(body) => crate::answer::json_response(StatusCode::OK, &body),
        Err(message) => crate::answer::error_response(
            StatusCode::BAD_REQUEST,
            "tooltap_error",
            "bad_verdicts_query",
            &format!("tooltap: {message}"),
        ),
    };
    response.map(Full::new)
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Bind the admin address; a separate step so callers learn the port before serving.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}
