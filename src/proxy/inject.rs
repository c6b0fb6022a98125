//! `tooltap proxy --inject`: quirks applied to live responses on their way to the client.
//!
//! Input: the route's [`crate::quirk::InjectPlan`] (drawn once per exchange), the held request
//! body and the upstream's response. Output: the response a broken provider would have sent:
//! headers `x-tooltap-quirk` (the drawn quirks that have a transformation for this body) and
//! `x-tooltap-quirk-not-applicable` (the others), no `content-length` (the length changes), and
//! a `QuirkBody` that runs each upstream frame through [`LiveQuirks`]. The proxy tees *this*
//! body to the inspector, so the violations reported are the ones the client got. Like enforce
//! mode this is opt-in work on the client path; without `--inject` nothing here runs.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http::header::{self, HeaderName, HeaderValue};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Either;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::proxy::forward::UpstreamBody;
use crate::proxy::forward::body::{BodyError, PolledFrame};
use crate::quirk::{LiveQuirks, NOT_APPLICABLE_HEADER, QUIRK_HEADER, QuirkId};

/// The quirks for the next exchange on `route` (empty: nothing injected).
pub fn draw(config: &Config, route: &str) -> Vec<QuirkId> {
    config
        .inject
        .plan(route)
        .map(|plan| plan.draw())
        .unwrap_or_default()
}

fn ids(quirks: &[QuirkId]) -> String {
    quirks
        .iter()
        .map(|q| q.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn set(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value)
        && !value.is_empty()
    {
        headers.insert(HeaderName::from_static(name), value);
    }
}

/// The upstream's response with `quirks` applied: its head (`parts`) says which applied, and
/// the body is rewritten frame by frame, or passed on as it is when none applies. Call inside
/// the exchange's span. A stream whose kept arguments pass `max_hold` is counted in `metrics`
/// (`tooltap_limit_hits_total{limit="inject_hold",scope="inject"}`).
pub fn layer(
    quirks: &[QuirkId],
    dialect: crate::engine::Dialect,
    request: &[u8],
    max_hold: usize,
    metrics: Arc<Metrics>,
    parts: &mut http::response::Parts,
    body: UpstreamBody,
) -> Either<UpstreamBody, QuirkBody> {
    let head = crate::inspect::head::response_head(parts.status.as_u16(), &parts.headers);
    let span = tracing::Span::current();
    match LiveQuirks::new(quirks, dialect, request, &head, max_hold) {
        Err(reason) => {
            span.record("quirk", "quirk_not_applicable");
            tracing::info!(quirk = %ids(quirks), reason = reason.as_str(), "quirk_not_applicable");
            set(&mut parts.headers, NOT_APPLICABLE_HEADER, &ids(quirks));
            Either::Left(body)
        }
        Ok(live) => {
            let chosen: Vec<QuirkId> = live.quirks().to_vec();
            let other: Vec<QuirkId> = quirks
                .iter()
                .copied()
                .filter(|q| !chosen.contains(q))
                .collect();
            span.record("quirk", ids(&chosen).as_str());
            parts.headers.remove(header::CONTENT_LENGTH);
            set(&mut parts.headers, QUIRK_HEADER, &ids(&chosen));
            set(&mut parts.headers, NOT_APPLICABLE_HEADER, &ids(&other));
            Either::Right(QuirkBody {
                inner: Some(body),
                live,
                queue: VecDeque::new(),
                done: false,
                span,
                metrics,
            })
        }
    }
}

/// The upstream body, rewritten frame by frame (see [`layer`]).
pub struct QuirkBody {
    inner: Option<UpstreamBody>,
    live: LiveQuirks,
    queue: VecDeque<Frame<Bytes>>,
    done: bool,
    span: tracing::Span,
    metrics: Arc<Metrics>,
}

impl QuirkBody {
    /// The upstream ended (or a quirk cut it): send what is owed, say what applied.
    fn finish(&mut self) {
        self.inner = None;
        self.done = true;
        if let Some(owed) = self.live.finish() {
            self.queue.push_back(Frame::data(owed));
        }
        let _entered = self.span.enter();
        if self.live.gave_up() {
            self.metrics.limit_hit("inject_hold", "inject");
        }
        let missed = self.live.not_applicable();
        if !missed.is_empty() {
            tracing::info!(quirk = %ids(&missed), gave_up = self.live.gave_up(), "quirk_not_applicable");
        }
        if !self.live.applied().is_empty() {
            tracing::debug!(quirk = %ids(self.live.applied()), "quirk applied");
        }
    }
}

impl Body for QuirkBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame {
        let this = self.get_mut();
        loop {
            if let Some(frame) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            let Some(inner) = this.inner.as_mut().filter(|_| !this.done) else {
                return Poll::Ready(None);
            };
            match ready!(Pin::new(inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        if let Some(out) = this.live.push(&data) {
                            this.queue.push_back(Frame::data(out));
                        }
                        if this.live.cut() {
                            this.finish();
                        }
                    }
                    Err(trailers) => this.queue.push_back(trailers),
                },
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                None => this.finish(),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.queue.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
