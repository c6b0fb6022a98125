//! `tooltap check` driven as a library function (`check::run_with_progress`) over real files:
//! the fixture corpus recorded with the real recorder gives exactly the engine's expected
//! violations (with `seq`), captures made elsewhere too, exit codes 0/1/2, JUnit that a strict
//! XML parser accepts with the right failure count, and temp files skipped.

use crate::engine_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::support::TempDir;
use bytes::Bytes;
use clap::Parser;
use engine_support::{Fixture, load_all, natural_frames, read_expected};
use http::{HeaderMap, HeaderValue};
use serde_json::Value;
use tooltap::check::{self, CheckArgs};
use tooltap::cli::{Cli, Command};
use tooltap::engine::{BodyEnd, EngineConfig, Exchange, RequestParts, SchemaCache};
use tooltap::metrics::Metrics;
use tooltap::record::{
    Outcome, RecordMode, Recorder, RecorderConfig, RecordingEnd, RecordingStart,
};

pub fn args(argv: &[&str]) -> CheckArgs {
    let full = ["tooltap", "check"].iter().chain(argv.iter());
    match Cli::try_parse_from(full).expect("parses").command {
        Command::Check(args) => args,
        other => panic!("check expected, got {other:?}"),
    }
}

/// Runs the check; returns (exit code, stdout, stderr).
pub fn run(argv: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = check::run_with_progress(&args(argv), &mut out, &mut err, false);
    let text = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8 output");
    (code, text(out), text(err))
}

/// Records every fixture with the real recorder (mode `all`), frames split as the corpus
/// expects, live violations computed by the engine as the proxy would. Returns the folder.
pub async fn record_corpus(name: &str) -> (TempDir, Vec<Fixture>) {
    let dir = TempDir::new(name);
    let config = RecorderConfig {
        dir: dir.to_path_buf(),
        mode: RecordMode::All,
        ..RecorderConfig::default()
    };
    let recorder = Recorder::spawn(config, Arc::new(Metrics::default()));
    let fixtures = load_all();
    let engine = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    for fixture in &fixtures {
        let origin = Instant::now();
        let mut request_headers = HeaderMap::new();
        request_headers.insert("authorization", HeaderValue::from_static("Bearer sk-x"));
        // The path and the query are recorded apart (a Gemini case's query says its framing).
        let target = match fixture.path().split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (fixture.path(), None),
        };
        let mut handle = recorder
            .begin(RecordingStart {
                id: &fixture.name,
                started: SystemTime::now(),
                origin,
                route: "fixtures",
                upstream: "http://127.0.0.1:9",
                method: "POST",
                path: target.0,
                dialect: tooltap::engine::Dialect::for_path(fixture.path()),
                query: target.1,
                request_headers: &request_headers,
            })
            .expect("on");
        handle.request_body(Some(&fixture.request));
        let mut headers = HeaderMap::new();
        if let Some(ct) = &fixture.head.content_type {
            headers.insert("content-type", ct.parse().expect("header"));
        }
        if let Some(ce) = &fixture.head.content_encoding {
            headers.insert("content-encoding", ce.parse().expect("header"));
        }
        handle.response_head(fixture.head.status, &headers);
        let request = RequestParts {
            body: &fixture.request,
            path: Some(fixture.path()),
            ..RequestParts::default()
        };
        let mut exchange = Exchange::start(&engine, &cache, fixture.dialect, request);
        exchange.response_head(fixture.head.clone());
        for frame in natural_frames(fixture) {
            exchange.feed(frame);
            handle.frame(&Bytes::copy_from_slice(frame), Instant::now());
        }
        let report = exchange.finish(BodyEnd::Complete);
        handle.finish(RecordingEnd {
            outcome: Outcome::Complete,
            ended: Instant::now(),
            dropped_frames: 0,
            completeness: report.completeness,
            violations: report.violations,
            enforced: None,
        });
    }
    recorder.flush().await;
    (dir, fixtures)
}

/// A violation without its `detail`, optionally without `seq`.
fn comparable(violation: &Value, keep_seq: bool) -> Value {
    let mut value = violation.clone();
    let object = value.as_object_mut().expect("object");
    object.remove("detail");
    if !keep_seq {
        object.remove("seq");
    }
    value
}

#[tokio::test]
async fn the_recorded_fixture_corpus_gives_the_expected_violations() {
    let (dir, fixtures) = record_corpus("corpus").await;
    let (code, out, err) = run(&[dir.to_str().expect("utf-8"), "--format", "json"]);
    assert_eq!(code, 1, "the corpus has error violations; stderr: {err}");
    let report: Value = serde_json::from_str(&out).expect("one JSON document");
    let exchanges = report["exchanges"].as_array().expect("exchanges");
    assert_eq!(exchanges.len(), fixtures.len());
    assert_eq!(report["summary"]["unreadable"], 0);
    let mut differences = Vec::new();
    for fixture in &fixtures {
        let exchange = exchanges
            .iter()
            .find(|e| e["id"] == fixture.name.as_str())
            .unwrap_or_else(|| panic!("{} was checked", fixture.name));
        let actual: Vec<Value> = exchange["violations"]
            .as_array()
            .expect("violations")
            .iter()
            .map(|v| comparable(v, true))
            .collect();
        let expected = read_expected(fixture);
        if actual != expected {
            differences.push(format!("{}: {actual:?} != {expected:?}", fixture.name));
        }
        assert_eq!(
            exchange["live_violations"].as_u64(),
            Some(expected.len() as u64),
            "{}",
            fixture.name
        );
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

mod cases;
mod examples;

/// Writes the recorded corpus 10 times over into `$TOOLTAP_BENCH_DIR` for a throughput run of
/// the release binary: `cargo test --test it check_cli -- --ignored`, then
/// `time target/release/tooltap check $TOOLTAP_BENCH_DIR`.
#[tokio::test]
#[ignore = "generates a benchmark corpus on request"]
async fn generate_a_benchmark_corpus() {
    let Ok(target) = std::env::var("TOOLTAP_BENCH_DIR") else {
        return;
    };
    let (dir, _) = record_corpus("bench-source").await;
    let mut written = 0;
    for copy in 0..10 {
        for entry in std::fs::read_dir(dir.join("fixtures")).expect("route") {
            let date = entry.expect("entry").path();
            let out = PathBuf::from(&target).join(format!("copy{copy}"));
            std::fs::create_dir_all(&out).expect("mkdir");
            for file in std::fs::read_dir(&date).expect("date") {
                let file = file.expect("entry").path();
                std::fs::copy(&file, out.join(file.file_name().expect("name"))).expect("copy");
                written += 1;
            }
        }
    }
    assert!(written > 500);
}

mod bounds;
