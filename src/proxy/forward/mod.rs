//! Forwarding one exchange to its upstream over a pooled client.
//!
//! Input: a client request (body already wrapped as [`body::RequestBody`]) and its matched
//! [`Route`]. Output: the upstream's response head with its streaming `Incoming` body, or a
//! [`ProxyError`] tagged with whose fault it is. The caller (the service) decides how to wrap the
//! body before it reaches the client; this is where the tee attaches in the next issue.
//!
//! tooltap's own client ([`crate::upstream`]) serves every route: pooled per upstream
//! (scheme, host, port), HTTPS through rustls (certificates verified, ALPN h2 + http/1.1) and
//! plain HTTP, `TCP_NODELAY` so small SSE frames are not held back by Nagle, reads capped small
//! (`read_cap`).

pub mod body;
mod classify;
pub mod flush_first;
pub mod headers;
pub mod idle;
pub mod slow_body;

/// The upstream's response body as the rest of tooltap sees it: with its idle deadline.
pub type UpstreamBody = idle::IdleBody<ResponseBody>;

use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::Either;
use http::{Method, Request, Response, Version};

use crate::config::Config;
use crate::proxy::error::{ProxyError, TimeoutPhase};
use crate::proxy::exchange::ExchangeCtx;
use crate::route::Route;
use crate::tls::{self, TlsError};
use crate::upstream::{PoolSettings, ResponseBody, UpstreamClient, UpstreamError};
use body::RequestBody;

/// The upstream's answer to a request, or the first-byte timeout's.
type Answered = Result<Result<Response<ResponseBody>, UpstreamError>, tokio::time::error::Elapsed>;

pub use crate::upstream::{UPSTREAM_MAX_HEAD_BYTES, UPSTREAM_MAX_HEADERS};

/// The shared, cloneable forwarding half of the proxy.
#[derive(Clone, Debug)]
pub struct Forwarder {
    client: UpstreamClient,
    connect_timeout: Duration,
    first_byte_timeout: Duration,
    stream_idle_timeout: Duration,
    request_body_timeout: Duration,
    request_body_min_rate: u64,
    metrics: Option<CutCounter>,
}

/// Where the forwarder counts what it cuts; `Metrics` has no `Debug`.
#[derive(Clone)]
struct CutCounter(std::sync::Arc<crate::metrics::Metrics>);

impl std::fmt::Debug for CutCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CutCounter")
    }
}

impl Forwarder {
    pub fn new(config: &Config) -> Result<Forwarder, TlsError> {
        let tls = tls::client_config(config.tls.extra_ca.as_deref())?;
        let settings = PoolSettings {
            connect_timeout: config.timeouts.connect,
            idle_timeout: config.timeouts.pool_idle,
            max_idle: config.connections.upstream_idle,
            max_connections: config.connections.upstream_max,
        };
        let client = UpstreamClient::new(settings, tls);
        Ok(Forwarder {
            client,
            connect_timeout: config.timeouts.connect,
            first_byte_timeout: config.timeouts.first_byte,
            stream_idle_timeout: config.timeouts.stream_idle,
            request_body_timeout: config.timeouts.request_body,
            request_body_min_rate: config.timeouts.request_body_min_rate,
            metrics: None,
        })
    }

    /// Count what the forwarder cuts or mends (slow request bodies, an upstream head framed
    /// twice) and its pool's connections into `metrics`.
    pub fn counting(mut self, metrics: std::sync::Arc<crate::metrics::Metrics>) -> Forwarder {
        self.client.count_into(metrics.clone());
        self.metrics = Some(CutCounter(metrics));
        self
    }

    /// Send `request` to `route`'s upstream and wait for the response head (not the body).
    ///
    /// Not an `async fn`: the request is checked and made ready for the upstream here, and the
    /// future is the upstream client's, timed and mapped; an `async fn` would keep the request
    /// and its parts in its state beside that future, which is part of every request's service
    /// future (hyper moves it whole into its slot for each request).
    pub fn send<'a>(
        &'a self,
        ctx: &'a ExchangeCtx,
        route: &'a Route,
        request: Request<RequestBody>,
    ) -> impl Future<Output = Result<Response<UpstreamBody>, ProxyError>> + 'a {
        let request = match self.upstream_request(ctx, route, request) {
            Ok(request) => request,
            Err(error) => return Either::Left(std::future::ready(Err(error))),
        };
        let pending = self.client.send(&route.upstream, request);
        let timed = tokio::time::timeout(self.first_byte_timeout, pending);
        Either::Right(timed.map(move |answered| self.response_head(ctx, route, answered)))
    }

    /// The request as the upstream gets it: its URI, headers and version rewritten, its body
    /// under the request body's deadlines.
    fn upstream_request(
        &self,
        ctx: &ExchangeCtx,
        route: &Route,
        request: Request<RequestBody>,
    ) -> Result<Request<crate::upstream::RequestBody>, ProxyError> {
        let (mut parts, request_body) = request.into_parts();
        if parts.method == Method::CONNECT {
            return Err(ProxyError::BadRequest(
                "tooltap is a reverse proxy: point your base URL at it instead of using CONNECT"
                    .into(),
            ));
        }
        parts.uri = route.target_uri(&parts.uri).map_err(|error| {
            ProxyError::BadRequest(format!("cannot build the upstream URI: {error}"))
        })?;
        headers::prepare_request(&mut parts.headers, route.upstream.host_header());
        // The client may speak h2c to us while the upstream only speaks HTTP/1.1 (or the
        // reverse): the pooled connection picks the wire version, ALPN decides for HTTPS.
        parts.version = Version::HTTP_11;
        if tracing::enabled!(tracing::Level::DEBUG) {
            // Queries can carry credentials (`?key=` on Gemini's endpoint): never log them raw.
            let mut redacted = Vec::new();
            let uri = crate::redact::url(&parts.uri.to_string(), &mut redacted);
            tracing::debug!(exchange = %ctx.id, upstream_uri = %uri, "forwarding");
        }
        let request_body = slow_body::DeadlineBody::new(
            request_body,
            self.request_body_timeout,
            self.request_body_min_rate,
            self.metrics.as_ref().map(|counter| counter.0.clone()),
        );
        Ok(Request::from_parts(
            parts,
            http_body_util::BodyExt::boxed_unsync(request_body),
        ))
    }

    /// What the upstream answered within the first-byte timeout, as the client will get it.
    fn response_head(
        &self,
        ctx: &ExchangeCtx,
        route: &Route,
        answered: Answered,
    ) -> Result<Response<UpstreamBody>, ProxyError> {
        let response = match answered {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                return Err(classify::upstream_error(
                    &error,
                    &route.upstream,
                    self.connect_timeout,
                ));
            }
            Err(_elapsed) => {
                return Err(ProxyError::UpstreamTimeout {
                    upstream: route.upstream.as_str().to_owned(),
                    phase: TimeoutPhase::FirstByte,
                    after: self.first_byte_timeout,
                });
            }
        };
        let (mut parts, upstream_body) = response.into_parts();
        if headers::prepare_response(&mut parts.headers)
            == headers::ResponseFraming::ConflictingLengthDropped
        {
            if let Some(counter) = &self.metrics {
                counter.0.limit_hit("upstream_length_conflict", "proxy");
            }
            tracing::debug!(
                exchange = %ctx.id,
                "the upstream framed its answer with both Transfer-Encoding and Content-Length; \
                 the body is read by its transfer coding and the Content-Length dropped"
            );
        }
        let body = idle::IdleBody::new(upstream_body, self.stream_idle_timeout);
        Ok(Response::from_parts(parts, body))
    }
}
