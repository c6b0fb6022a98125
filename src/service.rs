//! The per-request service: one client request in, one response out, never an `Err`.
//!
//! Input: a request from `accept` (any method, path, HTTP/1.1 or h2c). Output: the upstream's
//! response with its body boxed as [`ProxyBody`], or tooltap's own error in the OpenAI shape.
//! Each exchange gets an [`ExchangeCtx`] and a tracing span (id, route, method, path) that every
//! log line inside it carries.

use std::convert::Infallible;
use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;
use tracing::Instrument;

use crate::config::Config;
use crate::exchange::ExchangeCtx;
use crate::forward::Forwarder;
use crate::forward::body::{self, ProxyBody};
use crate::tls::TlsError;

/// Everything a request needs, shared by all connections.
#[derive(Debug)]
pub struct ProxyState {
    pub config: Arc<Config>,
    pub forwarder: Forwarder,
}

impl ProxyState {
    pub fn new(config: Arc<Config>) -> Result<ProxyState, TlsError> {
        let forwarder = Forwarder::new(&config)?;
        Ok(ProxyState { config, forwarder })
    }
}

pub async fn handle(
    state: Arc<ProxyState>,
    request: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let (route, _rest) = state.config.routes.resolve(request.uri().path());
    let ctx = ExchangeCtx::begin(route.name.clone(), request.method(), request.uri().path());
    let span = tracing::info_span!(
        "exchange",
        id = %ctx.id,
        route = %ctx.route,
        method = %ctx.method,
        path = %ctx.path,
    );
    let request = request.map(body::from_client);
    let response = async {
        match state.forwarder.send(&ctx, route, request).await {
            Ok(response) => {
                tracing::info!(
                    status = response.status().as_u16(),
                    head_ms = ctx.started.elapsed().as_millis() as u64,
                    "upstream responded"
                );
                // The tee wraps the body here in the next issue.
                response.map(body::from_upstream)
            }
            Err(error) => {
                tracing::warn!(
                    fault = %error.fault(),
                    code = error.code(),
                    status = error.status().as_u16(),
                    %error,
                    "exchange failed"
                );
                error.to_response().map(body::full)
            }
        }
    }
    .instrument(span)
    .await;
    Ok(response)
}
