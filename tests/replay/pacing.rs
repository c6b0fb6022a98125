//! `--pace`: recorded gaps are kept (never early, late only by scheduling noise), a factor
//! scales them, and `instant` ignores them.

use std::time::Duration;

use tooltap::replay::Pace;

use crate::support::{Fixture, Received, TempDir, chat, post_json, settings, start};

/// Recorded at 100 ms, 250 ms, 300 ms and 700 ms after the request head.
fn timed_frames() -> Vec<(u64, Vec<u8>)> {
    [100_000, 250_000, 300_000, 700_000]
        .iter()
        .enumerate()
        .map(|(i, t)| (*t, format!("data: {{\"n\":{i}}}\n\n").into_bytes()))
        .collect()
}

/// Gaps between consecutive frames as received, in milliseconds.
fn gaps_ms(received: &Received) -> Vec<f64> {
    received
        .frames
        .windows(2)
        .map(|w| w[1].0.duration_since(w[0].0).as_secs_f64() * 1000.0)
        .collect()
}

/// Each gap is at least `want - 2 ms` (frames are never early: deadlines are absolute) and at
/// most `want + slack`, generous because CI machines are shared.
fn assert_gaps(got: &[f64], want: &[f64], slack: f64) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            *g >= w - 2.0 && *g <= w + slack,
            "gaps {got:?}, wanted {want:?} ± {slack}"
        );
    }
}

async fn replay_with(pace: Pace, tag: &str) -> Received {
    let dir = TempDir::new(tag);
    Fixture::sse(chat("paced"), timed_frames()).write(dir.path(), "paced.jsonl");
    let mut settings = settings(dir.path());
    settings.pace = pace;
    let replay = start(&settings).await;
    let received = post_json(replay.local_addr(), &chat("paced")).await;
    assert_eq!(received.frames.len(), 4);
    received
}

#[tokio::test]
async fn recorded_pace_keeps_the_original_gaps() {
    let received = replay_with(Pace::Scaled(1.0), "recorded").await;
    assert_gaps(&gaps_ms(&received), &[150.0, 50.0, 400.0], 60.0);
}

#[tokio::test]
async fn a_factor_scales_the_gaps() {
    let received = replay_with(Pace::Scaled(0.25), "factor").await;
    assert_gaps(&gaps_ms(&received), &[37.5, 12.5, 100.0], 40.0);
}

#[tokio::test]
async fn instant_pace_sends_everything_at_once() {
    let started = std::time::Instant::now();
    let received = replay_with(Pace::Instant, "instant").await;
    let last = received.frames.last().expect("frames").0;
    assert!(
        last.duration_since(started) < Duration::from_millis(400),
        "instant replay took {:?}; the recording spans 700 ms",
        last.duration_since(started)
    );
}
