//! The request body deadline: a client that trickles its request body (1 byte/s) would hold a
//! connection, an upstream request and an inspection permit open for ever, since each byte
//! resets any idle timer. The body must arrive within `timeouts.request_body`, extended by one
//! second per `timeouts.request_body_min_rate` bytes received (Apache's `mod_reqtimeout` model),
//! so a large body on a fair link is never cut and a trickle is.
//!
//! Input: the client's request body on its way upstream. Output: the same frames, unchanged; or,
//! once the deadline passes, a [`SlowRequestBody`] error that aborts the upstream request (its
//! connection is closed) and that `classify` turns into an error blaming the client.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, SizeHint};
use tokio::time::{Instant, Sleep};

use super::body::{BodyError, PolledFrame};
use crate::metrics::Metrics;

/// The error a too-slow request body ends with.
#[derive(Debug, thiserror::Error)]
#[error(
    "the client sent its request body too slowly: {received} bytes in {elapsed:?} \
     (timeouts.request_body {initial:?} plus 1 s per {min_rate} bytes)"
)]
pub struct SlowRequestBody {
    pub received: u64,
    pub elapsed: Duration,
    pub initial: Duration,
    pub min_rate: u64,
}

/// A request body with a deadline that grows with the bytes received.
pub struct DeadlineBody<B> {
    inner: B,
    started: Instant,
    initial: Duration,
    min_rate: u64,
    received: u64,
    /// Armed at the first `Pending` poll only: a body that is whole when first polled (a
    /// small request, the common case) never touches the timer wheel. Frames that arrive later
    /// move the deadline the next time the body waits.
    deadline: Option<Pin<Box<Sleep>>>,
    /// Counts cut bodies (`tooltap_limit_hits_total{limit="request_body_slow"}`).
    metrics: Option<std::sync::Arc<Metrics>>,
}

impl<B> DeadlineBody<B> {
    pub fn new(
        inner: B,
        initial: Duration,
        min_rate: u64,
        metrics: Option<std::sync::Arc<Metrics>>,
    ) -> DeadlineBody<B> {
        let started = Instant::now();
        DeadlineBody {
            inner,
            started,
            initial,
            min_rate: min_rate.max(1),
            received: 0,
            deadline: None,
            metrics,
        }
    }

    fn allowed(&self) -> Duration {
        let earned = Duration::from_secs_f64(self.received as f64 / self.min_rate as f64);
        self.initial.saturating_add(earned)
    }
}

impl<B> Body for DeadlineBody<B>
where
    B: Body<Data = Bytes, Error = BodyError> + Unpin,
{
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received = this.received.saturating_add(data.len() as u64);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(other) => Poll::Ready(other),
            Poll::Pending => {
                let due = this.started + this.allowed();
                let deadline = this
                    .deadline
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                if deadline.deadline() != due {
                    deadline.as_mut().reset(due);
                }
                match deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        if let Some(metrics) = &this.metrics {
                            metrics.limit_hit("request_body_slow", "proxy");
                        }
                        Poll::Ready(Some(Err(Box::new(SlowRequestBody {
                            received: this.received,
                            elapsed: this.started.elapsed(),
                            initial: this.initial,
                            min_rate: this.min_rate,
                        }))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};

    #[tokio::test]
    async fn the_deadline_grows_one_second_per_min_rate_bytes() {
        let body = Full::new(Bytes::new()).map_err(|never| match never {});
        let mut body = DeadlineBody::new(body, Duration::from_secs(30), 500, None);
        assert_eq!(body.allowed(), Duration::from_secs(30));
        body.received = 20; // 20 s at 1 byte/s: almost nothing earned
        assert!(body.allowed() < Duration::from_millis(30_100));
        body.received = 16 * 1024 * 1024; // 16 MiB: ~9 hours earned
        assert!(body.allowed() > Duration::from_secs(30_000));
    }
}
