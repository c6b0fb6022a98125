//! `--on-miss forward`: a request no recording answers goes upstream through the proxy's own
//! forwarding and inspection path.
//!
//! Input: the missed request (head and the body the service already read) and the response
//! slot of its inspection job. Output: the upstream's response, teed into the inspector exactly
//! as the proxy does and teed a second time into [`remember`], which adds the exchange to the
//! running server's library (identical requests are then replayed offline); or the proxy's own
//! OpenAI-shaped error (502/504...) when the upstream cannot be reached.
//!
//! The inspector also writes the forwarded exchange into the recordings directory through the
//! recorder (`src/record/`, mode `all`, with its redaction), as
//! `<recordings>/replay/<yyyy-mm-dd>/<id>.jsonl`, or `<recordings>/<cassette folder>/<id>.jsonl`
//! when the request named a cassette (see [`crate::record::cassette`]; the header is recorded
//! and never sent upstream): the next start loads it like any fixture.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use http_body_util::BodyExt;
use tracing::Instrument;

use super::ReplayState;
use super::remember::{self, Forwarded};
use super::respond::EXCHANGE_HEADER;
use crate::config::{Config, ConfigError, RawConfig};
use crate::inspect::RecordingSeed;
use crate::proxy::exchange::ExchangeCtx;
use crate::proxy::forward::Forwarder;
use crate::proxy::forward::body::{self as proxy_body, BodyError, ProxyBody};
use crate::tap::detached::detached;
use crate::tap::tee::{self, TeeBody};
use crate::tls::TlsError;

/// Frames of a forwarded miss's response that may wait for [`remember`] before its tap counts
/// as overflowed (the exchange is then not kept for replay; the client's bytes are untouched).
const TAP_CAPACITY: usize = 1024;

/// The forwarding half of a replay server in `--on-miss forward` mode.
#[derive(Debug)]
pub struct ForwardMiss {
    pub config: Arc<Config>,
    pub forwarder: Forwarder,
}

/// Why forwarding could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ForwardSetupError {
    /// Names `--upstream` itself; complete on its own.
    #[error(transparent)]
    Config(ConfigError),
    #[error(transparent)]
    Tls(#[from] TlsError),
}

impl ForwardMiss {
    /// A forwarder for `upstream` with the proxy's default timeouts and TLS roots.
    pub fn new(upstream: &str) -> Result<ForwardMiss, ForwardSetupError> {
        let mut raw = RawConfig::default();
        raw.proxy.upstream = Some(upstream.to_owned());
        let config = Arc::new(Config::validate(raw, None).map_err(ForwardSetupError::Config)?);
        let forwarder = Forwarder::new(&config)?;
        Ok(ForwardMiss { config, forwarder })
    }
}

pub async fn forward(
    state: &Arc<ReplayState>,
    forward: &ForwardMiss,
    ctx: &ExchangeCtx,
    parts: Parts,
    body: Bytes,
    cassette: Option<String>,
) -> Response<ProxyBody> {
    let (route, _rest) = forward.config.routes.resolve(&ctx.path);
    // Recorded (by the recorder, when `--recordings` is writable) exactly like a proxied exchange.
    let started = SystemTime::now()
        .checked_sub(ctx.started.elapsed())
        .unwrap_or_else(SystemTime::now);
    let seed = RecordingSeed::of(started, route.upstream.as_str(), &ctx.path, &parts);
    let admitted = state
        .admission
        .begin_read(ctx, &parts, Some(seed), &body)
        .await;
    let method = parts.method.to_string();
    let request = Request::from_parts(parts, proxy_body::full(body.clone()));
    match forward.forwarder.send(ctx, route, request).await {
        Ok(response) => {
            let (mut parts, incoming) = response.into_parts();
            tracing::info!(
                status = parts.status.as_u16(),
                upstream = route.upstream.as_str(),
                "miss forwarded upstream"
            );
            let (keep_tap, kept) = tee::tap(TAP_CAPACITY);
            let forwarded = Forwarded {
                upstream: route.upstream.as_str().to_owned(),
                method,
                request_body: body.to_vec(),
                status: parts.status,
                headers: detached(&parts.headers),
                cassette,
            };
            tokio::spawn(
                remember::remember(state.clone(), ctx.clone(), forwarded, kept).in_current_span(),
            );
            if let Ok(value) = http::HeaderValue::from_str(ctx.id.as_str()) {
                parts.headers.insert(EXCHANGE_HEADER, value);
            }
            let inspected = match admitted {
                Some(admitted) => {
                    let ttfb = ctx.started.elapsed();
                    let status = parts.status.as_u16();
                    proxy_body::from_upstream(admitted.tee(status, &parts.headers, ttfb, incoming))
                }
                None => proxy_body::from_upstream(incoming),
            };
            let body = TeeBody::new(inspected, keep_tap)
                .map_err(BodyError::from)
                .boxed_unsync();
            Response::from_parts(parts, body)
        }
        Err(error) => {
            tracing::warn!(fault = %error.fault(), code = error.code(), %error, "forwarding a miss failed");
            error.to_response().map(proxy_body::full)
        }
    }
}
