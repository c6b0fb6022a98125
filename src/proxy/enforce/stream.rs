//! [`EnforceBody`]: the stream half of enforce mode (see the parent module's doc). A stream whose
//! units can be told apart in its bytes (an SSE stream's events, a JSON array's elements, an
//! NDJSON stream's lines; not a
//! content-encoded one) goes through [`super::whole`], so that a cut follows whole units only
//! and a JSON array still ends valid; a content-encoded SSE stream is cut frame by frame.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::whole::{Ends, Step, WholeUnits};
use super::{errors, message, refusal};
use crate::engine::{BodyEnd, Dialect, Exchange, Violation};
use crate::proxy::forward::body::{BodyError, PolledFrame, ProxyBody};
use crate::tap::verdict::{CutSender, EnforceCut};

/// A stream body that checks each frame before forwarding it; see the module doc.
pub struct EnforceBody {
    inner: ProxyBody,
    exchange: Option<Exchange>,
    /// Tells the passive inspector when the stream is cut.
    cut: CutSender,
    done: bool,
    /// Kept apart from the exchange, which is gone when the end of the body is judged.
    dialect: Dialect,
    /// Whole units forwarded, the rest held (see [`super::whole`]); `None`: frames forwarded as
    /// they come (a content-encoded stream, or one whose held unit outgrew its bound).
    units: Option<WholeUnits>,
    /// A frame to send on the next poll (trailers after what was held).
    queued: Option<Frame<Bytes>>,
}

impl EnforceBody {
    /// A content-encoded stream's enforce body: cut frame by frame (its units cannot be told
    /// apart in the compressed bytes).
    pub fn new(inner: ProxyBody, exchange: Exchange, cut: CutSender) -> EnforceBody {
        EnforceBody {
            inner,
            dialect: exchange.dialect(),
            exchange: Some(exchange),
            cut,
            done: false,
            units: None,
            queued: None,
        }
    }

    /// A stream's enforce body read unit by unit (`ends`: an SSE stream's events, a JSON
    /// array's elements): whole units forwarded, a unit held up to `max_unit` bytes.
    pub(super) fn whole_units(
        inner: ProxyBody,
        exchange: Exchange,
        cut: CutSender,
        ends: Ends,
        max_unit: usize,
    ) -> EnforceBody {
        EnforceBody {
            units: Some(WholeUnits::new(ends, max_unit)),
            ..EnforceBody::new(inner, exchange, cut)
        }
    }

    /// A frame read unit by unit: forwarded up to its last whole unit, or cut. `None`: nothing
    /// to send for it yet.
    fn units_frame(&mut self, bytes: &Bytes) -> Option<Frame<Bytes>> {
        let (Some(units), Some(exchange)) = (self.units.as_mut(), self.exchange.as_mut()) else {
            return Some(Frame::data(bytes.clone()));
        };
        let mut found = Vec::new();
        let step = units.frame(bytes, |piece| {
            exchange.feed(piece);
            found = errors(exchange.violations()).into_iter().cloned().collect();
            !found.is_empty()
        });
        match step {
            Step::Forward(out) => (!out.is_empty()).then(|| Frame::data(out)),
            Step::Cut { before } => {
                let refs: Vec<&Violation> = found.iter().collect();
                Some(self.cut_units(&refs, before, true))
            }
            Step::GiveUp(out) => {
                tracing::warn!(
                    "enforce: a stream event or JSON-array element over inspect.max_sse_line; \
                     the rest of the stream is forwarded unenforced"
                );
                self.units = None;
                self.exchange = None;
                Some(Frame::data(out))
            }
        }
    }

    /// The cut of a stream read unit by unit, after `before` (whole units of the frame being
    /// read that passed): a JSON array closed with the dialect's error body as its last
    /// element, an SSE stream ended by the dialect's error event. The client got exactly the
    /// units forwarded, then that (`EnforceCut::kept`).
    fn cut_units(
        &mut self,
        violations: &[&Violation],
        before: Bytes,
        replaced_last: bool,
    ) -> Frame<Bytes> {
        self.done = true;
        let exchange = self.exchange.take();
        let Some(units) = self.units.as_mut() else {
            return Frame::data(before);
        };
        units.drop_held();
        let message = message(violations);
        let error = refusal(&message, violations);
        let closing = if units.is_array() {
            tracing::warn!(
                rules = %rule_ids(violations),
                "enforce: JSON-array stream closed with an error element"
            );
            units.close(&self.dialect.error_body(&error).to_string())
        } else {
            tracing::warn!(rules = %rule_ids(violations), "enforce: stream cut with an error event");
            let last_sequence = exchange.as_ref().and_then(Exchange::last_sequence_number);
            Bytes::from(self.dialect.error_event(&error, last_sequence))
        };
        self.cut.cut(EnforceCut {
            status: None,
            replacement: closing.clone(),
            replaced_last,
            kept: Some(units.forwarded()),
        });
        let mut out = bytes::BytesMut::with_capacity(before.len() + closing.len());
        out.extend_from_slice(&before);
        out.extend_from_slice(&closing);
        Frame::data(out.freeze())
    }

    /// Replace the rest of the stream with one error event, in place of the frame just read
    /// (`replaced_last`) or after the upstream's whole body.
    fn cut_with(&mut self, violations: &[&Violation], replaced_last: bool) -> Frame<Bytes> {
        self.done = true;
        let exchange = self.exchange.take();
        tracing::warn!(rules = %rule_ids(violations), "enforce: stream cut with an error event");
        let last_sequence = exchange.as_ref().and_then(Exchange::last_sequence_number);
        let message = message(violations);
        let text = self
            .dialect
            .error_event(&refusal(&message, violations), last_sequence);
        let replacement = Bytes::from(text);
        self.cut.cut(EnforceCut {
            status: None,
            replacement: replacement.clone(),
            replaced_last,
            kept: None,
        });
        Frame::data(replacement)
    }
}

impl EnforceBody {
    /// The upstream's body ended: end-of-body rules (a missing `[DONE]`, no finish reason) are
    /// judged here; what was held (a JSON array's `]`, an unfinished last event) goes out when
    /// they pass.
    fn end(&mut self) -> Option<Result<Frame<Bytes>, BodyError>> {
        let Some(exchange) = self.exchange.take() else {
            self.done = true;
            return self.held_rest().map(Ok);
        };
        let report = exchange.finish(BodyEnd::Complete);
        let found = errors(&report.violations);
        if !found.is_empty() {
            return Some(Ok(match self.units.is_some() {
                true => self.cut_units(&found, Bytes::new(), false),
                false => self.cut_with(&found, false),
            }));
        }
        self.done = true;
        self.held_rest().map(Ok)
    }

    /// What is still held, as a frame, when there is any.
    fn held_rest(&mut self) -> Option<Frame<Bytes>> {
        let rest = self.units.as_mut().map(WholeUnits::rest)?;
        (!rest.is_empty()).then(|| Frame::data(rest))
    }

    /// Trailers: after what was held, which is forwarded unenforced (nothing may follow
    /// trailers).
    fn before_trailers(&mut self, trailers: Frame<Bytes>) -> Frame<Bytes> {
        match self.held_rest() {
            Some(rest) => {
                self.units = None;
                self.exchange = None;
                self.queued = Some(trailers);
                rest
            }
            None => trailers,
        }
    }
}

/// The rule ids of `violations`, comma-separated, for the cut's log line.
fn rule_ids(violations: &[&Violation]) -> String {
    let ids: Vec<&str> = violations.iter().map(|v| v.rule.as_str()).collect();
    ids.join(",")
}

impl Body for EnforceBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame {
        if let Some(frame) = self.queued.take() {
            return Poll::Ready(Some(Ok(frame)));
        }
        if self.done {
            return Poll::Ready(None);
        }
        loop {
            let polled = Pin::new(&mut self.inner).poll_frame(cx);
            return match polled {
                Poll::Ready(Some(Ok(frame))) => {
                    let Some(bytes) = frame.data_ref() else {
                        return Poll::Ready(Some(Ok(self.before_trailers(frame))));
                    };
                    if self.units.is_some() {
                        let bytes = bytes.clone();
                        match self.units_frame(&bytes) {
                            Some(frame) => Poll::Ready(Some(Ok(frame))),
                            // All of it held: read on (the inner body registers the waker).
                            None => continue,
                        }
                    } else {
                        let Some(exchange) = self.exchange.as_mut() else {
                            return Poll::Ready(Some(Ok(frame)));
                        };
                        exchange.feed(bytes);
                        let found: Vec<Violation> =
                            errors(exchange.violations()).into_iter().cloned().collect();
                        if found.is_empty() {
                            Poll::Ready(Some(Ok(frame)))
                        } else {
                            let refs: Vec<&Violation> = found.iter().collect();
                            Poll::Ready(Some(Ok(self.cut_with(&refs, true))))
                        }
                    }
                }
                Poll::Ready(None) => Poll::Ready(self.end()),
                other => other,
            };
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        // The body may gain an error event: its length is no longer known.
        SizeHint::default()
    }
}
