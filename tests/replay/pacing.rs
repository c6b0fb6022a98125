//! `--pace`: recorded gaps are kept (within scheduling noise), a factor scales them, and
//! `instant` ignores them.

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

/// When each later frame arrived, in milliseconds after the first. Offsets from one reference,
/// not gaps between neighbours: one late frame then shows as one deviation instead of two.
fn offsets_ms(received: &Received) -> Vec<f64> {
    let first = received.frames[0].0;
    received.frames[1..]
        .iter()
        .map(|f| f.0.duration_since(first).as_secs_f64() * 1000.0)
        .collect()
}

/// Each offset within `slack` of the wanted one (generous: CI machines are shared, but far
/// tighter than the difference between paced and instant).
fn assert_offsets(got: &[f64], want: &[f64], slack: f64) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= slack,
            "offsets {got:?}, wanted {want:?} ± {slack} ms"
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
    assert_offsets(&offsets_ms(&received), &[150.0, 200.0, 600.0], 40.0);
}

#[tokio::test]
async fn a_factor_scales_the_gaps() {
    let received = replay_with(Pace::Scaled(0.25), "factor").await;
    assert_offsets(&offsets_ms(&received), &[37.5, 50.0, 150.0], 20.0);
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
