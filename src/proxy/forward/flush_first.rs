//! Every byte before the break: a body wrapper that holds back an error for one poll, so the
//! frames already handed to the server connection are flushed to the client before it breaks.
//!
//! Why: hyper's HTTP/1 server buffers each data frame and keeps polling the body while its write
//! buffer has room. When the next poll returns an error, the error leaves the connection's write
//! loop before the flush runs and the connection is closed with the last frames still buffered:
//! the client lost the last event of a stream that broke off about one time in a few hundred
//! (issue 18). HTTP/2 has the same race in another place: the body is piped by its own task into
//! h2's send queue, and a reset clears what the connection task has not written yet.
//!
//! So the error is held for a short grace ([`FLUSH_GRACE`]) before it is handed over: returning
//! `Pending` lets an HTTP/1 connection run its flush at once, and gives an HTTP/2 connection task
//! time to write the queued DATA frames before the reset. The client still sees a broken body,
//! as it would with a direct connection, just [`FLUSH_GRACE`] later.
//!
//! Input: any body (the upstream's response). Output: the same frames and the same error. O(1)
//! per frame, no lock; the timer exists only once the body has failed. What it cannot do: when
//! the client reads so slowly that its socket (or its HTTP/2 window) is full at the break, what
//! the connection still holds after the grace is dropped with it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

/// How long a failed body waits before handing its error over, so the connection can write out
/// the frames it already took.
pub const FLUSH_GRACE: Duration = Duration::from_millis(20);

/// A body whose error is delivered one poll after it happened.
#[derive(Debug)]
pub struct FlushFirst<B: Body> {
    inner: B,
    /// The inner body's error, held until the grace has passed.
    held: Option<(B::Error, Pin<Box<Sleep>>)>,
    /// Whether the inner body has ended (with an error, handed over or held).
    done: bool,
}

impl<B: Body> FlushFirst<B> {
    pub fn new(inner: B) -> FlushFirst<B> {
        FlushFirst {
            inner,
            held: None,
            done: false,
        }
    }
}

impl<B> Body for FlushFirst<B>
where
    B: Body + Unpin,
    B::Error: Unpin,
    B::Data: Unpin,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.get_mut();
        if let Some((_, grace)) = this.held.as_mut() {
            if grace.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if let Some((error, _)) = this.held.take() {
                return Poll::Ready(Some(Err(error)));
            }
        }
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Err(error))) => {
                this.done = true;
                let mut grace = Box::pin(tokio::time::sleep(FLUSH_GRACE));
                // Registers the waker: the connection flushes meanwhile, then polls us again.
                if grace.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(error)));
                }
                this.held = Some((error, grace));
                Poll::Pending
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        // A held error is not an end: the client must still see the break.
        self.held.is_none() && (self.done || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        if self.done {
            SizeHint::with_exact(0)
        } else {
            self.inner.size_hint()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::BodyExt;
    use std::collections::VecDeque;

    /// A body that yields its scripted results in order, each ready at once.
    struct Scripted(VecDeque<Result<Bytes, &'static str>>);

    impl Body for Scripted {
        type Data = Bytes;
        type Error = &'static str;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, &'static str>>> {
            Poll::Ready(self.0.pop_front().map(|item| item.map(Frame::data)))
        }
    }

    type Polled<B> = Poll<Option<Result<Frame<<B as Body>::Data>, <B as Body>::Error>>>;

    fn poll_once<B: Body + Unpin>(body: &mut B) -> Polled<B> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        Pin::new(body).poll_frame(&mut cx)
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_comes_after_the_grace() {
        let mut body = FlushFirst::new(Scripted(VecDeque::from([
            Ok(Bytes::from_static(b"a")),
            Err("broken"),
        ])));
        assert!(matches!(poll_once(&mut body), Poll::Ready(Some(Ok(_)))));
        assert!(poll_once(&mut body).is_pending(), "the error is held");
        assert!(!body.is_end_stream(), "a held error is not an end");
        tokio::time::advance(FLUSH_GRACE / 2).await;
        assert!(
            poll_once(&mut body).is_pending(),
            "still held within the grace"
        );
        tokio::time::advance(FLUSH_GRACE).await;
        assert!(matches!(
            poll_once(&mut body),
            Poll::Ready(Some(Err("broken")))
        ));
        assert!(matches!(poll_once(&mut body), Poll::Ready(None)));
        assert!(body.is_end_stream());
    }

    #[tokio::test]
    async fn a_clean_body_is_unchanged() {
        let body = FlushFirst::new(Scripted(VecDeque::from([
            Ok(Bytes::from_static(b"a")),
            Ok(Bytes::from_static(b"b")),
        ])));
        let collected = body.collect().await.map(|c| c.to_bytes());
        assert_eq!(collected, Ok(Bytes::from_static(b"ab")));
    }
}
