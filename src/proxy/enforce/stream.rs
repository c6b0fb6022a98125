//! [`EnforceBody`]: the stream half of enforce mode (see the parent module's doc); a JSON-array
//! stream goes through [`super::array`] so that a cut still ends a valid array.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::array::{ArrayHold, Step};
use super::verdict::{CutSender, EnforceCut};
use super::{errors, message, refusal};
use crate::engine::{BodyEnd, Dialect, Exchange, Violation};
use crate::proxy::forward::body::{BodyError, PolledFrame, ProxyBody};

/// A stream body that checks each frame before forwarding it; see the module doc.
pub struct EnforceBody {
    inner: ProxyBody,
    exchange: Option<Exchange>,
    /// Tells the passive inspector when the stream is cut.
    cut: CutSender,
    done: bool,
    /// Kept apart from the exchange, which is gone when the end of the body is judged.
    dialect: Dialect,
    /// A JSON-array stream: whole elements forwarded, the rest held (see [`super::array`]).
    array: Option<ArrayHold>,
    /// A frame to send on the next poll (trailers after what a JSON array held).
    queued: Option<Frame<Bytes>>,
}

impl EnforceBody {
    /// An SSE stream's enforce body.
    pub fn new(inner: ProxyBody, exchange: Exchange, cut: CutSender) -> EnforceBody {
        EnforceBody {
            inner,
            dialect: exchange.dialect(),
            exchange: Some(exchange),
            cut,
            done: false,
            array: None,
            queued: None,
        }
    }

    /// A streamed JSON array's enforce body; an element is held up to `max_element` bytes.
    pub fn json_array(
        inner: ProxyBody,
        exchange: Exchange,
        cut: CutSender,
        max_element: usize,
    ) -> EnforceBody {
        EnforceBody {
            array: Some(ArrayHold::new(max_element)),
            ..EnforceBody::new(inner, exchange, cut)
        }
    }

    /// A JSON-array frame: forwarded up to its last whole element, or cut. `None`: nothing to
    /// send for it yet.
    fn array_frame(&mut self, bytes: &Bytes) -> Option<Frame<Bytes>> {
        let (Some(array), Some(exchange)) = (self.array.as_mut(), self.exchange.as_mut()) else {
            return Some(Frame::data(bytes.clone()));
        };
        let mut found = Vec::new();
        let step = array.frame(bytes, |piece| {
            exchange.feed(piece);
            found = errors(exchange.violations()).into_iter().cloned().collect();
            !found.is_empty()
        });
        match step {
            Step::Forward(out) => (!out.is_empty()).then(|| Frame::data(out)),
            Step::Cut { before } => {
                let refs: Vec<&Violation> = found.iter().collect();
                Some(self.cut_array(&refs, before, true))
            }
            Step::GiveUp(out) => {
                tracing::warn!(
                    "enforce: a JSON-array element over inspect.max_sse_line; the rest of the \
                     stream is forwarded unenforced"
                );
                self.array = None;
                self.exchange = None;
                Some(Frame::data(out))
            }
        }
    }

    /// Close a JSON array with the dialect's error body as its last element, after `before`
    /// (whole elements of the frame being read that passed).
    fn cut_array(
        &mut self,
        violations: &[&Violation],
        before: Bytes,
        replaced_last: bool,
    ) -> Frame<Bytes> {
        self.done = true;
        self.exchange = None;
        tracing::warn!(
            rules = %violations.iter().map(|v| v.rule.as_str()).collect::<Vec<_>>().join(","),
            "enforce: JSON-array stream closed with an error element"
        );
        let message = message(violations);
        let error = self.dialect.error_body(&refusal(&message, violations));
        let Some(array) = self.array.as_mut() else {
            return Frame::data(before);
        };
        let closing = array.close(&before, &error.to_string());
        self.cut.cut(EnforceCut {
            status: None,
            replacement: closing.clone(),
            replaced_last,
            kept: Some(array.forwarded()),
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
        tracing::warn!(
            rules = %violations.iter().map(|v| v.rule.as_str()).collect::<Vec<_>>().join(","),
            "enforce: stream cut with an error event"
        );
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
    /// judged here; a JSON array's held rest (its `]`) goes out when they pass.
    fn end(&mut self) -> Option<Result<Frame<Bytes>, BodyError>> {
        let Some(exchange) = self.exchange.take() else {
            self.done = true;
            return self.held_rest().map(Ok);
        };
        let report = exchange.finish(BodyEnd::Complete);
        let found = errors(&report.violations);
        if !found.is_empty() {
            return Some(Ok(match self.array.is_some() {
                true => self.cut_array(&found, Bytes::new(), false),
                false => self.cut_with(&found, false),
            }));
        }
        self.done = true;
        self.held_rest().map(Ok)
    }

    /// What a JSON array still holds, as a frame, when there is any.
    fn held_rest(&mut self) -> Option<Frame<Bytes>> {
        let rest = self.array.as_mut().map(ArrayHold::rest)?;
        (!rest.is_empty()).then(|| Frame::data(rest))
    }

    /// Trailers: after what a JSON array held, which is forwarded unenforced (nothing may
    /// follow trailers).
    fn before_trailers(&mut self, trailers: Frame<Bytes>) -> Frame<Bytes> {
        match self.held_rest() {
            Some(rest) => {
                self.array = None;
                self.exchange = None;
                self.queued = Some(trailers);
                rest
            }
            None => trailers,
        }
    }
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
                    if self.array.is_some() {
                        let bytes = bytes.clone();
                        match self.array_frame(&bytes) {
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
