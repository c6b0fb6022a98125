//! The per-request service: one client request in, one response out, never an `Err`.
//!
//! Input: a request from `accept` (any method, path, HTTP/1.1 or h2c). Output: the upstream's
//! response with its body boxed as [`ProxyBody`], or tooltap's own error in the OpenAI shape.
//! Each exchange gets an [`ExchangeCtx`] and a tracing span (id, route, method, path) that every
//! log line inside it carries. The `[inspect]` settings decide per route whether the exchange
//! is admitted to inspection (its bodies teed to an inspector, see [`crate::proxy::admission`]) and whether it is
//! enforced (see [`crate::proxy::enforce`]); every response gets the `x-tooltap-exchange` header.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use http::{Request, Response};
use http_body_util::{BodyExt, Either};
use hyper::body::Incoming;
use tracing::Instrument;

use crate::config::Config;
use crate::engine::RequestParts;
use crate::metrics::Metrics;
use crate::proxy::admission::Admission;
use crate::proxy::enforce::{self, Held};
use crate::proxy::error::ProxyError;
use crate::proxy::exchange::EXCHANGE_HEADER;
use crate::proxy::exchange::ExchangeCtx;
use crate::proxy::forward::Forwarder;
use crate::proxy::forward::body::{self, ProxyBody};
use crate::route::Route;
use crate::tls::TlsError;

/// [`EXCHANGE_HEADER`], parsed once.
const EXCHANGE_HEADER_NAME: http::HeaderName = http::HeaderName::from_static(EXCHANGE_HEADER);

/// Everything a request needs, shared by all connections.
pub struct ProxyState {
    pub config: Arc<Config>,
    pub forwarder: Forwarder,
    pub metrics: Arc<Metrics>,
    pub admission: Admission,
    /// True while accepting; false once shutdown began (`/readyz` answers 503 then).
    pub ready: Arc<AtomicBool>,
}

impl ProxyState {
    pub fn new(config: Arc<Config>) -> Result<ProxyState, TlsError> {
        let metrics = Arc::new(Metrics::default());
        let forwarder = Forwarder::new(&config)?.counting(metrics.clone());
        let admission = Admission::new(&config, metrics.clone());
        Ok(ProxyState {
            config,
            forwarder,
            metrics,
            admission,
            ready: Arc::new(AtomicBool::new(true)),
        })
    }
}

pub async fn handle(
    state: Arc<ProxyState>,
    request: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let (route, _rest) = state.config.routes.resolve(request.uri().path());
    let (method, path) = (request.method(), request.uri().path());
    let decision = state
        .config
        .inspect
        .decide(&route.name, method.as_str(), path);
    let ctx = ExchangeCtx::begin(route.name.clone(), method, path, decision.dialect);
    let (inspect, enforce) = (decision.inspect, decision.enforce);
    // `--inject`: drawn per exchange; a quirk reads the request (tool choice, schemas).
    let quirks = crate::proxy::inject::draw(&state.config, &route.name);
    // The span is at `info` only where its events need it (enforce's and the quirks' lines
    // say which exchange through it); otherwise at `debug`, so that default logging does not
    // build one per exchange, a noticeable share of a request's CPU (see
    // docs/benchmarks.md#exchange-span). The lines an ordinary exchange can log at `info` and
    // above (`exchange failed`, the inspector's) carry the exchange id themselves.
    let span = ctx.span(enforce || !quirks.is_empty());
    let mut response = run(&state, &ctx, route, request, inspect, enforce, quirks)
        .instrument(span)
        .await;
    state
        .metrics
        .request(&ctx.route, response.status().as_u16());
    if let Ok(value) = http::HeaderValue::from_str(ctx.id.as_str()) {
        response.headers_mut().insert(EXCHANGE_HEADER_NAME, value);
    }
    Ok(response)
}

/// One exchange: tee it when inspected, hold it when enforced, forward it, answer.
async fn run(
    state: &ProxyState,
    ctx: &ExchangeCtx,
    route: &Route,
    request: Request<Incoming>,
    inspect: bool,
    enforce: bool,
    quirks: Vec<crate::quirk::QuirkId>,
) -> Response<ProxyBody> {
    let (parts, incoming) = request.into_parts();
    // The target (path and query) enforce mode's engine is started from; the query can carry a
    // `key=` credential, so it goes to the dialect only, never to a log.
    let target = enforce.then(|| crate::inspect::RequestHead::of(ctx.dialect, &parts));
    let (mut request_body, mut admitted) = if inspect {
        state
            .admission
            .begin(ctx, &parts, route.upstream.as_str(), incoming, enforce)
    } else {
        (body::from_client(incoming), None)
    };
    let mut held = None;
    if enforce || !quirks.is_empty() {
        match enforce::hold(request_body, state.config.inspect.max_request_body).await {
            Held::Whole(bytes) => {
                request_body = body::full(bytes.clone());
                held = Some(bytes);
            }
            Held::TooLarge(rest) => {
                tracing::warn!(
                    enforce,
                    quirks = quirks.len(),
                    "request body over inspect.max_request_body: forwarded unenforced, no quirk injected"
                );
                request_body = rest.boxed_unsync();
            }
            Held::Failed(error) => {
                let message = format!("the request body failed while tooltap read it: {error}");
                return failure(ctx, ProxyError::BadRequest(message));
            }
        }
    }
    let request = Request::from_parts(parts, request_body);
    let sent = Instant::now();
    state
        .metrics
        .request_overhead(&ctx.route, sent - ctx.started);
    let response = match state.forwarder.send(ctx, route, request).await {
        Ok(response) => response,
        Err(error) => return failure(ctx, error),
    };
    let ttfb = sent.elapsed();
    tracing::debug!(
        status = response.status().as_u16(),
        head_ms = ctx.started.elapsed().as_millis() as u64,
        "upstream responded"
    );
    let cut = admitted
        .as_mut()
        .map(|admitted| std::mem::take(&mut admitted.cut))
        .unwrap_or_default();
    // A quirk rewrites one dialect: an exchange no dialect names gets none.
    let injecting = held
        .as_ref()
        .filter(|_| !quirks.is_empty())
        .zip(ctx.dialect);
    // The response body's layers, innermost first, each wrapping the one above it:
    let (mut parts, body) = response.into_parts();
    // 1. idle: `Forwarder::send` gave the upstream's body in an `IdleBody`, which ends a body
    //    whose upstream stopped sending (`timeouts.stream_idle`).
    // 2. quirk (`--inject`): the upstream's bytes rewritten, so every layer above sees what
    //    the client gets; the head says which quirks applied.
    let body = match injecting {
        Some((request, dialect)) => crate::proxy::inject::layer(
            &quirks,
            dialect,
            request,
            state.config.inject.max_hold,
            state.metrics.clone(),
            &mut parts,
            body,
        ),
        None => Either::Left(body),
    };
    // 3. tee (inspected): each frame copied to the inspector as the client gets it.
    let body = match admitted {
        Some(admitted) => {
            Either::Right(admitted.tee(parts.status.as_u16(), &parts.headers, ttfb, body))
        }
        None => Either::Left(body),
    };
    // 4. flush-first: an error held back one poll, so the frames before it reach the client.
    let response = Response::from_parts(parts, body::from_upstream(body));
    // 5. enforce (enforce mode): the frames judged as they pass, the body cut at a violation.
    match held.filter(|_| enforce).zip(ctx.dialect) {
        Some((request_body, dialect)) => {
            let inspection = state.admission.inspection();
            // Boxed: enforce mode alone takes it, and inline its future would be a large part
            // of every request's service future (see `upstream::pool::Pool::checkout`).
            Box::pin(enforce::response(
                &inspection.engine,
                &inspection.schemas,
                dialect,
                RequestParts {
                    body: &request_body,
                    path: target.as_ref().and_then(|head| head.target.as_deref()),
                    method: target
                        .as_ref()
                        .and_then(|head| head.method.as_ref())
                        .map(http::Method::as_str),
                    headers: target.as_ref().map_or(&[], |head| &head.headers),
                },
                response,
                state.config.inspect.enforce_status,
                cut,
            ))
            .await
        }
        None => response,
    }
}

/// tooltap's own error, logged with whose fault it is, in the OpenAI shape.
fn failure(ctx: &ExchangeCtx, error: ProxyError) -> Response<ProxyBody> {
    tracing::warn!(
        exchange = %ctx.id,
        route = %ctx.route,
        method = %ctx.method,
        path = %ctx.path,
        fault = %error.fault(),
        code = error.code(),
        status = error.status().as_u16(),
        %error,
        "exchange failed"
    );
    error.to_response().map(body::full)
}
