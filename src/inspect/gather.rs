//! Gathers an exchange's frames into one batch per trip to the analysis pool.
//!
//! Each trip costs two cross-thread hand-offs (the job to a pool thread, its result back to the
//! inspector): with a pool that keeps up, a trip per frame is the common case. Gathering took
//! full inspection of 100 concurrent 1,000-event streams (an event every 5 ms) from 4.02 to 3.51
//! CPU-seconds (`bench_memory`). So a batch
//! takes whatever is already queued, then waits for more until it holds [`BATCH`] frames, the
//! body ends, or [`GATHER`] has passed since its first frame. Verdicts are not delayed by this
//! (a body's end closes the batch at once), only progress in the middle of a stream, by at most
//! [`GATHER`]; and the frames waiting still count against `inspect.tap_bytes` until they are fed.
//!
//! Input: the tap's data channel. Output: a non-empty batch and whether the body is over, or
//! `None` when the body ended with nothing more to feed.

use std::time::Duration;

use tokio::sync::mpsc::error::TryRecvError;

use crate::proxy::tee::{TapData, TapEvent};

/// Frames fed to the engine in one trip, at most.
pub const BATCH: usize = 64;

/// How long a batch waits for more frames after its first.
pub const GATHER: Duration = Duration::from_millis(50);

/// The next batch of frames, kept (not yet released from the tap's byte bound), and whether the
/// body is over with it.
pub async fn next_batch(data: &mut TapData) -> Option<(Vec<TapEvent>, bool)> {
    let first = data.recv_kept().await?;
    let mut batch = vec![first];
    let deadline = tokio::time::sleep(GATHER);
    tokio::pin!(deadline);
    while batch.len() < BATCH {
        match data.try_recv_kept() {
            Ok(event) => {
                batch.push(event);
                continue;
            }
            Err(TryRecvError::Disconnected) => return Some((batch, true)),
            Err(TryRecvError::Empty) => {}
        }
        tokio::select! {
            biased;
            event = data.recv_kept() => match event {
                Some(event) => batch.push(event),
                None => return Some((batch, true)),
            },
            () = &mut deadline => break,
        }
    }
    Some((batch, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::tee::{TapReceiver, TeeBody, tap_bounded};
    use bytes::Bytes;
    use http_body::{Body, Frame};
    use http_body_util::BodyExt;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::sync::mpsc;

    /// A body whose frames are the texts sent on a channel; over when the sender is dropped.
    struct Channel(mpsc::Receiver<&'static str>);

    impl Body for Channel {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            self.0
                .poll_recv(cx)
                .map(|text| text.map(|text| Ok(Frame::data(Bytes::from_static(text.as_bytes())))))
        }
    }

    /// A forwarding task reading a tapped [`Channel`] body, its sender, and the tap's receiver.
    fn tapped() -> (
        mpsc::Sender<&'static str>,
        TapReceiver,
        tokio::task::JoinHandle<()>,
    ) {
        let (tx, rx) = mpsc::channel(8);
        let (tap, receiver) = tap_bounded(64, 1 << 20);
        let mut tee = TeeBody::new(Channel(rx), tap);
        let forward = tokio::spawn(async move { while tee.frame().await.is_some() {} });
        (tx, receiver, forward)
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_waits_for_more_frames_then_closes_at_the_deadline() {
        let (tx, mut receiver, forward) = tapped();
        tx.send("a").await.unwrap();
        let sender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            tx.send("b").await.unwrap();
            tx
        });
        let started = tokio::time::Instant::now();
        let (batch, over) = next_batch(&mut receiver.data).await.expect("a batch");
        let texts: Vec<_> = batch.iter().map(|e| e.bytes.clone()).collect();
        assert_eq!(
            texts,
            vec!["a", "b"],
            "the frame sent 10 ms later joined the batch"
        );
        assert!(!over);
        assert!(
            started.elapsed() >= GATHER,
            "closed by the deadline, not before"
        );
        drop(sender.await.unwrap());
        forward.await.unwrap();
        assert!(
            next_batch(&mut receiver.data).await.is_none(),
            "the body ended: no batch"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_end_of_the_body_closes_a_batch_at_once() {
        let (tx, mut receiver, forward) = tapped();
        tx.send("a").await.unwrap();
        tx.send("b").await.unwrap();
        drop(tx);
        forward.await.unwrap();
        let started = tokio::time::Instant::now();
        let (batch, over) = next_batch(&mut receiver.data).await.expect("a batch");
        assert_eq!(batch.len(), 2);
        assert!(over, "the body is over with this batch");
        assert!(started.elapsed() < GATHER, "no wait for a deadline");
    }
}
