//! [`EnforceBody`]: the stream half of enforce mode (see the parent module's doc).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

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
}

impl EnforceBody {
    pub fn new(inner: ProxyBody, exchange: Exchange, cut: CutSender) -> EnforceBody {
        EnforceBody {
            inner,
            dialect: exchange.dialect(),
            exchange: Some(exchange),
            cut,
            done: false,
        }
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
        });
        Frame::data(replacement)
    }
}

impl Body for EnforceBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame {
        if self.done {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                let Some(bytes) = frame.data_ref() else {
                    return Poll::Ready(Some(Ok(frame)));
                };
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
            Poll::Ready(None) => {
                // End-of-body rules (a missing [DONE], no finish_reason) are judged here.
                let Some(exchange) = self.exchange.take() else {
                    return Poll::Ready(None);
                };
                let report = exchange.finish(BodyEnd::Complete);
                let found = errors(&report.violations);
                if found.is_empty() {
                    self.done = true;
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Ok(self.cut_with(&found, false))))
                }
            }
            other => other,
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
