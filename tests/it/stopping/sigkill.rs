//! SIGKILL in the segments layout: every recording finished before the kill is in its segment
//! file promptly (not at the next flush, which a killed process never reaches), `check` and
//! `replay` read them all, an empty or cut segment is skipped rather than refusing the folder,
//! and the next start sweeps the temporary files a dead process left.

use std::time::{Duration, Instant};

use super::*;
use crate::support::TempDir;
use crate::support::check::check_json;
use crate::support::fixtures::fixture_upstream;
use crate::support::proxy::start_replay;

const EXCHANGES: usize = 39;

/// Before: 0 of 39 recordings in the segment 2 s after their exchanges, and a 0-byte segment
/// that made `check` exit 2 and `replay` refuse the folder.
#[tokio::test]
async fn after_a_sigkill_in_the_segments_layout_every_finished_recording_is_read_back() {
    let fixture = violating();
    let upstream = fixture_upstream(std::slice::from_ref(&fixture)).await;
    let dir = TempDir::new("stop-kill");
    let recordings = dir.join("rec");
    let layout = ["--record", "all", "--record-layout", "segments"];
    let mut running = start(&dir, &upstream.url(), &layout).await;
    let mut ids = HashSet::new();
    for _ in 0..EXCHANGES {
        ids.insert(id_of(&send_violating(&running, &fixture).await));
    }
    // Finished recordings reach the segment file within a writer burst, not at shutdown.
    let began = Instant::now();
    while recorded_ids(&recordings) != ids {
        assert!(
            began.elapsed() < Duration::from_secs(3),
            "{} of {EXCHANGES} recordings in the segment after 3 s",
            recorded_ids(&recordings).len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal(&running.child, "-KILL");
    exited(&mut running).await;

    // What a killed process can leave besides: an empty segment, one cut in its first line.
    let day = jsonl_under(&recordings)[0]
        .parent()
        .expect("date folder")
        .to_path_buf();
    std::fs::write(day.join("segment-t0-empty.jsonl"), "").expect("write");
    std::fs::write(
        day.join("segment-t0-cut.jsonl"),
        r#"{"type":"exchange","v":1,"i"#,
    )
    .expect("write");
    let checked = check_json(&recordings);
    assert_eq!(
        checked.code, 1,
        "violations found, nothing unreadable: {}",
        checked.stderr
    );
    assert_eq!(
        checked.report["exchanges"].as_array().map(Vec::len),
        Some(EXCHANGES),
        "{}",
        checked.stderr
    );
    for skipped in ["segment-t0-empty.jsonl", "segment-t0-cut.jsonl"] {
        assert!(
            checked
                .stderr
                .lines()
                .any(|line| line.starts_with("tooltap check: note: ")
                    && line.contains(skipped)
                    && line.ends_with("skipped")),
            "check says it skipped {skipped}: {}",
            checked.stderr
        );
    }
    let replay = start_replay(recordings.clone(), None).await;
    let loaded = replay.state().library.read().map(|l| l.len()).unwrap_or(0);
    assert_eq!(loaded, EXCHANGES, "replay loads every recording");
    within(Duration::from_secs(10), replay.shutdown())
        .await
        .expect("replay stops");

    // A dead process's temporary files (this version's name, unlocked; an older version's, an
    // hour old) are swept at the next start; a recording and other files are not.
    let stale = day.join(".t0-1~0123456789abcdef.jsonl.tmp");
    std::fs::write(&stale, r#"{"type":"exchange"}"#).expect("write");
    let old = day.join(".t0-2.jsonl.tmp");
    let file = std::fs::File::create(&old).expect("create");
    file.set_modified(std::time::SystemTime::now() - Duration::from_secs(7200))
        .expect("mtime");
    drop(file);
    let notes = day.join("notes.tmp");
    std::fs::write(&notes, "mine").expect("write");
    let mut restarted = start(&dir, &upstream.url(), &layout).await;
    assert!(!stale.exists() && !old.exists(), "both swept");
    assert!(notes.exists(), "not a name tooltap writes");
    assert!(
        restarted
            .log
            .iter()
            .any(|line| line.contains("temporary recording files") && line.contains("\"swept\":2")),
        "the start says how many: {:?}",
        restarted.log
    );
    assert_eq!(recorded_ids(&recordings), ids, "no recording touched");
    signal(&restarted.child, "-TERM");
    assert!(exited(&mut restarted).await.success());
}
