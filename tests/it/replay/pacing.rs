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

/// When each frame arrived, in milliseconds after the request was sent.
fn since_request_ms(paced: &Paced) -> Vec<f64> {
    paced
        .received
        .frames
        .iter()
        .map(|f| f.0.duration_since(paced.sent).as_secs_f64() * 1000.0)
        .collect()
}

/// Two bounds, each taken against the reference that load cannot push the wrong way. A frame
/// never arrives before its recorded time (scaled) after the request was sent: a timer never
/// fires early, and the replayer's clock starts after the request left, so `floor` holds on any
/// machine. Against the first frame, each later one arrives below `ceiling`, the value that
/// tells this pace from the next slower one (a late first frame shortens these offsets, it
/// never lengthens them); far above scheduling noise on a loaded machine, and still failed if
/// the pace were ignored or unscaled. The exact schedule is unit-tested with a paused clock in
/// `replay::body`.
fn assert_paced(paced: &Paced, floor: &[f64], ceiling: &[f64]) {
    let (since_request, since_first) = (since_request_ms(paced), offsets_ms(&paced.received));
    assert_eq!(since_request.len(), floor.len(), "{since_request:?}");
    assert_eq!(since_first.len(), ceiling.len(), "{since_first:?}");
    for (got, want) in since_request.iter().zip(floor) {
        assert!(
            got >= want,
            "after the request {since_request:?}, wanted at least {floor:?}"
        );
    }
    for (got, limit) in since_first.iter().zip(ceiling) {
        assert!(
            got < limit,
            "after the first frame {since_first:?}, wanted below {ceiling:?}"
        );
    }
}

/// A replayed response and when its request was sent.
struct Paced {
    received: Received,
    sent: std::time::Instant,
}

async fn replay_with(pace: Pace, tag: &str) -> Paced {
    let dir = TempDir::new(tag);
    Fixture::sse(chat("paced"), timed_frames()).write(dir.path(), "paced.jsonl");
    let mut settings = settings(dir.path());
    settings.pace = pace;
    let replay = start(&settings).await;
    let sent = std::time::Instant::now();
    let received = post_json(replay.local_addr(), &chat("paced")).await;
    assert_eq!(received.frames.len(), 4);
    Paced { received, sent }
}

#[tokio::test]
async fn recorded_pace_keeps_the_original_gaps() {
    let paced = replay_with(Pace::Scaled(1.0), "recorded").await;
    // Twice the recorded offsets would mean a pace of 2: far from 1.
    assert_paced(
        &paced,
        &[100.0, 250.0, 300.0, 700.0],
        &[300.0, 400.0, 1200.0],
    );
}

#[tokio::test]
async fn a_factor_scales_the_gaps() {
    let paced = replay_with(Pace::Scaled(0.25), "factor").await;
    // Below the unscaled offsets: the factor was applied.
    assert_paced(&paced, &[25.0, 62.5, 75.0, 175.0], &[150.0, 200.0, 600.0]);
}

#[tokio::test]
async fn instant_pace_sends_everything_at_once() {
    let paced = replay_with(Pace::Instant, "instant").await;
    let last = paced.received.frames.last().expect("frames").0;
    assert!(
        last.duration_since(paced.sent) < Duration::from_millis(400),
        "instant replay took {:?}; the recording spans 700 ms",
        last.duration_since(paced.sent)
    );
}
