//! Real tools as judges, against aimock (npm) with the official `openai` and `anthropic`
//! Python SDKs (chat and messages; buffered, streamed, and an answer naming a tool the request
//! never declared), all through tooltap so both sides see the very same exchanges:
//! - vcrpy itself records cassettes of that traffic, and `tooltap check` judges them to the
//!   same verdicts as tooltap's own recordings of it; `tooltap replay` serves them and the SDKs
//!   parse the same tool calls;
//! - the cassette `tooltap export` writes loads and replays in vcrpy (record mode `none`, no
//!   network), and the SDKs parse the same tool calls from it, every interaction played;
//! - the HAR `tooltap export` writes is read by haralyzer (a HAR parser from PyPI), which finds
//!   every exchange with its status, MIME type and tool names.
//!
//! The Python needs vcrpy and haralyzer (tests/clients/python/requirements.txt).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{export, s};
use crate::record::flush;
use crate::support::TempDir;
use crate::support::aimock::start_aimock;
use crate::support::check::check_json;
use crate::support::clients::{run_python, script_json};
use crate::support::fixtures::settle;
use crate::support::proxy;
use crate::support::temp::files_under;
use crate::support::temp::temp_file;

const SCRIPT: &str = "vcr_cassettes.py";
const LIMIT: Duration = Duration::from_secs(90);

/// The script's JSON output for `args`.
async fn script(args: &[&str]) -> Value {
    let output = run_python(SCRIPT, args, LIMIT).await;
    script_json(&output, "vcr_cassettes.py", &args.join(" "))
}

/// Per request path, the sorted list of each exchange's violations (rule, pointer, choice,
/// tool call, severity: what does not depend on frame boundaries), and the exit code.
fn verdicts(dir: &Path) -> (u8, BTreeMap<String, Vec<Value>>, String) {
    let checked = check_json(dir);
    let mut by_path: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for exchange in checked.report["exchanges"].as_array().expect("exchanges") {
        let violations: Vec<Value> = exchange["violations"]
            .as_array()
            .expect("violations")
            .iter()
            .map(|v| {
                serde_json::json!([
                    v["rule"],
                    v["path"],
                    v["choice"],
                    v["tool_call"],
                    v["severity"]
                ])
            })
            .collect();
        let path = exchange["path"].as_str().expect("path").to_owned();
        by_path
            .entry(path)
            .or_default()
            .push(serde_json::json!([violations, exchange["completeness"]]));
    }
    for list in by_path.values_mut() {
        list.sort_by_key(Value::to_string);
    }
    (checked.code, by_path, checked.stderr)
}

#[tokio::test]
async fn vcrpy_cassettes_are_judged_like_tooltaps_recordings_and_tooltaps_exports_play_in_vcrpy_and_haralyzer()
 {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let dir = TempDir::new("interop-vcrpy");
    let (recordings, cassettes) = (dir.join("recordings"), dir.join("cassettes"));
    let violations = temp_file("interop-vcrpy-violations.jsonl");
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;
    let through = format!("http://{}", tooltap.local_addr());

    let recorded = script(&["record", &through, s(&cassettes)]).await;
    assert_eq!(recorded["chat_stream"][0][0], "get_weather", "{recorded}");
    assert_eq!(recorded["chat_broken"][0][0], "get_time", "{recorded}");
    assert_eq!(
        recorded["anthropic_buffered"].as_array().map(Vec::len),
        Some(2)
    );
    settle(&tooltap, 6).await;
    flush(&tooltap).await;
    assert_eq!(
        files_under(&cassettes).len(),
        2,
        "vcrpy wrote openai.yaml and anthropic.yaml"
    );

    // (a) vcrpy's cassettes and tooltap's recordings of the same six exchanges: same verdicts.
    let (own_code, own, own_err) = verdicts(&recordings);
    let (vcr_code, from_vcr, vcr_err) = verdicts(&cassettes);
    assert_eq!(own.values().map(Vec::len).sum::<usize>(), 6, "{own_err}");
    assert_eq!(
        from_vcr, own,
        "vcrpy's cassettes judged otherwise: {vcr_err}"
    );
    assert_eq!(
        (own_code, vcr_code),
        (1, 1),
        "the undeclared tool is an error"
    );
    let broken: Vec<&Value> = own
        .values()
        .flatten()
        .filter(|v| v[0] != serde_json::json!([]))
        .collect();
    assert_eq!(broken.len(), 2, "one broken answer per SDK: {own:?}");
    assert!(
        vcr_err.contains("frame boundaries synthesized for 3"),
        "the check says the boundaries are made up: {vcr_err}"
    );

    // `tooltap replay` serves vcrpy's own cassettes: the SDKs parse the same tool calls.
    let replay = proxy::start_replay(cassettes.clone(), None).await;
    let served = script(&["direct", &format!("http://{}", replay.local_addr())]).await;
    assert_eq!(served, recorded, "tooltap replay of vcrpy's cassettes");
    drop(replay);

    // (b) tooltap's cassette plays in vcrpy: the SDKs parse the same tool calls.
    let exported = dir.join("exported");
    let (code, stderr) = export(&[s(&recordings), "--format", "vcr", "-o", s(&exported)]);
    assert_eq!(code, 0, "{stderr}");
    let files = files_under(&exported);
    assert_eq!(
        files.len(),
        1,
        "one folder of recordings, one cassette: {files:?}"
    );
    let text = std::fs::read_to_string(&files[0]).expect("cassette");
    assert!(!text.contains("sk-test-vcr") && !text.contains("sk-ant-test-vcr"));
    let mut replayed = script(&["replay", s(&files[0])]).await;
    let object = replayed.as_object_mut().expect("object");
    assert_eq!(object.remove("played"), Some(Value::from(6)));
    assert_eq!(object.remove("all_played"), Some(Value::Bool(true)));
    assert_eq!(
        replayed, recorded,
        "the SDKs parsed other tool calls from tooltap's cassette"
    );

    // A HAR reader reads tooltap's HAR: every exchange, its status, type and tool names.
    let har_dir = dir.join("har");
    let (code, stderr) = export(&[s(&recordings), "--format", "har", "-o", s(&har_dir)]);
    assert_eq!(code, 0, "{stderr}");
    let read = script(&["har", s(&har_dir.join("tooltap.har"))]).await;
    let mut entries: Vec<String> = read["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(Value::to_string)
        .collect();
    entries.sort();
    let expected = |path: &str, mime: &str, names: &[&str]| {
        serde_json::json!(["POST", path, 200, mime, names]).to_string()
    };
    let mut wanted = vec![
        expected(
            "/v1/chat/completions",
            "application/json",
            &["get_weather", "get_weather"],
        ),
        expected("/v1/chat/completions", "application/json", &["get_time"]),
        expected(
            "/v1/chat/completions",
            "text/event-stream",
            &["get_weather"],
        ),
        expected(
            "/v1/messages",
            "application/json",
            &["get_weather", "get_weather"],
        ),
        expected("/v1/messages", "application/json", &["get_time"]),
        expected("/v1/messages", "text/event-stream", &["get_weather"]),
    ];
    wanted.sort();
    assert_eq!(entries, wanted, "{read}");
}

/// `(id → (violations, completeness))` of a check report, `seq` included.
fn verdicts_by_id(report: &Value) -> BTreeMap<String, Value> {
    report["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .map(|e| {
            let id = e["id"].as_str().expect("id").to_owned();
            (id, serde_json::json!([e["violations"], e["completeness"]]))
        })
        .collect()
}

#[tokio::test]
async fn vcrpy_loads_and_resaves_tooltaps_cassette_keeping_every_body_and_tooltaps_key() {
    let (dir, fixtures) = crate::check_cli::record_corpus("interop-resave").await;
    let out = TempDir::new("interop-resave-out");
    let (code, stderr) = export(&[s(&dir), "--format", "vcr", "-o", s(&out.join("vcr"))]);
    assert_eq!(code, 0, "{stderr}");
    let cassette = files_under(&out.join("vcr")).remove(0);
    let resaved = out.join("resaved.yaml");
    let loaded = script(&["resave", s(&cassette), s(&resaved)]).await;

    // vcrpy's loader reads every body byte-for-byte (literal blocks, quoted strings with
    // escapes, `!!binary` for gzip) and keeps `x_tooltap` under the response.
    let mut recorded = BTreeMap::new();
    for file in files_under(&dir) {
        tooltap::interop::files::each_recording(&file, u64::MAX, &mut Vec::new(), |r| {
            let r = r.expect("recording");
            recorded.insert(r.meta.id.clone(), r.body());
        });
    }
    let interactions = loaded["interactions"].as_array().expect("interactions");
    assert_eq!(interactions.len(), fixtures.len());
    use base64::Engine as _;
    for interaction in interactions {
        let id = interaction["id"].as_str().expect("vcrpy kept x_tooltap");
        let body = base64::engine::general_purpose::STANDARD
            .decode(interaction["body"].as_str().expect("body"))
            .expect("base64");
        assert_eq!(&body, &recorded[id], "{id}: vcrpy loaded another body");
    }

    // What vcrpy saved again (PyYAML's own style) is judged as the recordings were, `seq`
    // included: the key survived vcrpy's save, so the frames came back.
    let original = check_json(&dir);
    let again = check_json(&resaved);
    assert_eq!(
        verdicts_by_id(&again.report),
        verdicts_by_id(&original.report),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.contains(&format!(
            "boundaries, times and ending from tooltap's `x_tooltap` for {}",
            fixtures.len()
        )),
        "{}",
        again.stderr
    );
}
