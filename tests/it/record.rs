//! Recording through the live proxy: every exchange written as its exact fragment sequence,
//! `tooltap check` re-judging the files reaches the same verdicts as the live inspection, no
//! credential reaches the disk, and an unwritable recordings folder never touches traffic.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::engine_support;
use crate::support::TempDir;
use crate::support::check::check_json;
use crate::support::client::{exchange, request};
use crate::support::fixtures::fixture_request;
use crate::support::fixtures::{
    comparable, fixture_upstream, settle, sorted, violations_by_exchange,
};
use crate::support::metrics::assert_metric;
use crate::support::proxy;
use crate::support::temp::files_under;
use crate::support::within;
use tooltap::proxy::server::RunningProxy;
use tooltap::record::RecordMode;

const SECRET: &str = "sk-planted-7f3a9c1e";

/// The fixture's request with the secret planted in `user` (when it is a JSON object).
fn planted_body(request: &[u8]) -> String {
    match serde_json::from_slice::<Value>(request) {
        Ok(Value::Object(mut map)) => {
            map.insert("user".into(), Value::String(SECRET.into()));
            Value::Object(map).to_string()
        }
        _ => String::from_utf8_lossy(request).into_owned(),
    }
}

pub async fn flush(tooltap: &RunningProxy) {
    if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
        within(std::time::Duration::from_secs(20), recorder.flush()).await;
    }
}

#[tokio::test]
async fn recordings_made_live_are_rejudged_by_check_to_the_same_verdicts_and_hold_no_secret() {
    let fixtures = engine_support::load_all();
    let upstream = fixture_upstream(&fixtures).await;
    let dir = TempDir::new("record-live");
    let recordings = dir.join("recordings");
    let violations = dir.join("violations.jsonl");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(recordings.clone());
    raw.redact.body_pointers = Some(vec!["/user".into()]);
    raw.inspect.violations = Some(violations.clone());
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    for fixture in &fixtures {
        let join = if fixture.path().contains('?') {
            '&'
        } else {
            '?'
        };
        let path = format!("{}{join}key={SECRET}", fixture.path());
        let mut req = request(addr, "POST", &path, &planted_body(&fixture.request));
        let headers = req.headers_mut();
        headers.insert("x-fixture", fixture.name.parse().expect("value"));
        headers.insert(
            "authorization",
            format!("Bearer {SECRET}").parse().expect("value"),
        );
        headers.insert("x-api-key", SECRET.parse().expect("value"));
        let got = exchange(addr, req).await;
        assert_eq!(got.body, fixture.body, "{}", fixture.name);
    }
    settle(&tooltap, fixtures.len() as u64).await;
    flush(&tooltap).await;

    let files = files_under(&recordings);
    let recorded: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(
        recorded.len(),
        fixtures.len(),
        "one recording per exchange: {files:?}"
    );
    for file in files_under(&dir) {
        let bytes = std::fs::read(&file).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(SECRET),
            "{} holds the planted key",
            file.display()
        );
    }

    let checked = check_json(&recordings);
    assert_eq!(
        checked.code, 1,
        "violations were recorded: {}",
        checked.stderr
    );
    let report = checked.report;
    let rejudged: BTreeMap<String, Vec<Value>> = report["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .map(|e| {
            let id = e["id"].as_str().expect("id").to_string();
            let list = e["violations"]
                .as_array()
                .expect("list")
                .iter()
                .map(|v| comparable(v, true))
                .collect();
            (id, list)
        })
        .collect();
    assert_eq!(rejudged.len(), fixtures.len());
    let live = violations_by_exchange(&violations);
    let mut compared = 0;
    for (id, offline) in &rejudged {
        let online: Vec<Value> = live
            .get(id)
            .map(|l| l.iter().map(|v| comparable(v, true)).collect())
            .unwrap_or_default();
        assert_eq!(sorted(offline.clone()), sorted(online), "exchange {id}");
        compared += offline.len();
    }
    assert!(compared > 50, "only {compared} violations compared");
}

#[tokio::test]
async fn an_unwritable_recordings_folder_leaves_traffic_untouched_and_is_reported() {
    let fixtures = engine_support::load_all();
    let broken: Vec<_> = fixtures
        .into_iter()
        .filter(|f| f.name == "buffered_arguments_object" || f.name == "seed_required_stream")
        .collect();
    let upstream = fixture_upstream(&broken).await;
    let dir = TempDir::new("record-unwritable");
    // A regular file where the folder should be: unwritable even for root.
    let recordings = dir.join("recordings");
    std::fs::write(&recordings, "not a folder").expect("file");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(recordings);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    for fixture in &broken {
        let got = exchange(addr, fixture_request(addr, fixture)).await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body, fixture.body, "{}", fixture.name);
    }
    settle(&tooltap, 2).await;
    flush(&tooltap).await;
    let text = crate::support::metrics::metrics(&tooltap).await;
    assert_metric!(
        text,
        "tooltap_recording_failures_total",
        ["target=\"recordings\""] >= 1,
        "{text}"
    );
}

#[tokio::test]
async fn violations_mode_records_only_the_violating_exchange_whole() {
    let fixtures: Vec<_> = engine_support::load_all()
        .into_iter()
        .filter(|f| f.name == "seed_required_stream" || f.name == "stream_parallel_all_on_index_0")
        .collect();
    assert_eq!(fixtures.len(), 2);
    let upstream = fixture_upstream(&fixtures).await;
    let dir = TempDir::new("record-violations-mode");
    let recordings = dir.join("recordings");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.record.mode = Some(RecordMode::Violations);
    raw.record.dir = Some(recordings.clone());
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let mut ids = BTreeMap::new();
    for fixture in &fixtures {
        let got = exchange(addr, fixture_request(addr, fixture)).await;
        let id = got.headers["x-tooltap-exchange"]
            .to_str()
            .expect("id")
            .to_string();
        ids.insert(fixture.name.clone(), id);
    }
    settle(&tooltap, 2).await;
    flush(&tooltap).await;
    let files = files_under(&recordings);
    assert_eq!(
        files.len(),
        1,
        "only the violating exchange is kept: {files:?}"
    );
    let recording = tooltap::record::read_file(&files[0]).expect("readable");
    let broken = &fixtures[fixtures[0].name.ne("stream_parallel_all_on_index_0") as usize];
    assert_eq!(broken.name, "stream_parallel_all_on_index_0");
    assert_eq!(recording.meta.id, ids[&broken.name]);
    assert_eq!(recording.body(), broken.body, "every frame, in order");
    assert!(matches!(
        recording.meta.request.body,
        tooltap::record::RecordedBody::Json(_)
    ));
    let end = recording.end.expect("end line");
    assert!(
        end.violations
            .iter()
            .any(|v| v.rule.as_str() == "delta.id_changed")
    );
}
