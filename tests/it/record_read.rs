//! The tolerant reader on hand-made files: a crash-cut file reads up to its last whole line, a
//! newer format version is refused with a clear message, and out-of-order or broken frames are
//! errors naming the file and line. A segment (many recordings in one file) reads as all of
//! them, a broken one in its place without hiding the others.

use std::path::PathBuf;

use tooltap::record::read::{count_recordings, parse, parse_all};
use tooltap::record::{ReadError, read_file, read_file_bounded};

const META: &str = r#"{"type":"exchange","v":1,"id":"x1","started":"2026-12-02T12:00:00.120Z","route":"default","upstream":"https://api.openai.com","method":"POST","path":"/v1/chat/completions","request":{"headers":[],"body":"missing"},"response":{"status":200,"headers":[["content-type","text/event-stream"]]},"redacted":[]}"#;
const FRAME0: &str = r#"{"type":"frame","seq":0,"t_us":10,"text":"data: {}\n\n"}"#;
const FRAME1_B64: &str = r#"{"type":"frame","seq":1,"t_us":20,"base64":"/w=="}"#;
const END: &str = r#"{"type":"end","outcome":"complete","t_us":30,"dropped_frames":0,"frames":2,"bytes":11,"completeness":{"state":"complete"},"violations":[]}"#;

fn file(lines: &[&str], tail: &str) -> Vec<u8> {
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(tail);
    text.into_bytes()
}

fn path() -> PathBuf {
    PathBuf::from("rec/x1.jsonl")
}

#[test]
fn a_whole_file_reads_back_byte_exact() {
    let recording = parse(&path(), &file(&[META, FRAME0, FRAME1_B64, END], "")).expect("reads");
    assert_eq!(recording.meta.id, "x1");
    assert_eq!(recording.frames.len(), 2);
    assert_eq!(&recording.frames[1].bytes[..], &[0xff]);
    assert_eq!(recording.body(), b"data: {}\n\n\xff");
    assert!(recording.end.is_some());
}

#[test]
fn a_crash_cut_file_reads_up_to_its_last_whole_line() {
    let cut = file(&[META, FRAME0], r#"{"type":"frame","seq":1,"t_us":2"#);
    let recording = parse(&path(), &cut).expect("tolerated");
    assert_eq!(recording.frames.len(), 1);
    assert!(recording.end.is_none());
    // A broken line that is *not* the unterminated tail is an error, with its line number.
    let broken = file(&[META, "{\"type\":\"fra", FRAME0], "");
    let error = parse(&path(), &broken).expect_err("broken middle line");
    assert!(error.to_string().starts_with("rec/x1.jsonl:2:"), "{error}");
}

#[test]
fn a_future_version_is_refused_clearly() {
    let future_meta = META.replace("\"v\":1", "\"v\":2");
    let error = parse(&path(), &file(&[&future_meta, FRAME0], "")).expect_err("refused");
    assert!(
        matches!(error, ReadError::FutureVersion { found: 2, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("upgrade tooltap"), "{error}");
    // A future version may also change the line's shape so it no longer parses as v1.
    let reshaped = r#"{"type":"exchange","v":9,"who":"new"}"#;
    let error = parse(&path(), &file(&[reshaped], "")).expect_err("refused");
    assert!(
        matches!(error, ReadError::FutureVersion { found: 9, .. }),
        "{error:?}"
    );
}

#[test]
fn out_of_order_frames_and_bad_base64_are_errors_with_line_numbers() {
    let skipped = FRAME1_B64; // seq 1 right after the meta line
    let error = parse(&path(), &file(&[META, skipped], "")).expect_err("gap");
    assert!(
        error
            .to_string()
            .contains(":2: frame seq 1 where 0 was expected"),
        "{error}"
    );
    let bad = r#"{"type":"frame","seq":0,"t_us":1,"base64":"***"}"#;
    let error = parse(&path(), &file(&[META, bad], "")).expect_err("bad base64");
    assert!(error.to_string().contains(":2:"), "{error}");
    let error = parse(&path(), &file(&[META, END, FRAME0], "")).expect_err("after end");
    assert!(error.to_string().contains(":3:"), "{error}");
    let error = read_file(&PathBuf::from("/nonexistent/x.jsonl")).expect_err("missing");
    assert!(
        error.to_string().contains("/nonexistent/x.jsonl"),
        "{error}"
    );
}

#[test]
fn a_json_request_body_reads_the_same_on_the_fast_and_the_general_path() {
    let body = r#"{"json":{"messages":[{"content":"hi","role":"user"}],"model":"m","tools":[]}}"#;
    let fast = META.replace(r#""body":"missing""#, &format!(r#""body":{body}"#));
    // Another key order (`type` not first) is not taken by the fast path.
    let general = format!(
        r#"{{"v":1,{}"#,
        fast.replacen(r#""v":1,"#, "", 1).trim_start_matches('{')
    );
    assert!(!general.starts_with(r#"{"type""#), "{general}");
    let mut bodies = Vec::new();
    for line in [&fast, &general] {
        let recording = parse(&path(), &file(&[line, FRAME0, END], "")).expect("reads");
        let request = recording.meta.request.body.bytes().expect("a body");
        bodies.push(std::str::from_utf8(&request).expect("utf-8").to_owned());
        // Written back, the line is still one line holding the same body.
        let rewritten = serde_json::to_string(&recording.meta).expect("serialises");
        assert!(!rewritten.contains('\n'));
        assert!(rewritten.contains(body), "{rewritten}");
    }
    assert_eq!(
        bodies[0],
        r#"{"messages":[{"content":"hi","role":"user"}],"model":"m","tools":[]}"#
    );
    assert_eq!(bodies[0], bodies[1]);
}

#[test]
fn a_bounded_read_refuses_past_its_bound_and_reuses_its_buffer() {
    let dir = crate::support::TempDir::new("bounded-read");
    let small = dir.join("small.jsonl");
    let whole = file(&[META, FRAME0, FRAME1_B64, END], "");
    std::fs::write(&small, &whole).expect("write");
    let large = dir.join("large.jsonl");
    std::fs::write(&large, vec![b' '; 3 * 1024 * 1024]).expect("write");

    let mut buffer = Vec::new();
    let bound = whole.len() as u64;
    let error = read_file_bounded(&large, bound, &mut buffer).expect_err("too large");
    assert!(matches!(error, ReadError::TooLarge { max_bytes, .. } if max_bytes == bound));
    assert!(
        error.to_string().ends_with(&format!(
            "large.jsonl: larger than {bound} bytes (--max-input-bytes); not read"
        )),
        "{error}"
    );
    // It stopped one byte past the bound instead of reading the file to its end.
    assert_eq!(buffer.len() as u64, bound + 1);

    let read = read_file_bounded(&small, bound, &mut buffer).expect("exactly at the bound");
    let reference = read_file(&small).expect("readable");
    assert_eq!(read.frames, reference.frames);
    assert_eq!(read.meta.id, "x1");
    assert!(read.end.is_some());
    // A file larger than the kept size gives the grown buffer back.
    let error = read_file_bounded(&large, u64::MAX, &mut buffer).expect_err("only spaces");
    assert!(matches!(error, ReadError::Invalid { .. }), "{error}");
    assert_eq!(buffer.capacity(), 0);
}

#[test]
fn a_segment_reads_as_every_recording_with_a_broken_one_in_its_place() {
    let second = META.replace("\"id\":\"x1\"", "\"id\":\"x2\"");
    let third = META.replace("\"id\":\"x1\"", "\"id\":\"x3\"");
    let fourth = META.replace("\"id\":\"x1\"", "\"id\":\"x4\"");
    let segment = file(
        &[
            META, FRAME0, FRAME1_B64, END, // x1: whole
            &second, FRAME1_B64, FRAME0, END, // x2: frames out of order (lines 6, 7)
            &third, FRAME0, FRAME1_B64, END, // x3: whole
            &fourth, FRAME0,
        ],
        r#"{"type":"frame","seq":1,"t_"#, // x4: cut by a crash
    );
    let read = parse_all(&path(), &segment);
    assert_eq!(read.len(), 4, "{read:?}");
    // Counted without parsing (what `report` does past --max-exchanges), the same four; a
    // file that cannot be read counts as one.
    let on_disk = crate::support::temp::temp_file("segment.jsonl");
    std::fs::write(&*on_disk, &segment).expect("write");
    let mut buffer = Vec::new();
    assert_eq!(count_recordings(&on_disk, u64::MAX, &mut buffer), 4);
    let missing = PathBuf::from("/nonexistent/segment.jsonl");
    assert_eq!(count_recordings(&missing, u64::MAX, &mut buffer), 1);
    let x1 = read[0].as_ref().expect("x1 reads");
    assert_eq!((x1.meta.id.as_str(), x1.frames.len()), ("x1", 2));
    assert!(x1.end.is_some());
    let error = read[1].as_ref().expect_err("x2 is broken");
    assert!(
        error
            .to_string()
            .starts_with("rec/x1.jsonl:6: frame seq 1 where 0"),
        "{error}"
    );
    let x3 = read[2].as_ref().expect("x3 reads after the broken one");
    assert_eq!(
        (x3.meta.id.as_str(), x3.body()),
        ("x3", b"data: {}\n\n\xff".to_vec())
    );
    let x4 = read[3]
        .as_ref()
        .expect("x4 reads up to its last whole line");
    assert_eq!((x4.meta.id.as_str(), x4.frames.len()), ("x4", 1));
    assert!(x4.end.is_none());
    // Read as one recording, a segment is an error at its second exchange line.
    let error = parse(&path(), &segment).expect_err("one recording expected");
    assert!(
        error.to_string().contains(":5: a second exchange line"),
        "{error}"
    );
    // A recording with no end line before the next one (tooltap stopped mid-append, then
    // appended again) is read as a file that lost its end; lines before any exchange line are
    // an error, and the reading goes on at the next exchange line; an empty file is one error.
    let unended = parse_all(&path(), &file(&[META, FRAME0, &second, END], ""));
    let ids: Vec<(String, bool)> = unended
        .iter()
        .map(|r| {
            let r = r.as_ref().expect("readable");
            (r.meta.id.clone(), r.end.is_some())
        })
        .collect();
    assert_eq!(ids, [("x1".to_string(), false), ("x2".to_string(), true)]);
    let headless = parse_all(&path(), &file(&[FRAME0, META, END], ""));
    assert_eq!(headless.len(), 2, "{headless:?}");
    let error = headless[0].as_ref().expect_err("no exchange line first");
    assert!(
        error.to_string().contains(":1: the first line must be"),
        "{error}"
    );
    assert_eq!(headless[1].as_ref().expect("x1").meta.id, "x1");
    assert_eq!(parse_all(&path(), b"").len(), 1);
    assert!(parse_all(&path(), b"")[0].is_err());
}

/// A segment with no whole line (a process killed as it began it, or an older tooltap's empty
/// segment) holds no recording, and does not refuse the folder as an error would; any other
/// empty file is still an error, and a segment whose last recording was cut keeps the others.
#[test]
fn a_segment_with_no_whole_line_holds_no_recording_and_other_empty_files_are_errors() {
    let segment = PathBuf::from("rec/default/2026-12-02/segment-x1.jsonl");
    assert!(parse_all(&segment, b"").is_empty());
    assert!(parse_all(&segment, &META.as_bytes()[..40]).is_empty());
    let plain = PathBuf::from("rec/default/2026-12-02/x1.jsonl");
    let read = parse_all(&plain, b"");
    assert_eq!(read.len(), 1);
    assert!(read[0].is_err(), "an empty recording file is an error");
    let cut = file(&[META, FRAME0, END], &META[..40]);
    let read = parse_all(&segment, &cut);
    assert_eq!(read.len(), 1, "the whole recording, the cut one left out");
    assert!(
        read[0]
            .as_ref()
            .is_ok_and(|recording| recording.end.is_some())
    );
}
