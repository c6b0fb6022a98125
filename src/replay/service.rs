//! The replay server's per-request service: read the request, find its recording, answer with
//! the recorded head and paced frames, and inspect the exchange exactly as the proxy does.
//!
//! Input: a client request from the accept loop in [`super::server`]. Output: a response with a
//! [`ReplayBody`] wrapped in the proxy's [`TeeBody`](crate::tap::tee::TeeBody), whose copies go to an [`inspect::run`](crate::inspect::run)
//! task (violations in the logs, metrics and the violations file), or an OpenAI-shaped error:
//! 404 `replay_no_match` for a miss (or the upstream's answer with `--on-miss forward`), 413 /
//! 400 for a request body that is too large or broken. `GET /healthz` answers `ok`, and
//! `GET /readyz` `ready` while accepting and 503 once shutdown began, as the proxy's admin
//! listener does (a probe is not a miss); paths under `/__tooltap/` go to [`admin`].

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use tracing::Instrument;

use super::ReplayState;
use super::admin;
use super::body::ReplayBody;
use super::capture;
use super::library::Sent;
use super::quirks;
use super::respond::{self, replay_headers};
use crate::proxy::exchange::ExchangeCtx;
use crate::proxy::forward::body::{self as proxy_body, BodyError, ProxyBody};
use crate::proxy::forward::flush_first::FlushFirst;

/// A client that takes longer than this to send its request body gets a 400.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of an unmatched request body the miss log line shows (redacted).
const LOGGED_BODY: usize = 4096;

/// The name replayed exchanges carry in logs, metrics and the violations file.
pub const ROUTE: &str = "replay";

pub async fn handle(
    state: Arc<ReplayState>,
    request: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    // Admin requests (a test harness's) are answered, never matched or forwarded.
    if request.uri().path() == admin::VERDICTS {
        return Ok(admin::verdicts(&state, request.method(), request.uri().query()).await);
    }
    if request.uri().path().starts_with(admin::PREFIX) {
        let (method, path) = (request.method(), request.uri().path());
        return Ok(admin::answer(&state, method, path, request.headers()));
    }
    // Probes (a container's, a test harness's) are answered, never matched or logged.
    if request.method() == http::Method::GET {
        match request.uri().path() {
            "/healthz" => return Ok(probe(StatusCode::OK, "ok\n")),
            "/readyz" if state.accepting.load(Ordering::Relaxed) => {
                return Ok(probe(StatusCode::OK, "ready\n"));
            }
            "/readyz" => return Ok(probe(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")),
            _ => {}
        }
    }
    // A matched recording's own dialect replaces this; a forwarded miss keeps its path's.
    let path = request.uri().path();
    let dialect = crate::engine::Dialect::from_path(path);
    let ctx = ExchangeCtx::begin(Arc::from(ROUTE), request.method(), path, dialect);
    let span = ctx.span(true);
    Ok(answer(&state, ctx, request).instrument(span).await)
}

async fn answer(
    state: &Arc<ReplayState>,
    mut ctx: ExchangeCtx,
    request: Request<Incoming>,
) -> Response<ProxyBody> {
    let (parts, incoming) = request.into_parts();
    let body = match read_body(incoming, state.max_request_body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let method = parts.method.as_str();
    let cassette = crate::record::cassette::of_request(&parts.headers);
    let mcp = super::mcp::is_mcp(ctx.dialect);
    let call = mcp.then(|| super::mcp::Call::parse(&body)).flatten();
    let found = {
        let library = state.library.read().unwrap_or_else(PoisonError::into_inner);
        let as_recorded = state.redactor.as_recorded(&body);
        let found = library.next_for_sent(Sent {
            method,
            path: &ctx.path,
            query: parts.uri.query(),
            body: &body,
            as_recorded: as_recorded.as_deref(),
            cassette: cassette.as_deref(),
        });
        found.map(|entry| {
            let response = &entry.recording.meta.response;
            let headers = replay_headers(&response.headers, ctx.id.as_str(), &entry.name);
            (
                entry.name.clone(),
                response.status,
                headers,
                entry.frames.clone(),
                entry.ending,
                entry.recording.meta.injected_quirks(),
                entry.recording.meta.dialect(),
                entry
                    .recording
                    .meta
                    .request
                    .body
                    .bytes()
                    .map(std::borrow::Cow::into_owned),
            )
        })
    };
    match found {
        Ok((name, status, mut headers, frames, ending, injected, dialect, recorded_request)) => {
            // Judged as the recording says it was.
            ctx.dialect = Some(dialect);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            tracing::info!(recording = %name, status = status.as_u16(), "replaying");
            if !injected.is_empty() {
                tracing::info!(
                    recording = %name,
                    injected = %injected.join(","),
                    "replaying a recording whose response tooltap altered on purpose \
                     (proxy --inject): its violations are the injected quirk's, not the provider's"
                );
            }
            let (frames, ending) = match super::mcp::is_mcp(Some(dialect)) {
                true => fit_mcp(
                    state,
                    &parts,
                    call.as_ref(),
                    recorded_request,
                    &mut headers,
                    frames,
                    ending,
                ),
                false => (frames, ending),
            };
            let head = crate::inspect::head::response_head(status.as_u16(), &headers);
            let frames = match state.quirks.is_empty() {
                true => frames,
                false => quirks::apply(&state.quirks, dialect, &body, &head, &frames, &mut headers),
            };
            let replayed = ReplayBody::new(frames, state.pace, ending);
            // Inspected through the proxy's own wiring (cap, tap, severities); a replayed
            // exchange is never recorded again.
            let body = match state.admission.begin_read(&ctx, &parts, None, &body).await {
                Some(admitted) => {
                    let ttfb = ctx.started.elapsed();
                    let teed = admitted.tee(status.as_u16(), &headers, ttfb, replayed);
                    // A recorded break must not take the frames before it along.
                    FlushFirst::new(teed)
                        .map_err(BodyError::from)
                        .boxed_unsync()
                }
                None => FlushFirst::new(replayed)
                    .map_err(BodyError::from)
                    .boxed_unsync(),
            };
            let mut response = Response::new(body);
            *response.status_mut() = status;
            *response.headers_mut() = headers;
            response
        }
        Err(miss) => {
            if mcp && let Some(answer) = super::mcp::unmatched(&parts.method, call.as_ref()) {
                tracing::info!(
                    status = answer.status().as_u16(),
                    "no recording matches; answered as an MCP server without one would"
                );
                return answer;
            }
            let message = respond::miss_message(method, &ctx.path, &miss);
            let shown = state.redactor.body_for_log(&body, LOGGED_BODY);
            tracing::warn!(body = %shown, "{message}");
            match &state.forward {
                Some(forward) => {
                    capture::forward(state, forward, &ctx, parts, body, cassette).await
                }
                None if mcp => super::mcp::miss(call.as_ref(), &message),
                None => respond::error_response(StatusCode::NOT_FOUND, "replay_no_match", &message)
                    .map(proxy_body::full),
            }
        }
    }
}

/// A matched MCP recording fitted to this client (ids, session, event ids; see
/// [`super::mcp`]); a recorded `GET` stream stays open after its events.
fn fit_mcp(
    state: &ReplayState,
    parts: &http::request::Parts,
    call: Option<&super::mcp::Call>,
    recorded_request: Option<Vec<u8>>,
    headers: &mut http::HeaderMap,
    frames: Arc<[crate::record::RecordedFrame]>,
    ending: super::body::ReplayEnding,
) -> (
    Arc<[crate::record::RecordedFrame]>,
    super::body::ReplayEnding,
) {
    let frames = super::mcp::Fit {
        sessions: &state.mcp_sessions,
        sent_headers: &parts.headers,
        call,
        recorded_request: recorded_request.as_deref(),
        headers,
    }
    .apply(frames);
    let ending = match (parts.method == http::Method::GET, ending) {
        (true, super::body::ReplayEnding::Complete) => super::body::ReplayEnding::StayOpen,
        (_, ending) => ending,
    };
    (frames, ending)
}

/// A probe's plain-text answer, as the proxy's admin listener gives it.
fn probe(status: StatusCode, text: &'static str) -> Response<ProxyBody> {
    let mut response = Response::new(proxy_body::full(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The whole request body, or the error response.
async fn read_body(body: Incoming, max: usize) -> Result<Bytes, Response<ProxyBody>> {
    let limited = Limited::new(body, max);
    let error = |status: StatusCode, code: &str, message: String| {
        respond::error_response(status, code, &message).map(proxy_body::full)
    };
    match tokio::time::timeout(BODY_READ_TIMEOUT, limited.collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(cause)) if is_too_large(&cause) => Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request_too_large",
            format!("tooltap replay: request bodies are limited to {max} bytes"),
        )),
        Ok(Err(cause)) => Err(error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("tooltap replay: cannot read the request body: {cause}"),
        )),
        Err(_elapsed) => Err(error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("tooltap replay: the request body took over {BODY_READ_TIMEOUT:?}"),
        )),
    }
}

fn is_too_large(cause: &BodyError) -> bool {
    cause
        .downcast_ref::<http_body_util::LengthLimitError>()
        .is_some()
}
