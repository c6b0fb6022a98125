//! [`EnforceBody`]: the stream half of enforce mode (see the parent module's doc).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::{error_object, errors};
use crate::engine::{BodyEnd, Dialect, Exchange, Violation};
use crate::forward::body::{BodyError, ProxyBody};

/// A stream body that checks each frame before forwarding it; see the module doc.
pub struct EnforceBody {
    inner: ProxyBody,
    exchange: Option<Exchange>,
    /// Set when the stream is cut, for the passive inspector's report.
    cut: Arc<AtomicBool>,
    done: bool,
}

impl EnforceBody {
    pub fn new(inner: ProxyBody, exchange: Exchange, cut: Arc<AtomicBool>) -> EnforceBody {
        EnforceBody {
            inner,
            exchange: Some(exchange),
            cut,
            done: false,
        }
    }

    /// Replace the rest of the stream with one error event.
    fn cut_with(&mut self, violations: &[&Violation]) -> Frame<Bytes> {
        self.done = true;
        self.cut.store(true, Ordering::Relaxed);
        let exchange = self.exchange.take();
        tracing::warn!(
            rules = %violations.iter().map(|v| v.rule.as_str()).collect::<Vec<_>>().join(","),
            "enforce: stream cut with an error event"
        );
        let error = error_object(violations);
        let text = match exchange
            .as_ref()
            .filter(|e| e.dialect() == Dialect::Responses)
        {
            // A Responses stream ends with its own `error` event: `event:` line, `type`, and a
            // `sequence_number` after the last one forwarded.
            Some(exchange) => {
                let sequence = exchange.last_sequence_number().map_or(0, |n| n + 1);
                let mut event = error;
                if let Some(object) = event.as_object_mut() {
                    object.insert("type".into(), "error".into());
                    object.insert("sequence_number".into(), sequence.into());
                }
                format!("event: error\ndata: {event}\n\n")
            }
            None => format!("data: {}\n\n", serde_json::json!({ "error": error })),
        };
        Frame::data(Bytes::from(text))
    }
}

impl Body for EnforceBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
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
                    Poll::Ready(Some(Ok(self.cut_with(&refs))))
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
                    Poll::Ready(Some(Ok(self.cut_with(&found))))
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
