//! `--pace`: recorded gaps are kept (never shorter, bounded above), a factor scales them, and
//! `instant` ignores them.

use std::time::Duration;

use tooltap::replay::Pace;

use crate::replay::support::{Fixture, Received, TempDir, chat, post_json, settings, start};

/// Recorded at 100 ms, 250 ms, 300 ms and 700 ms after the request head.
fn timed_frames() -> Vec<(u64, Vec<u8>)> {
    [100_000, 250_000, 300_000, 700_000]
        .iter()
        .enumerate()
        .map(|(i, t)| (*t, format!("data: {{\"n\":{i}}}\n\n").into_bytes()))
        .collect()
}

/// When each later frame arrived, in milliseconds after the first. Offsets from one reference,
/// not gaps between neighbours: one late frame then shows as one deviation instead of two.
fn offsets_ms(received: &Received) -> Vec<f64> {
    let first = received.frames[0].0;
    received.frames[1..]
        .iter()
        .map(|f| f.0.duration_since(first).as_secs_f64() * 1000.0)
        .collect()
}

/// Each offset at least its wanted value (less `early`: the first frame, the reference, may
/// itself be late, which shifts every later offset down) and below `ceiling`, the value that
/// tells this pace from the next slower one. A timer never fires early, so the lower bound is
/// what pacing guarantees; the ceiling is far above scheduling noise on a loaded machine, and
/// still fails if the pace were ignored or unscaled. The exact schedule is unit-tested with a
/// paused clock in `replay::body`.
fn assert_offsets(got: &[f64], want: &[f64], ceiling: &[f64]) {
    let early = 30.0;
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((g, w), c) in got.iter().zip(want).zip(ceiling) {
        assert!(
            *g >= w - early && g < c,
            "offsets {got:?}, wanted at least {want:?} (less {early} ms) and below {ceiling:?}"
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
    // Twice the recorded offsets would mean a pace of 2: far from 1.
    assert_offsets(
        &offsets_ms(&received),
        &[150.0, 200.0, 600.0],
        &[300.0, 400.0, 1200.0],
    );
}

#[tokio::test]
async fn a_factor_scales_the_gaps() {
    let received = replay_with(Pace::Scaled(0.25), "factor").await;
    // Below the unscaled offsets: the factor was applied.
    assert_offsets(
        &offsets_ms(&received),
        &[37.5, 50.0, 150.0],
        &[150.0, 200.0, 600.0],
    );
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
