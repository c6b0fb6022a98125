//! The recorder against a real filesystem: the documented format read back with
//! `record::read`, atomic finish, modes, limits, pruning, permissions, redaction, and an
//! unwritable folder that leaves the caller unaffected.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::support::TempDir;
use crate::support::temp::files_under;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use tooltap::engine::{Completeness, RuleId, Severity, Stage, Violation};
use tooltap::metrics::Metrics;
use tooltap::record::{
    Outcome, RecordMode, Recorder, RecorderConfig, RecordingEnd, RecordingHandle, RecordingStart,
    RedactionConfig, read_file,
};

const SECRET: &str = "sk-live-PLANTED-7f3a9c";

fn config(dir: &Path, mode: RecordMode) -> RecorderConfig {
    RecorderConfig {
        dir: dir.to_path_buf(),
        mode,
        ..RecorderConfig::default()
    }
}

fn begin(recorder: &Recorder, id: &str, headers: &HeaderMap, origin: Instant) -> RecordingHandle {
    recorder
        .begin(RecordingStart {
            id,
            started: SystemTime::now(),
            origin,
            route: "default",
            upstream: "http://127.0.0.1:9/openai",
            method: "POST",
            path: "/v1/chat/completions",
            dialect: tooltap::engine::Dialect::Chat,
            query: None,
            request_headers: headers,
        })
        .expect("recording mode is not off")
}

fn violation() -> Violation {
    Violation {
        rule: RuleId::ToolCallIdMissing,
        severity: Severity::Error,
        stage: Stage::Complete,
        choice: Some(0),
        tool_call: Some(0),
        path: "/choices/0/message/tool_calls/0/id".into(),
        seq: Some(0),
        schema_path: None,
        detail: "no id".into(),
    }
}

fn end(violations: Vec<Violation>) -> RecordingEnd {
    RecordingEnd {
        outcome: Outcome::Complete,
        ended: Instant::now(),
        dropped_frames: 0,
        completeness: Completeness::Complete,
        violations,
        enforced: None,
    }
}

/// Records one exchange of `frames` and finishes it.
async fn record(recorder: &Recorder, id: &str, frames: &[&[u8]], violations: Vec<Violation>) {
    let origin = Instant::now();
    let mut handle = begin(recorder, id, &HeaderMap::new(), origin);
    handle.request_body(Some(br#"{"model":"m","stream":true}"#));
    handle.response_head(200, &HeaderMap::new());
    for frame in frames {
        handle.frame(&Bytes::copy_from_slice(frame), Instant::now());
    }
    handle.finish(end(violations));
    recorder.flush().await;
}

fn failures(metrics: &Metrics, target: &str) -> u64 {
    let needle = format!("tooltap_recording_failures_total{{target=\"{target}\"}} ");
    metrics
        .render()
        .lines()
        .find_map(|line| line.strip_prefix(needle.as_str()))
        .map_or(0, |n| n.trim().parse().expect("a number"))
}

#[tokio::test]
async fn writes_the_documented_format_with_secrets_redacted() {
    let dir = TempDir::new("format");
    let mut cfg = config(&dir, RecordMode::All);
    cfg.redact = RedactionConfig {
        headers: vec!["x-custom-secret".into()],
        body_pointers: vec!["/user".into()],
        ..RedactionConfig::default()
    };
    let recorder = Recorder::spawn(cfg, Arc::new(Metrics::default()));
    let mut request_headers = HeaderMap::new();
    request_headers.insert("content-type", HeaderValue::from_static("application/json"));
    let bearer = format!("Bearer {SECRET}");
    request_headers.insert("authorization", bearer.parse().expect("header"));
    request_headers.insert("x-custom-secret", SECRET.parse().expect("header"));
    let origin = Instant::now();
    let query = format!("api-version=1&key={SECRET}");
    let upstream = format!("https://user:{SECRET}@api.example.com/openai");
    // This second, 120,417,389 ns into it: `started` keeps it to the microsecond.
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after the epoch");
    let started = SystemTime::UNIX_EPOCH + Duration::new(now.as_secs(), 120_417_389);
    let mut handle = recorder
        .begin(RecordingStart {
            id: "tx-1",
            started,
            origin,
            route: "my route",
            upstream: &upstream,
            method: "POST",
            path: "/v1/chat/completions",
            dialect: tooltap::engine::Dialect::Chat,
            query: Some(&query),
            request_headers: &request_headers,
        })
        .expect("on");
    let body = format!(r#"{{"model":"m","stream":true,"user":"{SECRET}","messages":[]}}"#);
    handle.request_body(Some(body.as_bytes()));
    let mut response_headers = HeaderMap::new();
    response_headers.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    response_headers.insert("set-cookie", format!("s={SECRET}").parse().expect("header"));
    handle.response_head(200, &response_headers);
    let frames: Vec<Bytes> = vec![
        Bytes::from_static(b"data: {\"choices\":[]}\n\n"),
        Bytes::from_static(&[0xff, 0xfe, b'd', 0x00, 0xc3]), // not UTF-8
        Bytes::from_static(b"data: [DONE]\n\n"),
    ];
    for (i, frame) in frames.iter().enumerate() {
        handle.frame(frame, origin + Duration::from_millis(10 * (i as u64 + 1)));
    }
    handle.finish(end(vec![violation()]));
    recorder.flush().await;

    let files = files_under(&dir);
    assert_eq!(files.len(), 1, "one finished file, no temp file: {files:?}");
    let path = &files[0];
    let relative = path.strip_prefix(&dir).expect("under dir");
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    assert_eq!(parts[0], "my_route");
    assert_eq!(parts[1].len(), 10, "a yyyy-mm-dd folder: {parts:?}");
    assert_eq!(parts[2], "tx-1.jsonl");

    let recording = read_file(path).expect("reads back");
    let meta = &recording.meta;
    assert_eq!(meta.id, "tx-1");
    assert!(meta.started.ends_with(".120417Z"), "{}", meta.started);
    assert_eq!(meta.upstream, "https://api.example.com/openai");
    assert_eq!(meta.query.as_deref(), Some("api-version=1&key=[REDACTED]"));
    assert_eq!(meta.response.status, 200);
    assert!(
        meta.request
            .headers
            .contains(&("authorization".into(), "[REDACTED]".into()))
    );
    let Some(body) = meta.request.body.to_value() else {
        panic!("JSON body expected: {:?}", meta.request.body);
    };
    assert_eq!(body["user"], "[REDACTED]");
    assert_eq!(body["model"], "m");
    for entry in [
        "header:authorization",
        "header:x-custom-secret",
        "header:set-cookie",
        "body:/user",
        "query:key",
        "upstream:userinfo",
    ] {
        assert!(
            meta.redacted.iter().any(|r| r == entry),
            "{entry} in {:?}",
            meta.redacted
        );
    }
    let got: Vec<&Bytes> = recording.frames.iter().map(|f| &f.bytes).collect();
    assert_eq!(got, frames.iter().collect::<Vec<_>>(), "byte-exact frames");
    assert_eq!(recording.frames[1].t_us, 20_000);
    let end = recording.end.expect("end line");
    assert_eq!(end.outcome, Outcome::Complete);
    assert_eq!(end.frames, 3);
    assert_eq!(
        end.bytes,
        frames.iter().map(|f| f.len() as u64).sum::<u64>()
    );
    assert_eq!(end.violations, vec![violation()]);

    let raw = std::fs::read(path).expect("raw");
    assert!(
        !raw.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
        "the planted secret is on disk"
    );
    assert!(String::from_utf8_lossy(&raw).contains("\"base64\":"));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(path), 0o600);
        assert_eq!(mode(path.parent().expect("date dir")), 0o700);
        assert_eq!(mode(&dir.join("my_route")), 0o700);
    }
}

mod limits;
mod segments;

#[tokio::test]
async fn in_violations_mode_a_clean_exchange_never_touches_the_disk() {
    let dir = TempDir::new("violations-hold");
    let metrics = Arc::new(Metrics::default());
    let recorder = Recorder::spawn(config(&dir, RecordMode::Violations), metrics);
    let origin = Instant::now();
    let mut handle = begin(&recorder, "t-held-1", &HeaderMap::new(), origin);
    handle.request_body(Some(br#"{"model":"m","stream":true}"#));
    handle.response_head(200, &HeaderMap::new());
    handle.frame(&Bytes::from_static(b"data: [DONE]\n\n"), Instant::now());
    recorder.flush().await;
    // Mid-exchange, nothing exists yet: no folder, no temporary file.
    assert!(files_under(&dir).is_empty(), "{:?}", files_under(&dir));
    handle.finish(end(Vec::new()));
    recorder.flush().await;
    assert!(files_under(&dir).is_empty(), "{:?}", files_under(&dir));
    assert!(
        std::fs::read_dir(&dir).map_or(0, |d| d.count()) == 0,
        "not even a route folder for a clean exchange"
    );
    // The same exchange with a violation is written whole.
    record(
        &recorder,
        "t-held-2",
        &[b"data: [DONE]\n\n"],
        vec![violation()],
    )
    .await;
    let files = files_under(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let recording = tooltap::record::read_file(&files[0]).expect("readable");
    assert_eq!(recording.frames.len(), 1);
    assert!(recording.end.is_some());
}

#[tokio::test]
async fn a_json_body_with_nothing_to_redact_is_recorded_as_sent_and_others_compact() {
    let dir = TempDir::new("body-as-sent");
    let metrics = Arc::new(Metrics::default());
    let recorder = Recorder::spawn(config(&dir, RecordMode::All), metrics);
    let as_sent = r#"{"stream":false, "model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let cases = [
        // Clean and on one line: byte for byte, key order and spaces kept.
        ("t-body-1", as_sent.to_owned(), as_sent.to_owned()),
        // Several lines: a recording line cannot hold them, so compact (keys sorted).
        (
            "t-body-2",
            "{\n  \"stream\": false,\n  \"model\": \"m\"\n}".to_owned(),
            r#"{"model":"m","stream":false}"#.to_owned(),
        ),
        // A credential-named field: parsed, redacted, compact.
        (
            "t-body-3",
            format!(r#"{{"model":"m","api_key":"{SECRET}"}}"#),
            r#"{"api_key":"[REDACTED]","model":"m"}"#.to_owned(),
        ),
    ];
    for (id, body, _) in &cases {
        let mut handle = begin(&recorder, id, &HeaderMap::new(), Instant::now());
        handle.request_body(Some(body.as_bytes()));
        handle.response_head(200, &HeaderMap::new());
        handle.finish(end(Vec::new()));
    }
    recorder.flush().await;
    let files = files_under(&dir);
    assert_eq!(files.len(), cases.len(), "{files:?}");
    for (id, _, recorded) in &cases {
        let path = files
            .iter()
            .find(|p| p.ends_with(format!("{id}.jsonl")))
            .expect("its file");
        let text = std::fs::read_to_string(path).expect("readable");
        assert!(!text.contains(SECRET), "{id}: the secret is not on disk");
        let recording = read_file(path).expect("reads back");
        let body = recording.meta.request.body.bytes().expect("a body");
        assert_eq!(
            std::str::from_utf8(&body).expect("utf-8"),
            *recorded,
            "{id}"
        );
    }
}
