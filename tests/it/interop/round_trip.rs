//! The fixture corpus recorded by the real recorder (every dialect, streams and buffered
//! bodies, gzip, violations of every family), exported as cassettes and as a HAR file and read
//! back by `tooltap check`: the same verdicts, frames and times; without tooltap's key, the
//! same verdicts from synthesized boundaries and a note saying so; `tooltap replay` of a
//! cassette and of a HAR serves the recorded bytes; broken foreign files are named and the rest
//! is still judged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{export, s};
use crate::check_cli::record_corpus;
use crate::support::TempDir;
use crate::support::check::check_json;
use crate::support::client::{exchange, request};
use crate::support::proxy::start_replay;
use tooltap::interop::files::each_recording;
use tooltap::record::{RecordedFrame, Recording};

/// `(id → (violations, completeness, live violations))` of a check report.
fn verdicts(report: &Value) -> BTreeMap<String, (Value, Value, Value)> {
    report["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .map(|exchange| {
            (
                exchange["id"].as_str().expect("id").to_owned(),
                (
                    exchange["violations"].clone(),
                    exchange["completeness"].clone(),
                    exchange["live_violations"].clone(),
                ),
            )
        })
        .collect()
}

/// Every recording under `dir` (foreign files included), by id.
fn recordings(dir: &Path) -> BTreeMap<String, Recording> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            each_recording(&path, u64::MAX, &mut Vec::new(), |recording| {
                let recording = recording.expect("readable");
                out.insert(recording.meta.id.clone(), recording);
            });
        }
    }
    out
}

fn frames(recording: &Recording) -> Vec<(u64, Vec<u8>)> {
    recording
        .frames
        .iter()
        .map(|RecordedFrame { t_us, bytes, .. }| (*t_us, bytes.to_vec()))
        .collect()
}

#[tokio::test]
async fn exported_cassettes_and_har_read_back_with_the_same_verdicts_frames_and_times() {
    let (dir, fixtures) = record_corpus("interop-corpus").await;
    let original = check_json(&dir);
    assert_eq!(
        original.code, 1,
        "the corpus has errors: {}",
        original.stderr
    );
    let expected = verdicts(&original.report);
    assert_eq!(expected.len(), fixtures.len());
    let recorded = recordings(&dir);
    let out = TempDir::new("interop-export");
    for format in ["vcr", "har"] {
        let target = out.join(format);
        let (code, stderr) = export(&[s(&dir), "--format", format, "-o", s(&target)]);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stderr.contains(&format!("{} exchange(s)", fixtures.len())),
            "{stderr}"
        );
        let files: Vec<PathBuf> = crate::support::temp::files_under(&target);
        match format {
            // One cassette per folder of recordings: `<route>/<date>.yaml`.
            "vcr" => {
                assert_eq!(files.len(), 1, "{files:?}");
                assert!(files[0].starts_with(target.join("fixtures")), "{files:?}");
                assert_eq!(files[0].extension().and_then(|e| e.to_str()), Some("yaml"));
            }
            _ => assert_eq!(files, vec![target.join("tooltap.har")]),
        }
        let text = std::fs::read_to_string(&files[0]).expect("utf-8 export");
        // The recorder kept `authorization` as `[REDACTED]`; an export drops the header.
        assert!(
            !text.to_ascii_lowercase().contains("authorization"),
            "{format}"
        );
        assert!(!text.contains("[REDACTED]"), "{format}");

        let checked = check_json(&target);
        assert_eq!(checked.code, 1, "{format}: {}", checked.stderr);
        assert!(
            checked
                .stderr
                .contains("boundaries, times and ending from tooltap's"),
            "{format}: {}",
            checked.stderr
        );
        assert_eq!(
            verdicts(&checked.report),
            expected,
            "{format}: verdicts differ"
        );
        // What replay serves: the same frames at the same times.
        let imported = recordings(&target);
        assert_eq!(imported.len(), recorded.len());
        for (id, recording) in &recorded {
            assert_eq!(frames(&imported[id]), frames(recording), "{format}: {id}");
            assert_eq!(
                imported[id].meta.dialect(),
                recording.meta.dialect(),
                "{id}"
            );
        }
    }
}

/// A cassette without its `x_tooltap` keys (as vcrpy would write it).
fn strip_cassette_key(text: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if line.trim_start().starts_with("x_tooltap:") {
            skipping = true;
            continue;
        }
        if skipping && indent > 4 {
            continue;
        }
        skipping = false;
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[tokio::test]
async fn without_tooltaps_key_boundaries_are_synthesized_and_said_so() {
    let (dir, _) = record_corpus("interop-plain").await;
    let out = TempDir::new("interop-plain-out");
    let (code, stderr) = export(&[s(&dir), "--format", "vcr", "-o", s(&out.join("vcr"))]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = export(&[s(&dir), "--format", "har", "-o", s(&out.join("har"))]);
    assert_eq!(code, 0, "{stderr}");
    let cassette = crate::support::temp::files_under(&out.join("vcr")).remove(0);
    let with_key = check_json(&cassette);
    let text = std::fs::read_to_string(&cassette).expect("cassette");
    let plain = out.join("plain.yaml");
    std::fs::write(&plain, strip_cassette_key(&text)).expect("write");
    assert!(
        !std::fs::read_to_string(&plain)
            .unwrap()
            .contains("x_tooltap")
    );

    let har_path = out.join("har/tooltap.har");
    let mut har: Value = serde_json::from_slice(&std::fs::read(&har_path).unwrap()).unwrap();
    for entry in har["log"]["entries"].as_array_mut().unwrap() {
        entry.as_object_mut().unwrap().remove("_tooltap");
    }
    let plain_har = out.join("plain.har");
    std::fs::write(&plain_har, serde_json::to_vec(&har).unwrap()).unwrap();

    // The corpus is unrelated single exchanges, some sharing MCP session ids; without
    // tooltap's key an import has no request times, so the conversation rules that would link
    // them (and compare times) are left out here.
    let linked = |v: &&Value| {
        v["rule"]
            .as_str()
            .and_then(|rule| rule.parse::<tooltap::engine::RuleId>().ok())
            .is_some_and(tooltap::engine::mcp_conversation::only_across_exchanges)
    };
    let by_order = |report: &Value| -> Vec<(Value, Value)> {
        report["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let violations: Vec<Value> = e["violations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|v| !linked(v))
                    .map(|v| {
                        let mut v = v.clone();
                        v.as_object_mut().unwrap().remove("seq");
                        v
                    })
                    .collect();
                (Value::Array(violations), e["completeness"].clone())
            })
            .collect()
    };
    let expected = by_order(&with_key.report);
    for file in [&plain, &plain_har] {
        let checked = check_json(file);
        assert!(
            checked.stderr.contains("frame boundaries synthesized for")
                && checked.stderr.contains("one frame per SSE event"),
            "{}",
            checked.stderr
        );
        // Imported exchanges are named by their place in the file.
        let first = &checked.report["exchanges"][0]["id"];
        assert!(
            first == "vcr-0" || first == "har-0",
            "{first}: {}",
            file.display()
        );
        assert_eq!(by_order(&checked.report), expected, "{}", file.display());
    }
}

#[tokio::test]
async fn replay_serves_a_cassette_and_a_har_byte_for_byte() {
    let (dir, fixtures) = record_corpus("interop-replay").await;
    let fixture = fixtures
        .iter()
        .find(|f| f.name == "stream_id_changed")
        .expect("the fixture");
    let one = TempDir::new("interop-one");
    let source = crate::support::temp::files_under(&dir)
        .into_iter()
        .find(|p| p.ends_with("stream_id_changed.jsonl"))
        .expect("its recording");
    std::fs::copy(&source, one.join("stream_id_changed.jsonl")).expect("copy");
    let out = TempDir::new("interop-one-out");
    for format in ["vcr", "har"] {
        let (code, stderr) = export(&[s(&one), "--format", format, "-o", s(&out.join(format))]);
        assert_eq!(code, 0, "{stderr}");
        let replay = start_replay(out.join(format), None).await;
        let body = String::from_utf8(fixture.request.clone()).expect("utf-8 request");
        let got = exchange(
            replay.local_addr(),
            request(replay.local_addr(), "POST", fixture.path(), &body),
        )
        .await;
        assert_eq!(got.status, 200, "{format}");
        assert_eq!(got.body.as_ref(), fixture.body.as_slice(), "{format}");
        // One data frame per recorded frame (the x_tooltap/_tooltap boundaries).
        assert_eq!(
            got.frames,
            tooltap::record::read_file(&source).unwrap().frames.len(),
            "{format}"
        );
    }
}

#[test]
fn broken_foreign_files_are_named_and_the_rest_is_judged() {
    let dir = TempDir::new("interop-broken");
    let good = "interactions:\n- request:\n    body: '{\"model\":\"m\",\"messages\":[]}'\n    \
                headers: {}\n    method: POST\n    uri: http://h/v1/chat/completions\n  \
                response:\n    body:\n      string: '{\"choices\":[{\"index\":0,\"message\":\
                {\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}'\n    \
                headers:\n      content-type:\n      - application/json\n    status:\n      \
                code: 200\n      message: OK\nversion: 1\n";
    std::fs::write(dir.join("good.yaml"), good).unwrap();
    std::fs::write(dir.join("workflow.yml"), "name: ci\non: [push]\njobs: {}\n").unwrap();
    std::fs::write(
        dir.join("cut.har"),
        r#"{"log":{"version":"1.2","entries":[{"req"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("bad-yaml.yaml"),
        "interactions:\n- request: [unclosed\n",
    )
    .unwrap();
    let checked = check_json(&dir);
    assert_eq!(
        checked.code, 2,
        "unreadable input fails the run: {}",
        checked.stderr
    );
    let exchanges = checked.report["exchanges"].as_array().unwrap();
    assert_eq!(exchanges.len(), 1, "the good cassette is still judged");
    assert_eq!(exchanges[0]["violations"], serde_json::json!([]));
    let named = |stderr: &str, file: &str, why: &str| {
        let line = stderr
            .lines()
            .find(|line| line.contains(file))
            .unwrap_or_else(|| panic!("{file} is named: {stderr}"));
        assert!(line.contains(why), "{line}");
    };
    named(
        &checked.stderr,
        "cut.har",
        "not a HAR file: EOF while parsing",
    );
    named(&checked.stderr, "bad-yaml.yaml", "not YAML");
    // A folder walk passes over YAML with no `interactions:` line (a CI workflow); named, it
    // is an error that says what it is not.
    assert!(
        !checked.stderr.contains("workflow.yml"),
        "{}",
        checked.stderr
    );
    let workflow = check_json(&dir.join("workflow.yml"));
    assert_eq!(workflow.code, 2);
    named(
        &workflow.stderr,
        "workflow.yml",
        "not a vcrpy cassette: no `interactions` list",
    );
    // `export` says the same, and still writes what it could read.
    let out = dir.join("out");
    let (code, stderr) = export(&[s(&dir), "--format", "har", "-o", s(&out)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("1 exchange(s) into 1 HAR file(s)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cut.har") && stderr.contains("bad-yaml.yaml"),
        "{stderr}"
    );
    let har: Value =
        serde_json::from_slice(&std::fs::read(out.join("tooltap.har")).unwrap()).unwrap();
    assert_eq!(har["log"]["entries"].as_array().map(Vec::len), Some(1));
}

/// pydantic-ai's cassette variant: the request as a structured `parsed_body`, a streamed answer
/// as one literal block under `text/event-stream; charset=utf-8`, lower-case headers.
const PYDANTIC_AI_STREAM: &str = r#"interactions:
- request:
    headers:
      content-type:
      - application/json
      x-api-key:
      - sk-ant-never-read
    method: POST
    parsed_body:
      max_tokens: 256
      messages:
      - content: What is the local time in Tokyo?
        role: user
      model: claude-tooltap-test
      stream: true
      tools:
      - input_schema:
          properties:
            location:
              type: string
          required:
          - location
          type: object
        name: get_weather
    uri: https://api.anthropic.com/v1/messages
  response:
    body:
      string: |+
        event: message_start
        data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-tooltap-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}

        event: content_block_start
        data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_time","input":{}}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Tokyo\"}"}}

        event: content_block_stop
        data: {"type":"content_block_stop","index":0}

        event: message_delta
        data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}}

        event: message_stop
        data: {"type":"message_stop"}

    headers:
      content-type:
      - text/event-stream; charset=utf-8
    status:
      code: 200
      message: OK
version: 1
"#;

#[test]
fn a_pydantic_ai_stream_cassette_is_judged_per_event_and_shown_by_report() {
    let dir = TempDir::new("interop-pydantic");
    let cassette = dir.join("test_anthropic_tool_stream.yaml");
    std::fs::write(&cassette, PYDANTIC_AI_STREAM).unwrap();
    let checked = check_json(&cassette);
    assert_eq!(checked.code, 1, "{}", checked.stderr);
    let exchange = &checked.report["exchanges"][0];
    assert_eq!(exchange["path"], "/v1/messages");
    assert_eq!(exchange["route"], "vcr");
    assert_eq!(
        exchange["live_violations"],
        Value::Null,
        "vcrpy judged nothing"
    );
    let violations = exchange["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(
        violations[0]["rule"],
        "anthropic.response.tool_use_name_unknown"
    );
    // `seq` counts SSE events: the tool_use block starts in the second.
    assert_eq!(violations[0]["seq"], 1, "{violations:?}");
    assert!(
        checked
            .stderr
            .contains("frame boundaries synthesized for 1")
    );

    let page = dir.join("report.html");
    let data = crate::report::support::build(std::slice::from_ref(&cassette), &page);
    assert_eq!(data.exchanges.len(), 1);
    assert!(data.unreadable.is_empty(), "{:?}", data.unreadable);
    assert!(
        data.skipped
            .iter()
            .any(|note| note.contains("a vcrpy cassette, 1 exchange(s)"))
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("anthropic.response.tool_use_name_unknown"));
    assert!(
        !html.contains("sk-ant-never-read"),
        "the key header is dropped as it is read"
    );
}
