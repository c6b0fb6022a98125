//! The replayed response body: one HTTP body frame per recorded frame, paced, each flushed alone.
//!
//! Input: a recording's frames (`t_us` and exact bytes) and a [`Pace`]. Output: an
//! `http_body::Body` that hyper writes to the client. It yields one frame per `poll_frame` and
//! then returns `Pending` once (waking itself at once, or when the next frame is due): hyper's
//! HTTP/1 writer flushes whenever the body is pending, so each recorded frame leaves in its own
//! write and, with chunked encoding, its own chunk. A client's accumulator sees the provider's
//! exact fragment boundaries.
//!
//! A recording whose upstream broke off mid-body (`outcome: upstream_error`) is replayed the
//! same way: after its last frame the body fails with [`RecordedBreak`], so hyper aborts the
//! response (no terminating chunk, or an h2 reset) and the client sees a broken stream.
//!
//! Pacing schedules frame `i` at `t_us[i] × factor` after the body starts (absolute deadlines,
//! so sleeping late once does not push every later frame back). `t_us` counts from the original
//! request head, so under `recorded` pacing the first frame also waits its original
//! time-to-first-byte; the response head itself is sent at once.

use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::record::RecordedFrame;

/// How fast recorded frames are sent again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Every frame at once (each still its own write): for unit tests.
    Instant,
    /// The original timing scaled by the factor: `1.0` is the recorded pace, `0.1` ten times
    /// faster.
    Scaled(f64),
}

/// The slowest `--pace` factor: a one-second recorded gap then lasts ~17 minutes.
pub const MAX_PACE_FACTOR: f64 = 1000.0;
/// No frame is held back longer than this after the body began, whatever a recording's `t_us`
/// and the factor say (a hand-edited `t_us` near `u64::MAX` must not overflow the clock).
pub const MAX_PACE_OFFSET: Duration = Duration::from_secs(24 * 3600);

/// A `--pace` value that is neither `instant`, `recorded` nor a finite factor in 0..=1000.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown pace {0:?}: use instant, recorded, or a factor from 0 to 1000 such as 0.1 (ten times faster)"
)]
pub struct BadPace(pub String);

impl FromStr for Pace {
    type Err = BadPace;

    fn from_str(text: &str) -> Result<Pace, BadPace> {
        match text.trim() {
            "instant" => Ok(Pace::Instant),
            "recorded" => Ok(Pace::Scaled(1.0)),
            other => match other.parse::<f64>() {
                Ok(factor) if (0.0..=MAX_PACE_FACTOR).contains(&factor) => Ok(Pace::Scaled(factor)),
                _ => Err(BadPace(text.to_owned())),
            },
        }
    }
}

impl Pace {
    /// When the frame recorded at `t_us` is due, measured from the start of the body.
    fn offset(self, t_us: u64) -> Option<Duration> {
        match self {
            Pace::Instant => None,
            Pace::Scaled(factor) => {
                let seconds = Duration::from_micros(t_us).as_secs_f64() * factor;
                let offset = Duration::try_from_secs_f64(seconds).unwrap_or(MAX_PACE_OFFSET);
                Some(offset.min(MAX_PACE_OFFSET))
            }
        }
    }
}

/// How a replayed body ends after its last frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayEnding {
    /// A normal end of body.
    Complete,
    /// The recorded upstream broke off: fail the body, as it did.
    UpstreamBroke,
    /// Stay open after the last frame until the client goes (an MCP `GET` stream: a live
    /// server keeps it open for later messages; its end would make the client reconnect).
    StayOpen,
}

/// The error a [`ReplayEnding::UpstreamBroke`] body ends with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the recorded upstream broke off here (tooltap replay of an upstream_error recording)")]
pub struct RecordedBreak;

/// The body hyper polls.
#[derive(Debug)]
pub struct ReplayBody {
    frames: Arc<[RecordedFrame]>,
    next: usize,
    pace: Pace,
    /// `Some` until the ending was delivered.
    ending: Option<ReplayEnding>,
    /// Set on the first poll: pacing counts from when the client starts reading.
    started: Option<Instant>,
    /// Waiting for the next frame's deadline.
    sleep: Option<Pin<Box<Sleep>>>,
    /// A frame was just yielded: return `Pending` once so hyper flushes it on its own.
    flush_pending: bool,
}

impl ReplayBody {
    pub fn new(frames: Arc<[RecordedFrame]>, pace: Pace, ending: ReplayEnding) -> ReplayBody {
        ReplayBody {
            frames,
            next: 0,
            pace,
            ending: Some(ending),
            started: None,
            sleep: None,
            flush_pending: false,
        }
    }
}

impl Body for ReplayBody {
    type Data = Bytes;
    type Error = RecordedBreak;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let started = *this.started.get_or_insert_with(Instant::now);
        if this.flush_pending {
            this.flush_pending = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let Some(frame) = this.frames.get(this.next) else {
            return match this.ending.take() {
                Some(ReplayEnding::UpstreamBroke) => Poll::Ready(Some(Err(RecordedBreak))),
                // Never woken: the body ends when the client (or the server's shutdown) drops it.
                Some(ReplayEnding::StayOpen) => {
                    this.ending = Some(ReplayEnding::StayOpen);
                    Poll::Pending
                }
                Some(ReplayEnding::Complete) | None => Poll::Ready(None),
            };
        };
        if let Some(offset) = this.pace.offset(frame.t_us) {
            let due = started + offset;
            if Instant::now() < due {
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                sleep.as_mut().reset(due);
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
        }
        this.next += 1;
        // Even when the next frame is due at once (instant pace, or equal `t_us`), it must not
        // join this one in hyper's write buffer.
        this.flush_pending = true;
        Poll::Ready(Some(Ok(Frame::data(frame.bytes.clone()))))
    }

    fn is_end_stream(&self) -> bool {
        // A breaking body is not at its end until the break was delivered.
        self.next >= self.frames.len()
            && !matches!(
                self.ending,
                Some(ReplayEnding::UpstreamBroke | ReplayEnding::StayOpen)
            )
    }

    fn size_hint(&self) -> SizeHint {
        // Unknown on purpose: no Content-Length, so HTTP/1.1 uses chunked encoding and every
        // recorded frame keeps its boundary on the wire.
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn frames(times: &[u64]) -> Arc<[RecordedFrame]> {
        times
            .iter()
            .enumerate()
            .map(|(i, t)| RecordedFrame {
                seq: i as u64,
                t_us: *t,
                bytes: Bytes::from(format!("frame {i}\n")),
            })
            .collect()
    }

    #[test]
    fn pace_parses_names_and_factors() {
        assert_eq!("instant".parse::<Pace>(), Ok(Pace::Instant));
        assert_eq!("recorded".parse::<Pace>(), Ok(Pace::Scaled(1.0)));
        assert_eq!("0.1".parse::<Pace>(), Ok(Pace::Scaled(0.1)));
        assert_eq!("1000".parse::<Pace>(), Ok(Pace::Scaled(1000.0)));
        for bad in ["-1", "NaN", "inf", "fast", "", "1e300", "1000.5", "-0.0001"] {
            assert!(bad.parse::<Pace>().is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn yields_each_frame_on_its_own_and_ends() {
        let mut body = ReplayBody::new(frames(&[0, 5, 9]), Pace::Instant, ReplayEnding::Complete);
        let mut seen = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.expect("a clean body does not fail");
            seen.push(frame.into_data().expect("data"));
        }
        assert_eq!(seen, ["frame 0\n", "frame 1\n", "frame 2\n"]);
        assert!(body.is_end_stream());
    }

    #[tokio::test]
    async fn a_breaking_body_fails_after_its_last_frame() {
        let mut body = ReplayBody::new(frames(&[0, 5]), Pace::Instant, ReplayEnding::UpstreamBroke);
        let mut seen = Vec::new();
        while let Some(frame) = body.frame().await {
            seen.push(frame.map(|f| f.into_data().is_ok()));
            if seen.len() == 2 {
                assert!(!body.is_end_stream(), "the break is still to come");
            }
        }
        assert_eq!(seen, [Ok(true), Ok(true), Err(RecordedBreak)]);
        assert!(body.is_end_stream());
    }

    #[tokio::test(start_paused = true)]
    async fn an_absurd_recorded_time_is_clamped_not_a_panic() {
        let times = frames(&[0, u64::MAX]);
        let mut body =
            ReplayBody::new(times, Pace::Scaled(MAX_PACE_FACTOR), ReplayEnding::Complete);
        let start = Instant::now();
        let first = body.frame().await.expect("a frame").expect("clean");
        assert_eq!(first.into_data().expect("data"), "frame 0\n");
        // The second frame waits the clamped day, no longer, and the task never panics.
        let second = body.frame().await.expect("a frame").expect("clean");
        assert_eq!(second.into_data().expect("data"), "frame 1\n");
        assert_eq!(start.elapsed(), MAX_PACE_OFFSET);
    }

    #[tokio::test(start_paused = true)]
    async fn scaled_pace_waits_for_each_deadline() {
        let start = Instant::now();
        let times = frames(&[100_000, 300_000, 1_000_000]);
        let mut body = ReplayBody::new(times, Pace::Scaled(0.5), ReplayEnding::Complete);
        let mut at = Vec::new();
        while let Some(frame) = body.frame().await {
            frame.expect("a clean body does not fail");
            at.push(start.elapsed().as_millis());
        }
        assert_eq!(at, [50, 150, 500]);
    }
}
