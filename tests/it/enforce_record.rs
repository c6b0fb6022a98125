//! Enforce mode, recorded and replayed: every cut is recorded as `enforced` (the decision is
//! awaited, never read early), with what the client got instead, and `tooltap replay` of those
//! recordings serves the client's bytes — the 502, or the stream up to its error event.

use std::net::SocketAddr;
use std::time::Duration;

use tooltap::record::{Outcome, RecordMode, read_file};
use tooltap::replay::{ReplaySettings, RunningReplay};

use crate::engine_support::{self, Fixture};
use crate::support::TempDir;
use crate::support::client::{Collected, exchange};
use crate::support::fixtures::fixture_request;
use crate::support::fixtures::{fixture_upstream, settle};
use crate::support::temp::jsonl_under;
use crate::support::{proxy, within};

const LIMIT: Duration = Duration::from_secs(20);

async fn post(addr: SocketAddr, fixture: &Fixture) -> Collected {
    within(LIMIT, exchange(addr, fixture_request(addr, fixture))).await
}

#[tokio::test]
async fn every_cut_is_recorded_enforced_and_replays_as_the_client_saw_it() {
    const ROUNDS: usize = 10;
    let buffered = engine_support::fixture("buffered_arguments_object");
    let stream = engine_support::fixture("stream_parallel_all_on_index_0");
    let upstream = fixture_upstream(&[buffered.clone(), stream.clone()]).await;
    let dir = TempDir::new("enforce-rec");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(dir.to_path_buf());
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let mut live = Vec::new();
    for _ in 0..ROUNDS {
        live.push(post(addr, &buffered).await);
        live.push(post(addr, &stream).await);
    }
    assert_eq!(live[0].status, 502);
    assert_eq!(live[1].status, 200);
    assert!(String::from_utf8_lossy(&live[1].body).contains("contract_violation"));
    settle(&tooltap, 2 * ROUNDS as u64).await;
    if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
        within(LIMIT, recorder.flush()).await;
    }
    let files = jsonl_under(&dir);
    assert_eq!(files.len(), 2 * ROUNDS, "{files:?}");
    for file in &files {
        let recording = read_file(file).expect("readable");
        let end = recording.end.expect("an end line");
        assert_eq!(end.outcome, Outcome::Enforced, "{}", file.display());
        assert!(end.enforced.is_some(), "{}", file.display());
    }

    let mut settings = ReplaySettings::new(dir.to_path_buf());
    settings.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    let replay = within(LIMIT, RunningReplay::start(&settings))
        .await
        .expect("replay starts");
    for (fixture, seen) in [(&buffered, &live[0]), (&stream, &live[1])] {
        let replayed = post(replay.local_addr(), fixture).await;
        assert_eq!(replayed.status, seen.status, "{}", fixture.name);
        assert_eq!(
            String::from_utf8_lossy(&replayed.body),
            String::from_utf8_lossy(&seen.body),
            "{}: replay serves what the client got",
            fixture.name
        );
    }
}

/// A stream answered without a content type is a stream to enforce mode as to the engine (the
/// request asked for one): cut with an error event, not held and refused with a 502.
#[tokio::test]
async fn enforce_and_the_engine_agree_on_what_a_stream_is() {
    let fixture = engine_support::fixture("stream_parallel_all_on_index_0");
    let frames: Vec<String> = engine_support::natural_frames(&fixture)
        .into_iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    let refs: Vec<&str> = frames.iter().map(String::as_str).collect();
    let mut script = crate::support::upstream::Script::sse(&refs, Duration::ZERO);
    script.headers.clear();
    let upstream = crate::support::upstream::Upstream::serving(script).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    let tooltap = proxy::start(raw).await;
    let got = post(tooltap.local_addr(), &fixture).await;
    assert_eq!(got.status, 200, "a stream is cut, not refused");
    let text = String::from_utf8_lossy(&got.body);
    assert!(
        text.trim_end().ends_with('}') && text.contains("contract_violation"),
        "{text}"
    );
}
