//! The `segments` layout against a real filesystem: finished recordings appended to one file per
//! route and day, read back whole by `tooltap check` and `tooltap replay`; a long recording moved
//! to its own file; segments cut at their size and pruned whole, never the one being written.

use std::sync::Arc;

use super::{begin, config, end, failures, record, violation};
use crate::support::TempDir;
use crate::support::check::check_json;
use crate::support::temp::files_under;
use bytes::Bytes;
use http::HeaderMap;
use tooltap::interop::files::read_all_bounded;
use tooltap::metrics::Metrics;
use tooltap::record::{Outcome, RecordLayout, RecordMode, Recorder, RecorderConfig};
use tooltap::replay::library::Library;
use tooltap::replay::matching::MatchRules;

fn segments_config(dir: &std::path::Path) -> RecorderConfig {
    RecorderConfig {
        layout: RecordLayout::Segments,
        ..config(dir, RecordMode::All)
    }
}

fn file_names(dir: &std::path::Path) -> Vec<String> {
    files_under(dir)
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn recordings_are_appended_to_one_segment_that_check_and_replay_read_whole() {
    let dir = TempDir::new("segments-whole");
    let metrics = Arc::new(Metrics::default());
    let recorder = Recorder::spawn(segments_config(&dir), metrics.clone());
    for k in 0..5 {
        let frames: [&[u8]; 2] = [b"data: {\"choices\":[]}\n\n", b"data: [DONE]\n\n"];
        let violations = if k == 2 { vec![violation()] } else { vec![] };
        record(&recorder, &format!("t-{k}"), &frames, violations).await;
    }
    assert_eq!(file_names(&dir), vec!["segment-t-0.jsonl".to_string()]);
    let segment = &files_under(&dir)[0];
    let read = read_all_bounded(segment, u64::MAX, &mut Vec::new());
    let ids: Vec<String> = read
        .iter()
        .map(|r| r.as_ref().expect("readable").meta.id.clone())
        .collect();
    assert_eq!(ids, ["t-0", "t-1", "t-2", "t-3", "t-4"]);
    for recording in read.iter().flatten() {
        assert_eq!(
            recording.body(),
            b"data: {\"choices\":[]}\n\ndata: [DONE]\n\n"
        );
        let end = recording.end.as_ref().expect("end line");
        assert_eq!((end.outcome, end.frames), (Outcome::Complete, 2));
    }
    assert_eq!(failures(&metrics, "recordings"), 0);

    // `tooltap check` gives one exchange per recording, named by the segment and the id.
    let checked = check_json(&dir);
    let exchanges = checked.report["exchanges"].as_array().expect("exchanges");
    let ids: Vec<&str> = exchanges
        .iter()
        .map(|e| e["id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        ids,
        ["t-0", "t-1", "t-2", "t-3", "t-4"],
        "{}",
        checked.stderr
    );
    assert!(exchanges.iter().all(|e| {
        e["source"]
            .as_str()
            .expect("source")
            .ends_with("segment-t-0.jsonl")
    }));
    let live: Vec<u64> = exchanges
        .iter()
        .map(|e| e["live_violations"].as_u64().expect("count"))
        .collect();
    assert_eq!(live, [0, 0, 1, 0, 0]);

    // `tooltap replay` serves each of them in turn under one key, named `<file>#<id>`.
    let library = Library::load(&dir, MatchRules::default()).expect("loads");
    assert_eq!(library.len(), 5);
    let body = br#"{"model":"m","stream":true}"#;
    let first = library
        .next_for("POST", "/v1/chat/completions", body)
        .expect("served");
    assert!(
        first.name.ends_with("segment-t-0.jsonl#t-0"),
        "{}",
        first.name
    );
    let second = library
        .next_for("POST", "/v1/chat/completions", body)
        .expect("served");
    assert!(second.name.ends_with("#t-1"), "{}", second.name);
}

#[tokio::test]
async fn a_recording_that_outgrows_the_hold_gets_its_own_file_and_short_ones_stay_in_the_segment() {
    let dir = TempDir::new("segments-long");
    let recorder = Recorder::spawn(segments_config(&dir), Arc::new(Metrics::default()));
    record(&recorder, "t-short-1", &[b"data: [DONE]\n\n"], vec![]).await;
    // Interleaved with the long one: a short recording opened and finished while it is open.
    let origin = std::time::Instant::now();
    let mut long = begin(&recorder, "t-long", &HeaderMap::new(), origin);
    long.request_body(Some(br#"{"model":"m","stream":true}"#));
    long.response_head(200, &HeaderMap::new());
    let event = Bytes::from(format!("data: {}\n\n", "x".repeat(1000)));
    for _ in 0..100 {
        long.frame(&event, std::time::Instant::now());
    }
    record(&recorder, "t-short-2", &[b"data: [DONE]\n\n"], vec![]).await;
    long.finish(end(vec![]));
    recorder.flush().await;
    let mut names = file_names(&dir);
    names.sort();
    assert_eq!(names, ["segment-t-short-1.jsonl", "t-long.jsonl"]);
    let folder = files_under(&dir)[0].parent().expect("folder").to_path_buf();
    let long = tooltap::record::read_file(&folder.join("t-long.jsonl")).expect("readable");
    assert_eq!(long.frames.len(), 100);
    assert!(long.frames.iter().all(|f| f.bytes == event));
    assert_eq!(long.end.expect("end").outcome, Outcome::Complete);
    let segment = read_all_bounded(
        &folder.join("segment-t-short-1.jsonl"),
        u64::MAX,
        &mut Vec::new(),
    );
    let ids: Vec<String> = segment
        .into_iter()
        .map(|r| r.expect("readable").meta.id)
        .collect();
    assert_eq!(ids, ["t-short-1", "t-short-2"]);
}

#[tokio::test]
async fn segments_are_cut_at_their_size_and_pruned_whole_never_the_open_one() {
    let dir = TempDir::new("segments-prune");
    let metrics = Arc::new(Metrics::default());
    let config = RecorderConfig {
        segment_bytes: 2_000,
        max_total_bytes: Some(5_000),
        ..segments_config(&dir)
    };
    let recorder = Recorder::spawn(config, metrics.clone());
    let frames: [&[u8]; 2] = [b"data: {\"choices\":[]}\n\n", b"data: [DONE]\n\n"];
    let mut written = Vec::new();
    for k in 0..40 {
        let id = format!("t-{k:02}");
        record(&recorder, &id, &frames, vec![]).await;
        written.push(id);
    }
    let files = files_under(&dir);
    let size = |f: &std::path::PathBuf| std::fs::metadata(f).expect("meta").len();
    let mut kept: Vec<String> = Vec::new();
    let mut closed_bytes = 0;
    for file in &files {
        assert!(size(file) <= 2_000, "{file:?} is past the segment size");
        let recordings = read_all_bounded(file, u64::MAX, &mut Vec::new());
        let ids: Vec<String> = recordings
            .into_iter()
            .map(|r| r.expect("whole recordings only").meta.id)
            .collect();
        // The open segment (it holds the newest recording) is not counted until it closes.
        if !ids.contains(&"t-39".to_string()) {
            closed_bytes += size(file);
        }
        kept.extend(ids);
    }
    // Pruning went as far as the bound and no further: one more segment (at most 2,000
    // bytes) would have fitted only past it.
    assert!(
        closed_bytes <= 5_000 && closed_bytes > 5_000 - 2_000,
        "{closed_bytes} bytes in closed segments: {files:?}"
    );
    kept.sort();
    // The newest recordings survive, with no gap: whole segments went, oldest first.
    assert!(kept.len() < 40, "{kept:?}");
    assert_eq!(kept, written[40 - kept.len()..].to_vec());
    let pruned: u64 = metrics
        .render()
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "tooltap_limit_hits_total{limit=\"recordings_pruned\",scope=\"recordings\"} ",
            )
        })
        .map_or(0, |n| n.trim().parse().expect("number"));
    assert!(pruned >= 1, "whole segments were pruned");
}

#[tokio::test]
async fn many_open_recordings_never_hold_more_than_the_writers_bound() {
    // 200 streams open at once, each 45 KiB (under the 64 KiB a recording may hold), 9 MB
    // together: past the 8 MiB all held recordings may hold, so some move to files of their
    // own, and every recording is still written whole.
    let dir = TempDir::new("segments-held");
    let metrics = Arc::new(Metrics::default());
    let recorder = Recorder::spawn(segments_config(&dir), metrics.clone());
    let origin = std::time::Instant::now();
    let event = Bytes::from(format!("data: {}\n\n", "y".repeat(4_500)));
    let mut handles: Vec<_> = (0..200)
        .map(|k| {
            let mut handle = begin(&recorder, &format!("t-{k:03}"), &HeaderMap::new(), origin);
            handle.request_body(Some(br#"{"model":"m","stream":true}"#));
            handle.response_head(200, &HeaderMap::new());
            handle
        })
        .collect();
    for _ in 0..10 {
        for handle in &mut handles {
            handle.frame(&event, std::time::Instant::now());
        }
        recorder.flush().await;
    }
    for handle in handles {
        handle.finish(end(vec![]));
    }
    recorder.flush().await;
    let names = file_names(&dir);
    let own_files = names.iter().filter(|n| !n.starts_with("segment-")).count();
    assert!(
        own_files > 0 && own_files < 200,
        "{own_files} of 200 moved to files of their own"
    );
    let mut ids = Vec::new();
    for file in files_under(&dir) {
        for recording in read_all_bounded(&file, u64::MAX, &mut Vec::new()) {
            let recording = recording.expect("readable");
            assert_eq!(recording.frames.len(), 10, "{}", recording.meta.id);
            assert_eq!(recording.end.expect("end").outcome, Outcome::Complete);
            ids.push(recording.meta.id);
        }
    }
    ids.sort();
    let expected: Vec<String> = (0..200).map(|k| format!("t-{k:03}")).collect();
    assert_eq!(ids, expected);
    assert_eq!(failures(&metrics, "recordings"), 0);
    let moved: usize = metrics
        .render()
        .lines()
        .find_map(|l| {
            l.strip_prefix("tooltap_limit_hits_total{limit=\"segment_hold\",scope=\"recordings\"} ")
        })
        .map_or(0, |n| n.trim().parse().expect("number"));
    assert_eq!(
        moved, own_files,
        "each move to a file of its own is counted"
    );
}
