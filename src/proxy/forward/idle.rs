//! The stream idle timeout: an upstream body that sends nothing for `timeouts.stream_idle` fails
//! with an error the client sees as a broken stream, and the inspector reports as
//! `upstream_error`, instead of holding a connection (and an inspection permit) forever.
//!
//! Input: the upstream's body. Output: the same frames, unchanged; the deadline is pushed back on
//! every frame. Polling a timer inside `poll_frame` is the body's own readiness, not a wait on
//! anyone else: nothing here blocks or locks.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, SizeHint};
use tokio::time::{Instant, Sleep};

use super::body::{BodyError, PolledFrame};

/// The error a stalled upstream body ends with.
#[derive(Debug, thiserror::Error)]
#[error("the upstream sent nothing for {0:?} (timeouts.stream_idle): stream cut")]
pub struct StreamIdle(pub Duration);

/// An upstream body with an idle deadline.
pub struct IdleBody<B> {
    inner: B,
    idle: Duration,
    /// When the body last made progress (made, or a frame arrived).
    last: Instant,
    /// Armed at the first `Pending` poll only, and moved to `last + idle` whenever the body
    /// waits again: a frame costs a clock read, and a body that never waits (a buffered
    /// response already read) never touches the timer wheel.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<B> IdleBody<B> {
    pub fn new(inner: B, idle: Duration) -> IdleBody<B> {
        IdleBody {
            inner,
            idle,
            last: Instant::now(),
            deadline: None,
        }
    }
}

impl<B> Body for IdleBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BodyError>,
{
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(polled) => {
                this.last = Instant::now();
                Poll::Ready(polled.map(|frame| frame.map_err(Into::into)))
            }
            Poll::Pending => {
                let due = this.last + this.idle;
                let deadline = this
                    .deadline
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                if deadline.deadline() != due {
                    // Later than before: tokio moves a registered timer without a lock.
                    deadline.as_mut().reset(due);
                }
                match deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(StreamIdle(this.idle))))),
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
