//! The replay server's per-request service: read the request, find its recording, answer with
//! the recorded head and paced frames, and inspect the exchange exactly as the proxy does.
//!
//! Input: a client request from the accept loop in [`super::server`]. Output: a response with a
//! [`ReplayBody`] wrapped in the proxy's [`TeeBody`], whose copies go to an [`inspect::run`]
//! task (violations in the logs, metrics and the violations file), or an OpenAI-shaped error:
//! 404 `replay_no_match` for a miss (or the upstream's answer with `--on-miss forward`), 413 /
//! 400 for a request body that is too large or broken.

use std::convert::Infallible;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use tokio::sync::oneshot;
use tracing::Instrument;

use super::ReplayState;
use super::body::ReplayBody;
use super::capture;
use super::respond::{self, engine_head, replay_headers};
use crate::exchange::ExchangeCtx;
use crate::forward::body::{self as proxy_body, BodyError, ProxyBody};
use crate::inspect::{self, ExchangeLabel, InspectJob, RecordingSeed, ResponsePart};
use crate::tee::{self, TeeBody};

/// Frames that may wait for the inspector before it counts the exchange as lossy.
pub const TAP_CAPACITY: usize = 1024;
/// A client that takes longer than this to send its request body gets a 400.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of an unmatched request body the miss log line shows.
const LOGGED_BODY: usize = 4096;

/// The name replayed exchanges carry in logs, metrics and the violations file.
pub const ROUTE: &str = "replay";

pub async fn handle(
    state: Arc<ReplayState>,
    request: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let ctx = ExchangeCtx::begin(Arc::from(ROUTE), request.method(), request.uri().path());
    let span = tracing::info_span!(
        "exchange",
        id = %ctx.id,
        route = ROUTE,
        method = %ctx.method,
        path = %ctx.path,
    );
    Ok(answer(&state, ctx, request).instrument(span).await)
}

/// Where the inspector gets the response half of the exchange.
pub type ResponseSlot = oneshot::Sender<ResponsePart>;

async fn answer(
    state: &Arc<ReplayState>,
    ctx: ExchangeCtx,
    request: Request<Incoming>,
) -> Response<ProxyBody> {
    let (parts, incoming) = request.into_parts();
    let body = match read_body(incoming, state.max_request_body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let method = parts.method.as_str();
    let found = {
        let library = state.library.read().unwrap_or_else(PoisonError::into_inner);
        library.next_for(method, &ctx.path, &body).map(|entry| {
            let response = &entry.recording.meta.response;
            let headers = replay_headers(&response.headers, ctx.id.as_str(), &entry.name);
            let replayed = ReplayBody::new(entry.frames.clone(), state.pace, entry.ending);
            (entry.name.clone(), response.status, headers, replayed)
        })
    };
    match found {
        Ok((name, status, headers, replayed)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            tracing::info!(recording = %name, status = status.as_u16(), "replaying");
            let head = engine_head(status, &headers);
            // A replayed exchange is never recorded again.
            let slot = start_inspection(state, &ctx, &body, None).await;
            let (response_tap, response_copies) = tee::tap(TAP_CAPACITY);
            let _ = slot.send(ResponsePart {
                head,
                body: response_copies,
                ttfb: ctx.started.elapsed(),
                headers: None,
            });
            let body = TeeBody::new(replayed, response_tap)
                .map_err(BodyError::from)
                .boxed_unsync();
            let mut response = Response::new(body);
            *response.status_mut() = status;
            *response.headers_mut() = headers;
            response
        }
        Err(miss) => {
            let message = respond::miss_message(method, &ctx.path, &miss);
            let shown = String::from_utf8_lossy(&body[..body.len().min(LOGGED_BODY)]);
            tracing::warn!(body = %shown, "{message}");
            match &state.forward {
                Some(forward) => capture::forward(state, forward, &ctx, parts, body).await,
                None => respond::error_response(StatusCode::NOT_FOUND, "replay_no_match", &message)
                    .map(proxy_body::full),
            }
        }
    }
}

/// Spawn the exchange's inspector, exactly as the proxy does, and hand it the request body
/// through the same tee; the response half goes into the returned slot. (The body was read
/// whole to be matched, so it passes the tee as one frame.)
pub async fn start_inspection(
    state: &ReplayState,
    ctx: &ExchangeCtx,
    body: &Bytes,
    recording: Option<RecordingSeed>,
) -> ResponseSlot {
    let (request_tap, request_copies) = tee::tap(2);
    let (slot, response_part) = oneshot::channel();
    let job = InspectJob {
        label: ExchangeLabel {
            id: Arc::from(ctx.id.as_str()),
            route: ctx.route.clone(),
            started: ctx.started,
            dialect: crate::engine::Dialect::for_path(&ctx.path),
        },
        request: request_copies,
        response: response_part,
        // Replay never enforces: the fixture's bytes are what the test asked for.
        enforced: Arc::default(),
        recording,
    };
    tokio::spawn(inspect::run(state.inspection.clone(), job).in_current_span());
    let copied = TeeBody::new(Full::new(body.clone()), request_tap)
        .collect()
        .await;
    if let Err(never) = copied {
        match never {}
    }
    slot
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
