//! The tee: a transparent `http_body::Body` wrapper that forwards every frame first and copies it
//! second, into a bounded per-exchange [`Tap`] that an inspector task drains.
//!
//! Input: any body with `Bytes` data (the upstream response, or the client's request). Output: the
//! same frames, unchanged and undelayed, to whoever polls the body (hyper, writing to the client
//! or to the upstream), plus [`TapEvent`]s on a bounded channel and exactly one [`TapEnd`] in a
//! slot of its own. The wrapper does O(frame) work per frame: it copies the frame into a small
//! block of its own (a clone of hyper's `Bytes` would keep alive the whole read buffer the frame
//! was cut from; see docs/benchmarks.md#tee-copy), then a `try_send`, an atomic add and a clock
//! read. It never awaits and never pushes back, and the one lock it takes (the queue's) is held
//! by either side only to push or pop one frame: when the channel is full (by frames,
//! `inspect.tap_frames`, or by bytes not yet consumed, `inspect.tap_bytes`) it counts the drop,
//! marks the exchange lossy and stops copying (a stream with a hole is useless to a
//! reassembler), but it still delivers the ending, because the ending has its own slot, which
//! cannot be full. The bytes count until the consumer says it is done with them
//! ([`TapData::release`]), so a batch waiting for the analysis pool is inside the bound too.
//!
//! The consumer is not woken for every frame: a batching consumer ([`crate::inspect::gather`])
//! sleeps while frames queue, and the tap wakes it ([`TapData::woken`]) only when half of
//! either bound, [`BATCH_FRAMES`] or [`WAKE_BYTES`] is waiting, and when the data channel closes
//! (so what a fast stream queues between two batches is bytes, not time: a stream whose
//! arguments arrive at megabytes a second holds [`WAKE_BYTES`] and a batch, not a window's worth). A wake per
//! frame cost a task poll per event on the worker threads, where the client's frames are
//! forwarded.
//!
//! Every way a body can end is named in [`Ending`] and funnels into `TeeBody::finish`, which
//! takes the tap out of its `Option`: finishing twice is impossible by construction.
//!
//! The frames and the ending travel in one shared allocation per tap (a queue under a lock
//! held for a push or a pop, and a waker for each of the consumer's two waits), not an `mpsc`
//! channel and a `oneshot`: those cost three more allocations per tapped body, two taps per
//! inspected exchange, on the request path.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use tokio::sync::Notify;
pub use tokio::sync::mpsc::error::TryRecvError;

/// One copied data frame, stamped with the instant tooltap saw it.
#[derive(Debug, Clone)]
pub struct TapEvent {
    pub bytes: Bytes,
    pub at: Instant,
}

/// How a tapped body ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The inner body reported its end (`None`, or `is_end_stream()` turned true).
    Complete,
    /// The body ended with trailers (complete as far as data goes).
    Trailers,
    /// The inner body failed mid-stream (upstream reset, timeout...).
    Error(String),
    /// The body was dropped before its end: whoever was reading it went away.
    Dropped,
}

/// Delivered once per tapped body, after its last [`TapEvent`].
#[derive(Debug, Clone)]
pub struct TapEnd {
    pub ending: Ending,
    /// Data frames that were not copied because the channel was full (or after it was).
    pub dropped_frames: u64,
    /// Whether any frame was dropped: the inspector saw a stream with a hole.
    pub lossy: bool,
    pub at: Instant,
    /// Frames copied, and the time the tee spent copying them: what inspection adds to the
    /// client path (`tooltap_frame_overhead_seconds`).
    pub copied_frames: u64,
    pub copy_time: std::time::Duration,
}

/// Bytes of frames that may wait in one tap for the inspector, unless configured otherwise.
pub const DEFAULT_TAP_BYTES: usize = 16 * 1024 * 1024;

/// The most frames a batching consumer takes at once: the tap wakes it when this many wait.
pub const BATCH_FRAMES: usize = 64;

/// Bytes waiting at which a batching consumer is woken (or half of `inspect.tap_bytes`, when
/// that is smaller): a batch of large frames does not wait for [`BATCH_FRAMES`] of them.
pub const WAKE_BYTES: usize = 32 * 1024;

/// What both halves share: the bytes sent and not yet released, the batching consumer's
/// wake-up, and the queue of frames with the ending.
#[derive(Debug, Default)]
struct Shared {
    queued: AtomicUsize,
    wake: Notify,
    queue: Mutex<Queue>,
}

/// The frames waiting, the ending, and who waits for them.
#[derive(Debug, Default)]
struct Queue {
    frames: VecDeque<TapEvent>,
    /// No frame will come any more: the data sender is gone.
    closed: bool,
    /// The receiving half is gone: frames are not wanted.
    receiver_gone: bool,
    /// The ending, once sent and until taken.
    end: Option<TapEnd>,
    /// The ending was sent, or its sender dropped without sending one.
    end_done: bool,
    /// The consumer waiting for a frame (or the close), and for the ending.
    data_waiter: Option<Waker>,
    end_waiter: Option<Waker>,
}

impl Shared {
    /// The queue; a panic elsewhere while it was held left it consistent (every change is one
    /// statement), so a poisoned lock is used as it is.
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why a frame was not queued.
enum Refused {
    /// `capacity` frames wait already.
    Full,
    /// Nobody receives any more.
    Closed,
}

/// The data channel's sender; dropping it (the body's end, an overflow, a tap dropped
/// unfinished) wakes the consumer, which then finds the channel closed.
#[derive(Debug)]
struct DataSender {
    shared: Arc<Shared>,
    capacity: usize,
}

impl DataSender {
    /// Queues `event`; the number of frames waiting with it.
    fn try_send(&self, event: TapEvent) -> Result<usize, Refused> {
        let mut queue = self.shared.queue();
        if queue.receiver_gone {
            return Err(Refused::Closed);
        }
        if queue.frames.len() >= self.capacity {
            return Err(Refused::Full);
        }
        queue.frames.push_back(event);
        let waiting = queue.frames.len();
        let waiter = queue.data_waiter.take();
        drop(queue);
        if let Some(waiter) = waiter {
            waiter.wake();
        }
        Ok(waiting)
    }
}

impl Drop for DataSender {
    fn drop(&mut self) {
        let mut queue = self.shared.queue();
        queue.closed = true;
        let waiter = queue.data_waiter.take();
        drop(queue);
        if let Some(waiter) = waiter {
            waiter.wake();
        }
        self.shared.wake.notify_one();
    }
}

/// The ending's sender: sends it once, or (dropped unsent) tells the receiver none will come.
#[derive(Debug)]
struct EndSender {
    shared: Arc<Shared>,
}

impl EndSender {
    fn send(self, end: TapEnd) {
        self.done(Some(end));
    }

    fn done(&self, end: Option<TapEnd>) {
        let mut queue = self.shared.queue();
        if queue.end_done {
            return;
        }
        queue.end_done = true;
        queue.end = end;
        let waiter = queue.end_waiter.take();
        drop(queue);
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

impl Drop for EndSender {
    fn drop(&mut self) {
        self.done(None);
    }
}

/// The tapped body ended without telling how (its tap was dropped unfinished).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndLost;

/// The receiving half of a tap's ending: awaited, it gives the [`TapEnd`] once the body ended.
#[derive(Debug)]
pub struct TapEndReceiver {
    shared: Arc<Shared>,
}

impl Future for TapEndReceiver {
    type Output = Result<TapEnd, EndLost>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut queue = self.shared.queue();
        if let Some(end) = queue.end.take() {
            return Poll::Ready(Ok(end));
        }
        if queue.end_done {
            return Poll::Ready(Err(EndLost));
        }
        set_waiter(&mut queue.end_waiter, cx);
        Poll::Pending
    }
}

/// Keeps the waker of the task polling now (unless it is the one kept already).
fn set_waiter(waiter: &mut Option<Waker>, cx: &Context<'_>) {
    if !waiter
        .as_ref()
        .is_some_and(|kept| kept.will_wake(cx.waker()))
    {
        *waiter = Some(cx.waker().clone());
    }
}

/// The sending half held by a [`TeeBody`].
#[derive(Debug)]
pub struct Tap {
    data: Option<DataSender>,
    /// Where frames are copied (see [`COPY_BLOCK`]), and the size of the next block.
    block: BytesMut,
    next_block: usize,
    /// Bytes sent and not yet received (shared with the [`TapData`]), and the most allowed.
    shared: Arc<Shared>,
    max_bytes: usize,
    /// Frames waiting at which the consumer is woken: [`BATCH_FRAMES`], or half the channel.
    wake_frames: usize,
    /// Bytes waiting at which the consumer is woken: [`WAKE_BYTES`], or half `max_bytes`.
    wake_bytes: usize,
    end: EndSender,
    dropped_frames: u64,
    lossy: bool,
    copied_frames: u64,
    copy_time: std::time::Duration,
}

/// The receiving half, owned by the inspector task.
#[derive(Debug)]
pub struct TapReceiver {
    pub data: TapData,
    pub end: TapEndReceiver,
}

/// The data channel's receiving end; gives back the bytes of each frame it hands out.
#[derive(Debug)]
pub struct TapData {
    shared: Arc<Shared>,
}

impl Drop for TapData {
    fn drop(&mut self) {
        // The frames waiting go now, not when the tap ends; the tap copies no more.
        let frames = {
            let mut queue = self.shared.queue();
            queue.receiver_gone = true;
            queue.data_waiter = None;
            std::mem::take(&mut queue.frames)
        };
        drop(frames);
    }
}

impl TapData {
    /// The next frame, released at once; `None` once the body ended (or the tap stopped copying)
    /// and all were read.
    pub async fn recv(&mut self) -> Option<TapEvent> {
        let event = self.recv_kept().await?;
        self.release(event.bytes.len());
        Some(event)
    }

    /// The next frame, still counted against `inspect.tap_bytes` until [`TapData::release`]:
    /// for a consumer that holds frames a while (a batch waiting for the analysis pool).
    pub async fn recv_kept(&mut self) -> Option<TapEvent> {
        std::future::poll_fn(|cx| {
            let mut queue = self.shared.queue();
            if let Some(event) = queue.frames.pop_front() {
                return Poll::Ready(Some(event));
            }
            if queue.closed {
                return Poll::Ready(None);
            }
            set_waiter(&mut queue.data_waiter, cx);
            Poll::Pending
        })
        .await
    }

    /// A frame already waiting, if any; kept like [`TapData::recv_kept`].
    pub fn try_recv_kept(&mut self) -> Result<TapEvent, TryRecvError> {
        let mut queue = self.shared.queue();
        match queue.frames.pop_front() {
            Some(event) => Ok(event),
            None if queue.closed => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// The consumer is done with `bytes` of kept frames: the tap may copy that much again.
    pub fn release(&self, bytes: usize) {
        self.shared.queued.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Returns once the tap has asked for a drain since the last return: half a bound,
    /// [`BATCH_FRAMES`] or [`WAKE_BYTES`] waiting, or the data channel closed (see the module doc). A request
    /// made while nobody waits is kept for the next call, so none is lost; one may be stale
    /// (its frames taken meanwhile), which only ends a wait early.
    pub async fn woken(&self) {
        self.shared.wake.notified().await;
    }
}

/// Bytes of the largest block frames are copied into; a new block starts when one is full, and
/// a block whose frames were all consumed is reused. What the copies pin beyond the bytes waiting
/// is at most one block. A tap's first block is [`FIRST_COPY_BLOCK`], each next one twice the
/// last: a slow stream (an event every few seconds, held open by the thousand) keeps a small one.
const COPY_BLOCK: usize = 4 * 1024;
const FIRST_COPY_BLOCK: usize = 512;

/// `bytes`, copied into `block` (or a new block, when it has no room left).
fn copy_into(block: &mut BytesMut, next_block: &mut usize, bytes: &[u8]) -> Bytes {
    if block.capacity() < bytes.len() {
        block.reserve(bytes.len().max(*next_block));
        *next_block = (*next_block * 2).min(COPY_BLOCK);
    }
    block.extend_from_slice(bytes);
    block.split().freeze()
}

/// A bounded tap: at most `capacity` frames and [`DEFAULT_TAP_BYTES`] wait for the inspector.
pub fn tap(capacity: usize) -> (Tap, TapReceiver) {
    tap_bounded(capacity, DEFAULT_TAP_BYTES)
}

/// A bounded tap: at most `capacity` frames and `max_bytes` bytes of them (a single larger
/// frame still fits an empty tap) wait for the inspector at any time.
pub fn tap_bounded(capacity: usize, max_bytes: usize) -> (Tap, TapReceiver) {
    let capacity = capacity.max(1);
    let shared = Arc::new(Shared::default());
    let tap = Tap {
        data: Some(DataSender {
            shared: Arc::clone(&shared),
            capacity,
        }),
        block: BytesMut::new(),
        next_block: FIRST_COPY_BLOCK,
        shared: Arc::clone(&shared),
        max_bytes,
        wake_frames: (capacity / 2).clamp(1, BATCH_FRAMES),
        wake_bytes: (max_bytes / 2).min(WAKE_BYTES),
        end: EndSender {
            shared: Arc::clone(&shared),
        },
        dropped_frames: 0,
        lossy: false,
        copied_frames: 0,
        copy_time: std::time::Duration::ZERO,
    };
    (
        tap,
        TapReceiver {
            data: TapData {
                shared: Arc::clone(&shared),
            },
            end: TapEndReceiver { shared },
        },
    )
}

impl Tap {
    /// Copy one frame, or count it as dropped. Never blocks.
    fn copy(&mut self, bytes: &Bytes) {
        let Some(sender) = &self.data else {
            // Lossy already, or the inspector went away: count, do not copy.
            self.dropped_frames += 1;
            return;
        };
        let at = Instant::now();
        let len = bytes.len();
        let waiting = self.shared.queued.fetch_add(len, Ordering::Relaxed);
        if waiting > 0 && waiting + len > self.max_bytes {
            // The inspector is that far behind: a hole now, not memory that grows.
            self.shared.queued.fetch_sub(len, Ordering::Relaxed);
            self.overflow();
            return;
        }
        let event = TapEvent {
            bytes: copy_into(&mut self.block, &mut self.next_block, bytes),
            at,
        };
        match sender.try_send(event) {
            Ok(frames) => {
                if frames >= self.wake_frames || waiting + len >= self.wake_bytes {
                    self.shared.wake.notify_one();
                }
                self.copied_frames += 1;
                self.copy_time += at.elapsed();
            }
            Err(Refused::Full) => {
                self.shared.queued.fetch_sub(len, Ordering::Relaxed);
                self.overflow();
            }
            Err(Refused::Closed) => {
                self.shared.queued.fetch_sub(len, Ordering::Relaxed);
                self.data = None;
            }
        }
    }

    fn overflow(&mut self) {
        self.dropped_frames += 1;
        self.lossy = true;
        self.data = None;
    }

    fn finish(self, ending: Ending) {
        let Tap {
            data,
            block: _,
            next_block: _,
            end,
            shared: _,
            max_bytes: _,
            wake_frames: _,
            wake_bytes: _,
            dropped_frames,
            lossy,
            copied_frames,
            copy_time,
        } = self;
        drop(data); // close the data channel first, so the inspector sees every frame, then the end
        // The inspector may be gone (it panicked, or was never started): then nobody reads it.
        end.send(TapEnd {
            ending,
            dropped_frames,
            lossy,
            at: Instant::now(),
            copied_frames,
            copy_time,
        });
    }
}

/// A body that forwards its inner body's frames unchanged and copies data frames into a [`Tap`].
#[derive(Debug)]
pub struct TeeBody<B> {
    inner: B,
    tap: Option<Tap>,
}

impl<B: Body> TeeBody<B> {
    /// Wrap `inner`. A body that is already over (a `Content-Length: 0` response, an empty
    /// request) is finished `Complete` here: hyper drops such a body without ever polling it, so
    /// waiting for a poll would report a reader that went away instead of an empty body.
    pub fn new(inner: B, tap: Tap) -> Self {
        let mut tee = TeeBody {
            inner,
            tap: Some(tap),
        };
        if tee.inner.is_end_stream() {
            tee.finish(Ending::Complete);
        }
        tee
    }
}

impl<B> TeeBody<B> {
    /// The single place every ending goes through; a second call finds `None` and does nothing.
    fn finish(&mut self, ending: Ending) {
        if let Some(tap) = self.tap.take() {
            tap.finish(ending);
        }
    }
}

impl<B> Body for TeeBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Pending => {}
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(bytes) = frame.data_ref() {
                    if let Some(tap) = this.tap.as_mut() {
                        tap.copy(bytes);
                    }
                    if this.inner.is_end_stream() {
                        this.finish(Ending::Complete);
                    }
                } else if frame.is_trailers() {
                    this.finish(Ending::Trailers);
                }
            }
            Poll::Ready(Some(Err(error))) => this.finish(Ending::Error(error.to_string())),
            Poll::Ready(None) => this.finish(Ending::Complete),
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for TeeBody<B> {
    fn drop(&mut self) {
        // hyper may drop a body without polling it to the end (the client went away).
        self.finish(Ending::Dropped);
    }
}

#[cfg(test)]
mod tests;
