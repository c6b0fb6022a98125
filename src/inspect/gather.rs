//! Gathers an exchange's frames into one batch per trip to the analysis pool.
//!
//! Each trip costs two cross-thread hand-offs (the job to a pool thread, its result back to the
//! inspector): with a pool that keeps up, a trip per frame is the common case, and gathering
//! saves CPU (see docs/benchmarks.md#gather). So a batch takes whatever is already queued, then
//! sleeps until its exchange's [`window`] (at most [`GATHER`]) has passed since its first frame
//! or the tap wakes it ([`TapData::woken`]: the body ended, [`BATCH`] frames,
//! [`WAKE_BYTES`](crate::tap::tee::WAKE_BYTES) or half of a bound are waiting), and takes what
//! has queued meanwhile, at most [`BATCH`] frames. The inspector is not polled for every frame
//! that arrives (a task poll per event on the worker threads that forward the client's frames).
//! Verdicts are not delayed by this (a body's end closes the batch at once), only progress in
//! the middle of a stream, by at most [`GATHER`]; and the frames waiting still count against
//! `inspect.tap_bytes` until they are fed.
//!
//! Input: the tap's data channel. Output: a non-empty batch and whether the body is over (or
//! the tap stopped copying it: no frame will follow either way), or `None` when the body ended
//! with nothing more to feed. A small response copied framed ([`crate::tap::framed`]) comes as
//! one batch, over with it, once its body ended ([`Batches`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::oneshot;

use crate::tap::framed::{Framed, ResponseCopy};
pub use crate::tap::tee::BATCH_FRAMES as BATCH;
use crate::tap::tee::{CopyStop, TapData, TapEnd, TapEvent, TapReceiver};

/// The longest a batch waits for more frames after its first.
pub const GATHER: Duration = Duration::from_millis(50);

/// How many 1 ms steps below [`GATHER`] an exchange's window may be (see [`window`]).
const SPREAD_STEPS: u32 = 16;

/// This exchange's wait for more frames: [`GATHER`] less 0 to 15 ms, in turn per exchange.
/// Streams that start together (a burst of requests, or the benchmark's lock-stepped waves)
/// would otherwise gather their batches at the same instants, and their trips would reach the
/// analysis pool as one burst that the worker thread, forwarding the next events, waits behind
/// on a shared core. With windows 1 ms apart their trips stay apart (a trip's engine work is
/// shorter than that; see docs/benchmarks.md#gather). Batches that fill by count ([`BATCH`])
/// are not affected.
pub fn window() -> Duration {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    window_for(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The window of the `nth` exchange.
fn window_for(nth: u32) -> Duration {
    GATHER - Duration::from_millis(u64::from(nth % SPREAD_STEPS))
}

/// A response's frames as the inspector takes them: in batches from a streamed tap, or all at
/// once from a framed copy.
pub enum Batches {
    Streamed {
        tap: TapReceiver,
        window: Duration,
    },
    Framed {
        copied: Option<oneshot::Receiver<Framed>>,
        end: Option<TapEnd>,
    },
}

impl Batches {
    pub fn of(copy: ResponseCopy) -> Batches {
        match copy {
            ResponseCopy::Streamed(tap) => Batches::Streamed {
                tap,
                window: window(),
            },
            ResponseCopy::Framed(copied) => Batches::Framed {
                copied: Some(copied),
                end: None,
            },
        }
    }

    /// The next batch ([`next_batch`]); a framed copy's frames all at once, over with them.
    pub async fn next(&mut self) -> Option<(Vec<TapEvent>, bool)> {
        match self {
            Batches::Streamed { tap, window } => next_batch(&mut tap.data, *window).await,
            Batches::Framed { copied, end } => {
                let Framed { frames, end: ended } = copied.take()?.await.ok()?;
                *end = Some(ended);
                (!frames.is_empty()).then_some((frames, true))
            }
        }
    }

    /// The inspector is done with `bytes` of a batch: a tap may copy that much again.
    pub fn release(&self, bytes: usize) {
        if let Batches::Streamed { tap, .. } = self {
            tap.data.release(bytes);
        }
    }

    /// What stops a tap's copies from a trip (a framed copy is over before its one trip).
    pub fn copy_stop(&self) -> Option<CopyStop> {
        match self {
            Batches::Streamed { tap, .. } => Some(tap.data.copy_stop()),
            Batches::Framed { .. } => None,
        }
    }

    /// How the body ended, once it did.
    pub async fn end(self) -> Option<TapEnd> {
        match self {
            Batches::Streamed { tap, .. } => tap.end.await.ok(),
            Batches::Framed { end: Some(end), .. } => Some(end),
            Batches::Framed {
                copied: Some(copied),
                ..
            } => copied.await.ok().map(|framed| framed.end),
            Batches::Framed { .. } => None,
        }
    }
}

/// The next batch of frames, kept (not yet released from the tap's byte bound), and whether the
/// body is over with it; `window` is how long it waits for more after the first (see
/// [`window`]).
pub async fn next_batch(data: &mut TapData, window: Duration) -> Option<(Vec<TapEvent>, bool)> {
    let first = data.recv_kept().await?;
    let mut batch = vec![first];
    if let Some(over) = take_waiting(data, &mut batch) {
        return Some((batch, over));
    }
    tokio::select! {
        biased;
        () = data.woken() => {}
        () = tokio::time::sleep(window) => {}
    }
    let over = take_waiting(data, &mut batch).unwrap_or(false);
    Some((batch, over))
}

/// Moves the frames already waiting into `batch`, up to [`BATCH`]: `Some(true)` when no more
/// will come (the body is over, or the tap stopped copying it), `Some(false)` when the batch is
/// full, `None` when no more frames wait.
fn take_waiting(data: &mut TapData, batch: &mut Vec<TapEvent>) -> Option<bool> {
    while batch.len() < BATCH {
        match data.try_recv_kept() {
            Ok(event) => batch.push(event),
            Err(TryRecvError::Disconnected) => return Some(true),
            Err(TryRecvError::Empty) => return None,
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tap::tee::{TapReceiver, TeeBody, WAKE_BYTES, tap_bounded};
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
        tapped_with(64, 1 << 20)
    }

    fn tapped_with(
        frames: usize,
        bytes: usize,
    ) -> (
        mpsc::Sender<&'static str>,
        TapReceiver,
        tokio::task::JoinHandle<()>,
    ) {
        let (tx, rx) = mpsc::channel(8);
        let (tap, receiver) = tap_bounded(frames, bytes);
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
        let (batch, over) = next_batch(&mut receiver.data, GATHER)
            .await
            .expect("a batch");
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
            next_batch(&mut receiver.data, GATHER).await.is_none(),
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
        let (batch, over) = next_batch(&mut receiver.data, GATHER)
            .await
            .expect("a batch");
        assert_eq!(batch.len(), 2);
        assert!(over, "the body is over with this batch");
        assert!(started.elapsed() < GATHER, "no wait for a deadline");
    }

    /// Sends `count` frames of `text` while a batch is being gathered, then gathers.
    async fn gathered_while_sending(
        tx: mpsc::Sender<&'static str>,
        receiver: &mut TapReceiver,
        count: usize,
        text: &'static str,
    ) -> (Vec<TapEvent>, bool, Duration, mpsc::Sender<&'static str>) {
        tx.send(text).await.unwrap();
        let sender = tokio::spawn(async move {
            for _ in 1..count {
                tx.send(text).await.unwrap();
            }
            tx
        });
        let started = tokio::time::Instant::now();
        let (batch, over) = next_batch(&mut receiver.data, GATHER)
            .await
            .expect("a batch");
        (batch, over, started.elapsed(), sender.await.unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_batch_is_taken_at_once_and_the_rest_waits_for_the_next() {
        let (tx, mut receiver, forward) = tapped_with(1024, 1 << 20);
        let (batch, over, waited, tx) =
            gathered_while_sending(tx, &mut receiver, BATCH + 10, "x").await;
        assert_eq!(batch.len(), BATCH);
        assert!(!over);
        assert!(waited < GATHER, "woken by the tap, not by the deadline");
        drop(tx);
        forward.await.unwrap();
        let (rest, over) = next_batch(&mut receiver.data, GATHER)
            .await
            .expect("the rest");
        assert_eq!(rest.len(), 10);
        assert!(over);
    }

    #[tokio::test(start_paused = true)]
    async fn half_of_a_small_bound_wakes_the_batch_before_the_deadline() {
        // By frames: a channel of 8 wakes at 4 waiting (lossless, as 8 would be full).
        let (tx, mut receiver, _forward) = tapped_with(8, 1 << 20);
        let (batch, _, waited, _tx) = gathered_while_sending(tx, &mut receiver, 6, "y").await;
        assert!(waited < GATHER, "woken at half the frames");
        assert!(batch.len() >= 5, "{}", batch.len());
        // By bytes: 100-byte frames against a 1,000-byte bound wake at 500 waiting.
        let text: &'static str = Box::leak("z".repeat(100).into_boxed_str());
        let (tx, mut receiver, _forward) = tapped_with(1024, 1000);
        let (batch, _, waited, _tx) = gathered_while_sending(tx, &mut receiver, 7, text).await;
        assert!(waited < GATHER, "woken at half the bytes");
        assert!(batch.len() >= 5, "{}", batch.len());
    }

    #[tokio::test(start_paused = true)]
    async fn large_frames_wake_the_batch_at_wake_bytes_not_at_the_deadline() {
        // 4 KiB frames against the default 16 MiB bound: far fewer than BATCH frames, and far
        // less than half the bound, yet WAKE_BYTES of them do not wait for the window to close
        // (what a fast stream queues is bounded by bytes, not by its rate times the window).
        let text: &'static str = Box::leak("w".repeat(4096).into_boxed_str());
        let count = WAKE_BYTES / text.len() + 2;
        let (tx, mut receiver, _forward) = tapped_with(1024, 16 << 20);
        let (batch, _, waited, _tx) = gathered_while_sending(tx, &mut receiver, count, text).await;
        assert!(waited < GATHER, "woken at WAKE_BYTES waiting");
        let bytes: usize = batch.iter().map(|e| e.bytes.len()).sum();
        assert!(bytes >= WAKE_BYTES, "{bytes}");
        assert!(batch.len() < BATCH);
    }

    #[test]
    fn exchanges_started_together_get_windows_1_ms_apart() {
        let mut windows: Vec<Duration> = (100..116).map(window_for).collect();
        windows.sort();
        for pair in windows.windows(2) {
            assert_eq!(pair[1] - pair[0], Duration::from_millis(1), "{windows:?}");
        }
        assert_eq!(
            windows.last(),
            Some(&GATHER),
            "none waits longer than GATHER"
        );
        assert_eq!(window_for(116), window_for(100), "the steps repeat");
        assert!(window() <= GATHER);
    }
}
