//! The recorder's modes and limits: violations-only keeping, the per-recording size cap, a
//! full queue, pruning, an unwritable folder, and files left by a crash or a dropped handle.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::HeaderMap;
use tooltap::metrics::Metrics;
use tooltap::record::{
    FAILURE_TARGET, Outcome, QUEUE_FULL_TARGET, RecordMode, Recorder, read_file,
};

use super::{begin, config, failures, files_under, record, violation};
use crate::support::TempDir;

#[tokio::test]
async fn violations_mode_keeps_only_violating_exchanges() {
    let dir = TempDir::new("violations");
    let recorder = Recorder::spawn(config(&dir, RecordMode::Violations), Arc::default());
    record(&recorder, "clean", &[b"data: [DONE]\n\n"], vec![]).await;
    record(&recorder, "bad", &[b"data: [DONE]\n\n"], vec![violation()]).await;
    let names: Vec<String> = files_under(&dir)
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        vec!["bad.jsonl"],
        "the clean temp file is deleted too"
    );
}

#[tokio::test]
async fn off_mode_records_nothing() {
    let dir = TempDir::new("off");
    let recorder = Recorder::spawn(config(&dir, RecordMode::Off), Arc::default());
    let headers = HeaderMap::new();
    let start = tooltap::record::RecordingStart {
        id: "x",
        started: SystemTime::now(),
        origin: Instant::now(),
        route: "r",
        upstream: "http://u",
        method: "GET",
        path: "/",
        dialect: tooltap::engine::Dialect::Chat,
        query: None,
        request_headers: &headers,
    };
    assert!(recorder.begin(start).is_none());
}

#[tokio::test]
async fn the_size_limit_truncates_a_recording() {
    let dir = TempDir::new("truncate");
    let mut cfg = config(&dir, RecordMode::All);
    cfg.max_bytes_per_recording = 100; // the 27-byte request body counts too
    let recorder = Recorder::spawn(cfg, Arc::default());
    let frame = [b'x'; 30];
    record(&recorder, "big", &[&frame, &frame, &frame, &frame], vec![]).await;
    let files = files_under(&dir);
    let recording = read_file(&files[0]).expect("reads");
    assert_eq!(
        recording.frames.len(),
        2,
        "27 + 2×30 fit in 100, a third does not"
    );
    let end = recording.end.expect("end");
    assert_eq!(end.outcome, Outcome::FramesLost);
    assert_eq!((end.frames, end.bytes), (2, 60));
}

#[tokio::test]
async fn a_full_queue_makes_the_recording_lossy_and_is_counted() {
    let dir = TempDir::new("queue");
    let mut cfg = config(&dir, RecordMode::All);
    cfg.max_queued_bytes = 200; // less than one frame message: the first frame is refused
    let metrics = Arc::new(Metrics::default());
    let recorder = Recorder::spawn(cfg, metrics.clone());
    record(&recorder, "lossy", &[&[b'y'; 100], &[b'z'; 100]], vec![]).await;
    let recording = read_file(&files_under(&dir)[0]).expect("reads");
    assert!(recording.frames.is_empty());
    let end = recording.end.expect("end line even so");
    assert_eq!(end.outcome, Outcome::Lossy);
    assert_eq!(
        end.dropped_frames, 1,
        "the refused frame; later ones are not offered"
    );
    assert_eq!(failures(&metrics, QUEUE_FULL_TARGET), 1);
}

#[tokio::test]
async fn pruning_deletes_the_oldest_recordings_first() {
    let dir = TempDir::new("prune");
    // A recording left by an earlier run, older than anything written now.
    let old_folder = dir.join("default").join("2001-01-01");
    std::fs::create_dir_all(&old_folder).expect("mkdir");
    let old = old_folder.join("old.jsonl");
    std::fs::write(&old, "{}\n").expect("seed");
    let file = std::fs::File::options()
        .write(true)
        .open(&old)
        .expect("open");
    file.set_modified(SystemTime::now() - Duration::from_secs(86_400 * 365))
        .expect("set mtime");
    drop(file);
    let mut cfg = config(&dir, RecordMode::All);
    cfg.max_files = Some(2);
    let recorder = Recorder::spawn(cfg, Arc::default());
    for id in ["a", "b", "c"] {
        record(&recorder, id, &[b"data: [DONE]\n\n"], vec![]).await;
    }
    let names: Vec<String> = files_under(&dir)
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["b.jsonl", "c.jsonl"]);
    assert!(!old_folder.exists(), "an emptied date folder is removed");

    let dir = TempDir::new("prune-bytes");
    let mut cfg = config(&dir, RecordMode::All);
    cfg.max_total_bytes = Some(1500); // each recording is a little over 500 bytes
    let recorder = Recorder::spawn(cfg, Arc::default());
    for id in ["a", "b", "c", "d"] {
        record(&recorder, id, &[&[b'q'; 200]], vec![]).await;
    }
    let files = files_under(&dir);
    let total: u64 = files
        .iter()
        .map(|p| p.metadata().expect("meta").len())
        .sum();
    assert!(total <= 1500, "{total} bytes kept");
    assert!(files.iter().any(|p| p.ends_with("d.jsonl")));
    assert!(!files.iter().any(|p| p.ends_with("a.jsonl")));
}

/// At the file limit the oldest recording's file is taken over by the new recording (its inode
/// reused, see `record/disk.rs`): the new file must hold exactly the new recording (no tail of
/// the longer old one), and a file someone hard-linked elsewhere must be left as it was.
#[cfg(unix)]
#[tokio::test]
async fn at_the_file_limit_the_oldest_file_is_reused_whole_and_a_hard_linked_one_never() {
    use std::os::unix::fs::MetadataExt;
    let dir = TempDir::new("prune-reuse");
    let mut cfg = config(&dir, RecordMode::All);
    cfg.max_files = Some(1);
    let recorder = Recorder::spawn(cfg, Arc::default());
    let long: &[u8] = &[b'L'; 4000];
    record(&recorder, "first", &[long, long], vec![]).await;
    let first = files_under(&dir).remove(0);
    let first_inode = first.metadata().expect("meta").ino();
    let first_len = first.metadata().expect("meta").len();

    record(&recorder, "second", &[b"data: [DONE]\n\n"], vec![]).await;
    let files = files_under(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let second = &files[0];
    assert!(second.ends_with("second.jsonl"), "{second:?}");
    let meta = second.metadata().expect("meta");
    assert_eq!(meta.ino(), first_inode, "the pruned file was reused");
    assert!(meta.len() < first_len, "cut to the new recording's length");
    let recording = read_file(second).expect("the reused file reads as a recording");
    assert_eq!(recording.frames.len(), 1);
    assert_eq!(recording.end.expect("end").frames, 1);
    let text = std::fs::read_to_string(second).expect("read");
    assert!(
        !text.contains("LLLL"),
        "no byte of the old recording is left"
    );
    assert_eq!(text.lines().count(), 3, "exchange, frame, end");

    // Someone keeps the current recording under another name: it must survive the pruning.
    let keep = dir.join("kept-by-hand.json");
    std::fs::hard_link(second, &keep).expect("link");
    let kept_text = std::fs::read(&keep).expect("read");
    record(&recorder, "third", &[long], vec![]).await;
    assert_eq!(
        std::fs::read(&keep).expect("read"),
        kept_text,
        "a hard-linked file is never reused"
    );
    let files = files_under(&dir);
    assert!(
        files.iter().any(|p| p.ends_with("third.jsonl")),
        "{files:?}"
    );
    assert!(
        !files.iter().any(|p| p.ends_with("second.jsonl")),
        "{files:?}"
    );
    let third = files
        .iter()
        .find(|p| p.ends_with("third.jsonl"))
        .expect("third");
    assert_ne!(
        third.metadata().expect("meta").ino(),
        first_inode,
        "a new file instead"
    );
    assert_eq!(read_file(third).expect("reads").frames.len(), 1);
}

#[tokio::test]
async fn pruning_never_touches_a_violations_file_or_anything_outside_the_layout() {
    let dir = TempDir::new("prune-spares");
    // The old default layout put the violations file at the top of the recordings folder,
    // where pruning with max_files = 100 deleted it after ~180 violations.
    let violations = dir.join("violations.jsonl");
    std::fs::write(&violations, "{\"rule\":\"x\"}\n").expect("seed");
    let rotated = dir.join("violations.jsonl.1");
    std::fs::write(&rotated, "{\"rule\":\"y\"}\n").expect("seed");
    let notes = dir.join("default").join("notes.jsonl");
    std::fs::create_dir_all(notes.parent().expect("parent")).expect("mkdir");
    std::fs::write(&notes, "{}\n").expect("seed");
    let metrics = Arc::new(tooltap::metrics::Metrics::default());
    let mut cfg = config(&dir, RecordMode::All);
    cfg.max_files = Some(1);
    let recorder = Recorder::spawn(cfg, metrics.clone());
    for id in ["a", "b", "c"] {
        record(&recorder, id, &[b"data: [DONE]\n\n"], vec![]).await;
    }
    for kept in [&violations, &rotated, &notes] {
        assert!(kept.exists(), "{} was pruned", kept.display());
    }
    assert_eq!(
        std::fs::read_to_string(&violations).expect("read"),
        "{\"rule\":\"x\"}\n"
    );
    let recordings: Vec<_> = files_under(&dir)
        .into_iter()
        .filter(|p| p.components().count() - dir.components().count() == 3)
        .collect();
    assert_eq!(recordings.len(), 1, "{recordings:?}");
    assert!(
        metrics.render().contains(
            "tooltap_limit_hits_total{limit=\"recordings_pruned\",scope=\"recordings\"} 2"
        )
    );
}

#[tokio::test]
async fn an_unwritable_folder_leaves_the_caller_unaffected_and_is_counted() {
    let dir = TempDir::new("unwritable");
    // A regular file where the recordings folder should be: every create fails, even as root.
    let blocked = dir.join("recordings");
    std::fs::write(&blocked, "not a folder").expect("file");
    let metrics = Arc::new(Metrics::default());
    let recorder = Recorder::spawn(config(&blocked, RecordMode::All), metrics.clone());
    let started = Instant::now();
    let frame: &[u8] = &[b'f'; 1000];
    for id in ["one", "two"] {
        record(&recorder, id, &[frame; 50], vec![violation()]).await;
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        failures(&metrics, FAILURE_TARGET),
        2,
        "one failure per recording"
    );
    assert_eq!(
        std::fs::read_to_string(&blocked).expect("intact"),
        "not a folder"
    );
}

#[tokio::test]
async fn a_crash_leaves_only_a_hidden_temp_file_and_a_dropped_handle_ends_truncated() {
    let dir = TempDir::new("crash");
    let recorder = Recorder::spawn(config(&dir, RecordMode::All), Arc::default());
    let origin = Instant::now();
    let mut open = begin(&recorder, "midway", &HeaderMap::new(), origin);
    open.response_head(200, &HeaderMap::new());
    open.frame(&Bytes::from_static(b"data: {}\n\n"), Instant::now());
    recorder.flush().await;
    let files = files_under(&dir);
    assert_eq!(files.len(), 1);
    let name = files[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    // Hidden, and unguessable: the id, then a random part drawn once per process.
    assert!(
        name.starts_with(".midway~") && name.ends_with(".jsonl.tmp"),
        "{name}"
    );
    let partial = read_file(&files[0]).expect("a temp file is readable up to its last line");
    assert_eq!(partial.frames.len(), 1);
    assert!(partial.end.is_none());

    drop(open);
    recorder.flush().await;
    let files = files_under(&dir);
    assert_eq!(files.len(), 1);
    assert!(files[0].ends_with("midway.jsonl"));
    let end = read_file(&files[0]).expect("reads").end.expect("end");
    assert_eq!(end.outcome, Outcome::FramesLost);
}
