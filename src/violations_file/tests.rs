//! Tests of the JSONL sink: appends whole lines, never truncates, creates owner-only files, and
//! survives an unwritable path by counting the failure.

use super::*;

fn temp_dir(name: &str) -> crate::test_dir::TestDir {
    crate::test_dir::TestDir::new(&format!("sink-{name}"))
}

#[tokio::test]
async fn appends_lines_and_never_rewrites() {
    let dir = temp_dir("append");
    let path = dir.join("nested/violations.jsonl");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, "{\"old\":true}\n").expect("seed line");
    let metrics = Arc::new(Metrics::default());
    let sink = ViolationsFile::spawn(path.clone(), "violations", metrics.clone());
    sink.append(vec!["{\"a\":1}".into(), "{\"b\":2}".into()]);
    sink.append(vec!["{\"c\":3}".into()]);
    sink.flush().await;
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text, "{\"old\":true}\n{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    assert!(
        !metrics
            .render()
            .contains("tooltap_recording_failures_total{")
    );
}

#[cfg(unix)]
#[tokio::test]
async fn new_files_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("perm");
    let path = dir.join("v.jsonl");
    let sink = ViolationsFile::spawn(path.clone(), "violations", Arc::new(Metrics::default()));
    sink.append(vec!["{}".into()]);
    sink.flush().await;
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn an_unwritable_path_is_counted_not_fatal() {
    let dir = temp_dir("unwritable");
    // A directory where the file should be: every open fails, whatever the user's privileges.
    let path = dir.join("is-a-dir");
    std::fs::create_dir_all(&path).expect("mkdir");
    let metrics = Arc::new(Metrics::default());
    let sink = ViolationsFile::spawn(path.clone(), "violations", metrics.clone());
    sink.append(vec!["{}".into()]);
    sink.append(vec!["{}".into()]);
    sink.flush().await;
    assert!(
        metrics
            .render()
            .contains("tooltap_recording_failures_total{target=\"violations\"} 2")
    );
    // Once the path becomes writable, lines are written again.
    std::fs::remove_dir(&path).expect("rmdir");
    sink.append(vec!["{\"back\":true}".into()]);
    sink.flush().await;
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "{\"back\":true}\n"
    );
}

fn lines_in(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn the_file_rotates_by_size_and_keeps_n_files() {
    let dir = temp_dir("rotate");
    let path = dir.join("violations.jsonl");
    let metrics = Arc::new(Metrics::default());
    let rotation = Rotation {
        max_bytes: 100,
        keep: 2,
    };
    let sink = ViolationsFile::spawn_with(path.clone(), "violations", metrics.clone(), rotation);
    for n in 0..40 {
        // 20 bytes with the newline: five lines per file.
        sink.append(vec![format!("{{\"n\":{n:>12}}}")]);
    }
    sink.flush().await;
    let rotated = |n: usize| dir.join(format!("violations.jsonl.{n}"));
    for file in [path.clone(), rotated(1), rotated(2)] {
        let size = std::fs::metadata(&file).expect("kept").len();
        assert!(size <= 100, "{} holds {size} bytes", file.display());
    }
    assert!(!rotated(3).exists(), "more than `keep` rotated files");
    let newest = lines_in(&path);
    assert_eq!(
        newest.last().map(String::as_str),
        Some("{\"n\":          39}")
    );
    let previous = lines_in(&rotated(1));
    assert_eq!(previous.len(), 5);
    assert_eq!(previous[4], "{\"n\":          34}");
    assert!(
        metrics.render().contains(
            "tooltap_limit_hits_total{limit=\"violations_rotated\",scope=\"violations\"} 7"
        )
    );
}

#[tokio::test]
async fn a_file_deleted_or_moved_under_the_writer_is_reopened_not_written_blind() {
    let dir = temp_dir("reopen");
    let path = dir.join("violations.jsonl");
    let metrics = Arc::new(Metrics::default());
    let sink = ViolationsFile::spawn(path.clone(), "violations", metrics.clone());
    sink.append(vec!["{\"first\":1}".into()]);
    sink.flush().await;
    std::fs::remove_file(&path).expect("delete under the writer");
    sink.append(vec!["{\"second\":2}".into()]);
    sink.flush().await;
    assert_eq!(lines_in(&path), ["{\"second\":2}"]);
    // logrotate-style: moved away, the next line starts a new file at the path.
    std::fs::rename(&path, dir.join("moved.jsonl")).expect("move");
    sink.append(vec!["{\"third\":3}".into()]);
    sink.flush().await;
    assert_eq!(lines_in(&path), ["{\"third\":3}"]);
    assert_eq!(lines_in(&dir.join("moved.jsonl")), ["{\"second\":2}"]);
    assert!(
        metrics
            .render()
            .contains("tooltap_limit_hits_total{limit=\"file_reopened\",scope=\"violations\"} 2")
    );
}

/// A full disk at the sink's seam (an injected `ENOSPC` after part of a batch was written): the
/// part is cut back, the next batch is written whole after the last whole line, and every line
/// in the file parses; a file that already ends in a partial line (left by a crash or an older
/// version) gets a newline before the next batch, so no line is glued to it.
#[tokio::test]
async fn a_write_cut_by_a_full_disk_never_leaves_a_glued_or_partial_line() {
    let dir = temp_dir("enospc");
    let path = dir.join("v.jsonl");
    let metrics = Arc::new(Metrics::default());
    let sink = ViolationsFile::spawn(path.clone(), "violations", metrics.clone());
    sink.append(vec!["{\"a\":1}".into()]);
    sink.flush().await;
    for cut in [1, 9, 14] {
        *sink.fail_after.lock().expect("lock") = Some(cut);
        sink.append(vec!["{\"lost\":1}".into(), "{\"lost\":2}".into()]);
        sink.flush().await;
    }
    sink.append(vec!["{\"b\":2}".into()]);
    sink.flush().await;
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        text, "{\"a\":1}\n{\"b\":2}\n",
        "cut back to the last whole line"
    );
    let rendered = metrics.render();
    assert!(
        rendered
            .contains("tooltap_limit_hits_total{limit=\"partial_line\",scope=\"violations\"} 3"),
        "{rendered}"
    );
    assert!(rendered.contains("tooltap_recording_failures_total{target=\"violations\"} 3"));

    let torn = dir.join("torn.jsonl");
    std::fs::write(&torn, "{\"old\":1}\n{\"cut by a cr").expect("write");
    let sink = ViolationsFile::spawn(torn.clone(), "violations", metrics.clone());
    sink.append(vec!["{\"c\":3}".into()]);
    sink.flush().await;
    let text = std::fs::read_to_string(&torn).expect("read");
    assert_eq!(text, "{\"old\":1}\n{\"cut by a cr\n{\"c\":3}\n");
}
