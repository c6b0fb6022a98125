//! The tee: a transparent `http_body::Body` wrapper that forwards every frame first and copies it
//! second, into a bounded per-exchange [`Tap`] that an inspector task drains (or into another
//! [`Sink`]: the request body's is kept whole, [`crate::tap::whole`]; a small response of known
//! length is copied framed, [`crate::tap::framed`]).
//!
//! Input: any body with `Bytes` data (the upstream response, or a replayed one). Output: the
//! same frames, unchanged and undelayed, to whoever polls the body (hyper, writing to the client
//! or to the upstream), plus [`TapEvent`]s on a bounded channel and exactly one [`TapEnd`] on a
//! oneshot. The wrapper does O(frame) work per frame: it copies the frame into a small block of
//! its own (a clone of hyper's `Bytes` would keep alive the whole read buffer the frame was cut
//! from; see docs/benchmarks.md#tee-copy), boxes it ([`TapEvent`]), then a `try_send`, an
//! atomic add and a clock read. It never awaits, never locks, and never pushes back: when the
//! channel is full (by frames, `inspect.tap_frames`, or by bytes not yet consumed,
//! `inspect.tap_bytes`) it counts the drop, marks the exchange lossy and stops copying (a stream
//! with a hole is useless to a reassembler), but it still delivers the ending, because the ending
//! travels on its own oneshot that cannot be full. The bytes count until the consumer says it is
//! done with them ([`TapData::release`]), so a batch waiting for the analysis pool is inside the
//! bound too. A consumer that needs no more of the body (its inspection stopped, at a bound or
//! on a body it does not inspect, and no recording takes more) says so
//! ([`TapData::stop_copying`], or a [`CopyStop`] from another thread): the tee reads that flag
//! with one atomic load per frame and forwards the rest uncopied, so a body far past every
//! bound costs neither the copies nor a backlog of frames nobody will read.
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

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use tokio::sync::{Notify, mpsc, oneshot};

/// One copied data frame, stamped with the instant tooltap saw it. It travels the channel
/// boxed: a channel's slots come in blocks of 32, allocated with the channel, and 32 unboxed
/// events (48 bytes each) make a block past glibc's per-thread cache, served by its slow path
/// for every tap; 32 pointers stay inside it (see docs/benchmarks.md#tap-boxed).
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
    UpstreamBroke(String),
    /// The body was dropped before its end: whoever was reading it went away.
    ReaderGone,
}

/// Delivered once per tapped body, after its last [`TapEvent`].
#[derive(Debug, Clone)]
pub struct TapEnd {
    pub ending: Ending,
    /// Data frames that were not copied because the channel was full (or after it was).
    pub dropped_frames: u64,
    /// Data frames forwarded without a copy after the consumer asked for no more
    /// ([`TapData::stop_copying`]): not a hole, the consumer had stopped reading.
    pub skipped_frames: u64,
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

/// What both halves share: the bytes sent and not yet released, the consumer's wake-up, and
/// whether the consumer wants more frames at all.
#[derive(Debug, Default)]
struct Shared {
    queued: AtomicUsize,
    wake: Notify,
    unwanted: AtomicBool,
}

/// The data channel's sender; dropping it (the body's end, an overflow, a tap dropped
/// unfinished) wakes the consumer, which then finds the channel closed.
#[derive(Debug)]
struct DataSender {
    tx: mpsc::Sender<Box<TapEvent>>,
    shared: Arc<Shared>,
}

impl Drop for DataSender {
    fn drop(&mut self) {
        self.shared.wake.notify_one();
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
    end: oneshot::Sender<TapEnd>,
    dropped_frames: u64,
    skipped_frames: u64,
    lossy: bool,
    copied_frames: u64,
    copy_time: std::time::Duration,
}

/// The receiving half, owned by the inspector task.
#[derive(Debug)]
pub struct TapReceiver {
    pub data: TapData,
    pub end: oneshot::Receiver<TapEnd>,
}

/// The data channel's receiving end; gives back the bytes of each frame it hands out.
#[derive(Debug)]
pub struct TapData {
    rx: mpsc::Receiver<Box<TapEvent>>,
    shared: Arc<Shared>,
}

impl TapData {
    /// The next frame, released at once; `None` once the body ended (or the tap stopped copying)
    /// and all were read.
    pub async fn recv(&mut self) -> Option<TapEvent> {
        let event = *self.rx.recv().await?;
        self.release(event.bytes.len());
        Some(event)
    }

    /// The next frame, still counted against `inspect.tap_bytes` until [`TapData::release`]:
    /// for a consumer that holds frames a while (a batch waiting for the analysis pool).
    pub async fn recv_kept(&mut self) -> Option<TapEvent> {
        self.rx.recv().await.map(|event| *event)
    }

    /// A frame already waiting, if any; kept like [`TapData::recv_kept`].
    pub fn try_recv_kept(&mut self) -> Result<TapEvent, mpsc::error::TryRecvError> {
        self.rx.try_recv().map(|event| *event)
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

    /// The consumer needs no more of this body: the tee forwards the rest without copying it,
    /// and closes the data channel at its next frame (the frames already sent can still be
    /// read). The ending still arrives, with the frames skipped counted apart from drops.
    pub fn stop_copying(&self) {
        self.shared.unwanted.store(true, Ordering::Relaxed);
    }

    /// A handle that can call [`TapData::stop_copying`] from elsewhere (the analysis pool, in
    /// the middle of a trip).
    pub fn copy_stop(&self) -> CopyStop {
        CopyStop(Arc::clone(&self.shared))
    }

    /// Whether the consumer asked for no more frames.
    #[cfg(test)]
    pub fn copying_stopped(&self) -> bool {
        self.shared.unwanted.load(Ordering::Relaxed)
    }
}

/// What [`TapData::copy_stop`] hands out: [`CopyStop::stop`] is [`TapData::stop_copying`].
#[derive(Debug, Clone)]
pub struct CopyStop(Arc<Shared>);

impl CopyStop {
    pub fn stop(&self) {
        self.0.unwanted.store(true, Ordering::Relaxed);
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
    let (data_tx, data_rx) = mpsc::channel(capacity);
    let (end_tx, end_rx) = oneshot::channel();
    let shared = Arc::new(Shared::default());
    let tap = Tap {
        data: Some(DataSender {
            tx: data_tx,
            shared: Arc::clone(&shared),
        }),
        block: BytesMut::new(),
        next_block: FIRST_COPY_BLOCK,
        shared: Arc::clone(&shared),
        max_bytes,
        wake_frames: (capacity / 2).clamp(1, BATCH_FRAMES),
        wake_bytes: (max_bytes / 2).min(WAKE_BYTES),
        end: end_tx,
        dropped_frames: 0,
        skipped_frames: 0,
        lossy: false,
        copied_frames: 0,
        copy_time: std::time::Duration::ZERO,
    };
    (
        tap,
        TapReceiver {
            data: TapData {
                rx: data_rx,
                shared,
            },
            end: end_rx,
        },
    )
}

/// Where a [`TeeBody`] puts its copies: a [`Tap`] streams them to a consumer that reads the body
/// as it comes (a response's), a [`crate::tap::framed::FramedCopy`] hands a small response of
/// known length over with its frames marked at its end, a [`crate::tap::whole::WholeCopy`] keeps
/// the body whole for one that needs it whole (the request's). All are called inside
/// `poll_frame`: they copy, count and never wait.
pub trait Sink {
    /// Copy one data frame (or count it, when no more are wanted or there is no room).
    fn copy(&mut self, bytes: &Bytes);
    /// The body ended this way; called exactly once.
    fn finish(self, ending: Ending);
}

impl Sink for Tap {
    fn copy(&mut self, bytes: &Bytes) {
        Tap::copy(self, bytes);
    }

    fn finish(self, ending: Ending) {
        Tap::finish(self, ending);
    }
}

impl Tap {
    /// Copy one frame, or count it as dropped (a hole) or skipped (not wanted). Never blocks.
    fn copy(&mut self, bytes: &Bytes) {
        let Some(DataSender { tx: sender, .. }) = &self.data else {
            // Lossy already, the inspector went away, or it asked for no more: count, do not
            // copy.
            if !self.lossy && self.shared.unwanted.load(Ordering::Relaxed) {
                self.skipped_frames += 1;
            } else {
                self.dropped_frames += 1;
            }
            return;
        };
        if self.shared.unwanted.load(Ordering::Relaxed) {
            // Dropping the sender closes the channel and wakes the consumer.
            self.data = None;
            self.skipped_frames += 1;
            return;
        }
        let at = Instant::now();
        let len = bytes.len();
        let waiting = self.shared.queued.fetch_add(len, Ordering::Relaxed);
        if waiting > 0 && waiting + len > self.max_bytes {
            // The inspector is that far behind: a hole now, not memory that grows.
            self.shared.queued.fetch_sub(len, Ordering::Relaxed);
            self.overflow();
            return;
        }
        let event = Box::new(TapEvent {
            bytes: copy_into(&mut self.block, &mut self.next_block, bytes),
            at,
        });
        match sender.try_send(event) {
            Ok(()) => {
                let frames = sender.max_capacity() - sender.capacity();
                if frames >= self.wake_frames || waiting + len >= self.wake_bytes {
                    self.shared.wake.notify_one();
                }
                self.copied_frames += 1;
                self.copy_time += at.elapsed();
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.shared.queued.fetch_sub(len, Ordering::Relaxed);
                self.overflow();
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
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
            skipped_frames,
            lossy,
            copied_frames,
            copy_time,
        } = self;
        drop(data); // close the data channel first, so the inspector sees every frame, then the end
        // The inspector may be gone (it panicked, or was never started): nothing to tell then.
        let _ = end.send(TapEnd {
            ending,
            dropped_frames,
            skipped_frames,
            lossy,
            at: Instant::now(),
            copied_frames,
            copy_time,
        });
    }
}

/// A body that forwards its inner body's frames unchanged and copies data frames into a
/// [`Sink`] (a [`Tap`] unless said otherwise).
#[derive(Debug)]
pub struct TeeBody<B, S: Sink = Tap> {
    inner: B,
    tap: Option<S>,
}

impl<B: Body, S: Sink> TeeBody<B, S> {
    /// Wrap `inner`. A body that is already over (a `Content-Length: 0` response, an empty
    /// request) is finished `Complete` here: hyper drops such a body without ever polling it, so
    /// waiting for a poll would report a reader that went away instead of an empty body.
    pub fn new(inner: B, tap: S) -> Self {
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

impl<B, S: Sink> TeeBody<B, S> {
    /// The single place every ending goes through; a second call finds `None` and does nothing.
    fn finish(&mut self, ending: Ending) {
        if let Some(tap) = self.tap.take() {
            tap.finish(ending);
        }
    }
}

impl<B, S> Body for TeeBody<B, S>
where
    B: Body<Data = Bytes> + Unpin,
    S: Sink + Unpin,
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
            Poll::Ready(Some(Err(error))) => this.finish(Ending::UpstreamBroke(error.to_string())),
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

impl<B, S: Sink> Drop for TeeBody<B, S> {
    fn drop(&mut self) {
        // hyper may drop a body without polling it to the end (the client went away).
        self.finish(Ending::ReaderGone);
    }
}

#[cfg(test)]
mod tests;
