//! A small response of known length, copied whole with its frames marked and handed over once.
//!
//! A response whose `Content-Length` is known and small (at most the bytes at which a streamed
//! [`Tap`] would wake its consumer anyway) is judged in one trip at its end, so streaming its
//! frames through a channel bought nothing and cost a channel (128-byte aligned, so glibc serves
//! it from `posix_memalign`), a box and a send per frame and a wake-up. A [`FramedCopy`] appends
//! each frame to one buffer and marks where it ended and when it passed, so the inspector feeds
//! the engine and the recording the same frames, with the same times, as the tap would have
//! delivered. It is bounded like the tap it stands in for: by the length it was made for (a body
//! longer than its `Content-Length` is a broken upstream hyper refuses, but a copy does not rely
//! on that) and by `inspect.tap_frames` frames; past either it stops copying and reports the
//! exchange lossy, as an overflowing tap does.
//!
//! Input: the response's frames, through [`crate::tap::tee::TeeBody`]. Output: one [`Framed`] on
//! a oneshot when the body ends, whatever way it ends: the frames copied (a broken body's too:
//! the engine judges what arrived) and the [`TapEnd`].

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;

use crate::tap::tee::{Ending, Sink, Tap, TapEnd, TapEvent, TapReceiver, WAKE_BYTES};

/// The tee's half for a response: streamed through a [`Tap`], or copied whole.
#[derive(Debug)]
pub enum ResponseSink {
    Streamed(Tap),
    Framed(FramedCopy),
}

/// The inspector's half, matching [`ResponseSink`].
#[derive(Debug)]
pub enum ResponseCopy {
    Streamed(TapReceiver),
    Framed(oneshot::Receiver<Framed>),
}

impl Sink for ResponseSink {
    fn copy(&mut self, bytes: &Bytes) {
        match self {
            ResponseSink::Streamed(tap) => Sink::copy(tap, bytes),
            ResponseSink::Framed(copy) => copy.copy(bytes),
        }
    }

    fn finish(self, ending: Ending) {
        match self {
            ResponseSink::Streamed(tap) => Sink::finish(tap, ending),
            ResponseSink::Framed(copy) => copy.finish(ending),
        }
    }
}

/// The tee's half of a framed copy.
#[derive(Debug)]
pub struct FramedCopy {
    body: BytesMut,
    /// Where each frame copied so far ends in `body`, and when it passed.
    marks: Vec<(usize, Instant)>,
    max_bytes: usize,
    max_frames: usize,
    lossy: bool,
    dropped_frames: u64,
    copy_time: Duration,
    end: oneshot::Sender<Framed>,
}

/// What the inspector receives once the response ended.
#[derive(Debug)]
pub struct Framed {
    /// The frames copied, in order, each with the time it passed.
    pub frames: Vec<TapEvent>,
    pub end: TapEnd,
}

/// The length to make a framed copy for, when a response of `length` bytes is copied framed: at
/// most what a streamed tap bounded by `tap_bytes` would queue before it woke its consumer
/// ([`WAKE_BYTES`], or half of `tap_bytes`); `None` for a longer one.
pub fn framed_length(length: u64, tap_bytes: usize) -> Option<usize> {
    usize::try_from(length)
        .ok()
        .filter(|length| *length <= (tap_bytes / 2).min(WAKE_BYTES))
}

/// A framed copy of a body of at most `max_bytes` in at most `max_frames` frames.
pub fn framed_copy(max_bytes: usize, max_frames: usize) -> (FramedCopy, oneshot::Receiver<Framed>) {
    let (end, receiver) = oneshot::channel();
    let copy = FramedCopy {
        body: BytesMut::with_capacity(max_bytes),
        marks: Vec::new(),
        max_bytes,
        max_frames: max_frames.max(1),
        lossy: false,
        dropped_frames: 0,
        copy_time: Duration::ZERO,
        end,
    };
    (copy, receiver)
}

impl FramedCopy {
    fn copy(&mut self, bytes: &Bytes) {
        if self.lossy {
            self.dropped_frames += 1;
            return;
        }
        let at = Instant::now();
        if self.marks.len() >= self.max_frames
            || self.body.len().saturating_add(bytes.len()) > self.max_bytes
        {
            // Past what the tap it stands in for would hold: a hole now, not memory that grows.
            self.lossy = true;
            self.dropped_frames += 1;
            self.body = BytesMut::new();
            self.marks = Vec::new();
            return;
        }
        self.body.extend_from_slice(bytes);
        self.marks.push((self.body.len(), at));
        self.copy_time += at.elapsed();
    }

    fn finish(self, ending: Ending) {
        let FramedCopy {
            body,
            marks,
            max_bytes: _,
            max_frames: _,
            lossy,
            dropped_frames,
            copy_time,
            end,
        } = self;
        let body = body.freeze();
        let mut start = 0;
        let frames = marks
            .iter()
            .map(|&(until, at)| {
                let bytes = body.slice(start..until);
                start = until;
                TapEvent { bytes, at }
            })
            .collect::<Vec<_>>();
        let copied_frames = frames.len() as u64;
        // The inspector may be gone (it panicked, or was never started): nothing to tell then.
        let _ = end.send(Framed {
            frames,
            end: TapEnd {
                ending,
                dropped_frames,
                skipped_frames: 0,
                lossy,
                at: Instant::now(),
                copied_frames,
                copy_time,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tap::tee::TeeBody;
    use crate::tap::tests_body::body_of;
    use http_body_util::BodyExt;

    async fn framed(frames: &[&'static [u8]], max_bytes: usize, max_frames: usize) -> Framed {
        let (copy, receiver) = framed_copy(max_bytes, max_frames);
        let tee = TeeBody::new(body_of(frames), ResponseSink::Framed(copy));
        let forwarded = tee.collect().await.expect("infallible").to_bytes();
        assert_eq!(forwarded, frames.concat(), "the client's bytes pass whole");
        receiver.await.expect("the copy reports its end")
    }

    #[tokio::test]
    async fn the_frames_come_back_as_they_passed_in_order_and_in_time() {
        let copied = framed(&[b"{\"id\":", b"\"c\",", b"\"choices\":[]}"], 64, 8).await;
        let texts: Vec<&[u8]> = copied.frames.iter().map(|f| &f.bytes[..]).collect();
        assert_eq!(texts, [&b"{\"id\":"[..], b"\"c\",", b"\"choices\":[]}"]);
        assert!(
            copied
                .frames
                .windows(2)
                .all(|pair| pair[0].at <= pair[1].at)
        );
        assert_eq!(copied.end.ending, Ending::Complete);
        assert_eq!(
            (copied.end.copied_frames, copied.end.dropped_frames),
            (3, 0)
        );
        assert!(!copied.end.lossy);
    }

    #[tokio::test]
    async fn past_its_length_or_its_frames_the_copy_is_a_hole() {
        let longer = framed(&[b"12345", b"67890"], 8, 8).await;
        assert!(longer.end.lossy);
        assert!(
            longer.frames.is_empty(),
            "nothing of a holed body is handed over"
        );
        assert_eq!(longer.end.dropped_frames, 1);
        let many = framed(&[b"a", b"b", b"c", b"d"], 64, 2).await;
        assert!(many.end.lossy);
        assert_eq!(many.end.dropped_frames, 2);
    }

    #[tokio::test]
    async fn a_body_cut_short_hands_over_what_passed() {
        let (copy, receiver) = framed_copy(64, 8);
        let mut tee = TeeBody::new(
            body_of(&[b"{\"id\":", b"\"c\"}"]),
            ResponseSink::Framed(copy),
        );
        tee.frame().await.expect("a frame").expect("infallible");
        drop(tee);
        let copied = receiver.await.expect("reported on drop");
        assert_eq!(copied.end.ending, Ending::ReaderGone);
        assert_eq!(copied.frames.len(), 1);
        assert_eq!(&copied.frames[0].bytes[..], b"{\"id\":");
    }
}
