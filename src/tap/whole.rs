//! The request body's copy: kept whole by the tee itself, handed to the inspector once, at its end.
//!
//! The inspector needs a request body whole before it can judge anything (the dialect is started
//! from the parsed request), so streaming its frames through a channel, as the response's
//! [`crate::tap::tee::Tap`] does, bought nothing and cost a channel, a box per frame and a second
//! copy per exchange. A [`WholeCopy`] appends each frame to one buffer, bounded on the spot: past
//! `inspect.max_request_body` it stops copying and says `too_large`, and each frame is charged to
//! the global memory budget (`inspect.max_memory`) before it is kept, so a body that would cross
//! it stops copying and says `over_memory`. Either way the buffer is dropped at once and the rest
//! of the body is forwarded uncopied. A copy nobody will read (the inspector went away) stops too.
//!
//! Input: the client's request frames, through [`crate::tap::tee::TeeBody`]. Output: one
//! [`WholeBody`] on a oneshot when the body ends, whatever way it ends: the body (only when it
//! ended complete and was kept whole), the [`TapEnd`] every tapped body reports, and the memory
//! charge the kept bytes hold, which the inspector takes over.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;

use crate::tap::memory::Charge;
use crate::tap::tee::{Ending, Sink, TapEnd};

/// Why a request body's copy stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    /// Past `inspect.max_request_body`.
    TooLarge,
    /// Keeping it would cross `inspect.max_memory`.
    OverMemory,
    /// Nobody waits for it: the inspector ended.
    Unread,
}

/// The tee's half: where the request's frames are copied.
#[derive(Debug)]
pub struct WholeCopy {
    body: BytesMut,
    max: usize,
    charge: Charge,
    stopped: Option<Stopped>,
    copied_frames: u64,
    skipped_frames: u64,
    copy_time: Duration,
    end: oneshot::Sender<WholeBody>,
}

/// What the inspector receives once the request body ended.
#[derive(Debug)]
pub struct WholeBody {
    /// The body, when it ended complete (or with trailers) and was kept whole.
    pub body: Option<Bytes>,
    pub end: TapEnd,
    /// Over `inspect.max_request_body`: forwarded whole, not kept.
    pub too_large: bool,
    /// Keeping it would have crossed `inspect.max_memory`: forwarded whole, not kept.
    pub over_memory: bool,
    /// What the kept bytes hold of the memory budget; released when dropped.
    pub charge: Charge,
}

/// A copy of a whole body of at most `max` bytes, charged to `charge` as it grows; the
/// receiver gets the [`WholeBody`] when the body ends.
pub fn whole_copy(max: usize, charge: Charge) -> (WholeCopy, oneshot::Receiver<WholeBody>) {
    let (end, receiver) = oneshot::channel();
    let copy = WholeCopy {
        body: BytesMut::new(),
        max,
        charge,
        stopped: None,
        copied_frames: 0,
        skipped_frames: 0,
        copy_time: Duration::ZERO,
        end,
    };
    (copy, receiver)
}

impl WholeCopy {
    fn stop(&mut self, why: Stopped) {
        self.stopped = Some(why);
        self.body = BytesMut::new();
        self.charge.release();
    }
}

impl Sink for WholeCopy {
    fn copy(&mut self, bytes: &Bytes) {
        if self.stopped.is_none() && self.end.is_closed() {
            self.stop(Stopped::Unread);
        }
        if self.stopped.is_some() {
            self.skipped_frames += 1;
            return;
        }
        let at = Instant::now();
        if self.body.len().saturating_add(bytes.len()) > self.max {
            self.stop(Stopped::TooLarge);
            self.skipped_frames += 1;
            return;
        }
        if !self.charge.try_add(bytes.len()) {
            self.stop(Stopped::OverMemory);
            self.skipped_frames += 1;
            return;
        }
        self.body.extend_from_slice(bytes);
        self.copied_frames += 1;
        self.copy_time += at.elapsed();
    }

    fn finish(self, ending: Ending) {
        let WholeCopy {
            body,
            max: _,
            charge,
            stopped,
            copied_frames,
            skipped_frames,
            copy_time,
            end,
        } = self;
        let whole = stopped.is_none() && matches!(ending, Ending::Complete | Ending::Trailers);
        let mut charge = charge;
        if !whole {
            // Nothing kept will be judged: the budget gets it back now.
            charge.release();
        }
        // The inspector may be gone (it panicked, or was never started): nothing to tell then.
        let _ = end.send(WholeBody {
            body: whole.then(|| body.freeze()),
            end: TapEnd {
                ending,
                dropped_frames: 0,
                skipped_frames,
                lossy: false,
                at: Instant::now(),
                copied_frames,
                copy_time,
            },
            too_large: stopped == Some(Stopped::TooLarge),
            over_memory: stopped == Some(Stopped::OverMemory),
            charge,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tap::memory::MemoryBudget;
    use crate::tap::tee::TeeBody;
    use crate::tap::tests_body::body_of;
    use http_body_util::BodyExt;

    async fn copied(frames: &[&'static [u8]], max: usize, budget: &MemoryBudget) -> WholeBody {
        let (copy, receiver) = whole_copy(max, budget.charge().expect("budget free"));
        let tee = TeeBody::new(body_of(frames), copy);
        let forwarded = tee.collect().await.expect("infallible").to_bytes();
        assert_eq!(forwarded, frames.concat(), "the client's bytes pass whole");
        receiver.await.expect("the copy reports its end")
    }

    #[tokio::test]
    async fn a_body_split_in_frames_arrives_whole_and_charged() {
        let budget = MemoryBudget::new(1 << 20);
        let whole = copied(&[b"{\"mo", b"del\":", b"\"m\"}"], 1024, &budget).await;
        assert_eq!(whole.body.as_deref(), Some(&b"{\"model\":\"m\"}"[..]));
        assert_eq!(whole.end.ending, Ending::Complete);
        assert_eq!((whole.end.copied_frames, whole.end.skipped_frames), (3, 0));
        assert!(!whole.too_large && !whole.over_memory && !whole.end.lossy);
        assert_eq!(whole.charge.held(), 13);
        assert_eq!(budget.used(), 13);
        drop(whole);
        assert_eq!(budget.used(), 0, "released with the body");
    }

    #[tokio::test]
    async fn past_the_size_bound_the_copy_stops_and_holds_nothing() {
        let budget = MemoryBudget::new(1 << 20);
        let whole = copied(&[b"12345", b"67890", b"abc"], 8, &budget).await;
        assert!(whole.too_large && !whole.over_memory);
        assert_eq!(whole.body, None);
        assert_eq!((whole.end.copied_frames, whole.end.skipped_frames), (1, 2));
        assert_eq!((whole.charge.held(), budget.used()), (0, 0));
    }

    #[tokio::test]
    async fn past_the_memory_budget_the_copy_stops_and_gives_its_charge_back() {
        let budget = MemoryBudget::new(7);
        let whole = copied(&[b"12345", b"67890"], 1024, &budget).await;
        assert!(whole.over_memory && !whole.too_large);
        assert_eq!(whole.body, None);
        assert_eq!((whole.end.copied_frames, whole.end.skipped_frames), (1, 1));
        assert_eq!((whole.charge.held(), budget.used()), (0, 0));
    }

    #[tokio::test]
    async fn a_copy_nobody_reads_stops_copying() {
        let budget = MemoryBudget::new(1 << 20);
        let (copy, receiver) = whole_copy(1024, budget.charge().expect("budget free"));
        drop(receiver);
        let tee = TeeBody::new(body_of(&[b"abc", b"def"]), copy);
        let forwarded = tee.collect().await.expect("infallible").to_bytes();
        assert_eq!(forwarded, &b"abcdef"[..]);
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn a_body_cut_short_is_reported_but_not_handed_over() {
        let budget = MemoryBudget::new(1 << 20);
        let (copy, receiver) = whole_copy(1024, budget.charge().expect("budget free"));
        let mut tee = TeeBody::new(body_of(&[b"abc", b"def"]), copy);
        let first = tee.frame().await.expect("a frame").expect("infallible");
        assert_eq!(first.into_data().ok().as_deref(), Some(&b"abc"[..]));
        drop(tee);
        let whole = receiver.await.expect("reported on drop");
        assert_eq!(whole.end.ending, Ending::ReaderGone);
        assert_eq!(whole.body, None);
        assert_eq!(whole.end.copied_frames, 1);
        assert_eq!(budget.used(), 0, "what was kept is given back at once");
    }
}
