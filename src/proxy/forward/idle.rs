//! The stream idle timeout: an upstream body that sends nothing for `timeouts.stream_idle` fails
//! with an error the client sees as a broken stream, and the inspector reports as
//! `upstream_error`, instead of holding a connection (and an inspection permit) forever.
//!
//! Input: the upstream's body. Output: the same frames, unchanged; the deadline is pushed back on
//! every frame. Polling a timer inside `poll_frame` is the body's own readiness, not a wait on
//! anyone else: nothing here blocks or locks.
//!
//! The timer is moved lazily: a frame only notes the time, and a `Pending` poll by the task the
//! timer already wakes leaves it alone until it fires; then it is moved to `last + idle`, or the
//! body fails if that time has come. A streaming response's `Pending` polls (hyper's server polls
//! the body about twice per event with nothing new) cost an atomic load instead of a timer
//! registration each.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
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
    /// Armed at the first `Pending` poll only, and moved to `last + idle` when it fires (see the
    /// module doc): a frame costs a clock read, and a body that never waits (a buffered response
    /// already read) never touches the timer wheel.
    deadline: Option<Pin<Box<Sleep>>>,
    /// The waker `deadline` was last polled with: while the same task polls the body, the timer
    /// already knows whom to wake.
    waker: Option<Waker>,
}

impl<B> IdleBody<B> {
    pub fn new(inner: B, idle: Duration) -> IdleBody<B> {
        IdleBody {
            inner,
            idle,
            last: Instant::now(),
            deadline: None,
            waker: None,
        }
    }

    /// The inner body is waiting: fail once it has been idle for `idle`, else make sure the
    /// timer wakes this task by then.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> PolledFrame {
        let due = self.last + self.idle;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        let same_task = self
            .waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()));
        if same_task && !deadline.is_elapsed() {
            // Armed for this task at `due` or earlier: it wakes us then, and we look again.
            return Poll::Pending;
        }
        if deadline.deadline() != due {
            // Later than before: tokio moves a registered timer without a lock.
            deadline.as_mut().reset(due);
        }
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(StreamIdle(self.idle))))),
            Poll::Pending => {
                if !same_task {
                    self.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
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
            Poll::Pending => this.poll_deadline(cx),
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
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use http_body::Frame;

    /// A body whose frames the test pushes; `Pending` while it has none.
    #[derive(Clone, Default)]
    struct Pushed(Arc<Mutex<VecDeque<Bytes>>>);

    impl Pushed {
        fn push(&self, data: &'static [u8]) {
            self.0
                .lock()
                .expect("lock")
                .push_back(Bytes::from_static(data));
        }
    }

    impl Body for Pushed {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            match self.0.lock().expect("lock").pop_front() {
                Some(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
                None => Poll::Pending,
            }
        }
    }

    fn poll_once(body: &mut IdleBody<Pushed>) -> PolledFrame {
        let mut cx = Context::from_waker(Waker::noop());
        Pin::new(body).poll_frame(&mut cx)
    }

    const IDLE: Duration = Duration::from_millis(100);

    #[tokio::test(start_paused = true)]
    async fn a_body_idle_for_the_timeout_fails_and_each_frame_moves_the_deadline() {
        let inner = Pushed::default();
        let mut body = IdleBody::new(inner.clone(), IDLE);
        assert!(poll_once(&mut body).is_pending(), "armed at the first wait");
        tokio::time::advance(Duration::from_millis(60)).await;
        inner.push(b"a");
        assert!(matches!(poll_once(&mut body), Poll::Ready(Some(Ok(_)))));
        assert!(poll_once(&mut body).is_pending());
        // Past the first deadline (100 ms) but 60 ms after the frame: still waiting.
        tokio::time::advance(Duration::from_millis(60)).await;
        assert!(poll_once(&mut body).is_pending(), "the frame moved it");
        tokio::time::advance(Duration::from_millis(30)).await;
        assert!(poll_once(&mut body).is_pending(), "150 ms: 90 ms idle");
        tokio::time::advance(Duration::from_millis(20)).await;
        match poll_once(&mut body) {
            Poll::Ready(Some(Err(error))) => assert!(error.is::<StreamIdle>(), "{error}"),
            other => panic!("expected the idle error at 170 ms, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_keeps_sending_never_times_out() {
        let inner = Pushed::default();
        let mut body = IdleBody::new(inner.clone(), IDLE);
        for _ in 0..10 {
            assert!(poll_once(&mut body).is_pending());
            tokio::time::advance(IDLE * 9 / 10).await;
            inner.push(b"event");
            assert!(matches!(poll_once(&mut body), Poll::Ready(Some(Ok(_)))));
        }
    }
}
