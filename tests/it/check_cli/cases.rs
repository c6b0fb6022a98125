//! `tooltap check` cases: exit codes and `--fail-on`/`--severity`, JUnit through a strict XML
//! parser, unreadable inputs named by file and line, temp files skipped, a recording without
//! its end line judged as truncated, and captures made elsewhere (`--request`/`--response`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::engine_support::{Fixture, fixtures_dir, load_all, read_expected};
use super::{comparable, record_corpus, run};
use crate::support::TempDir;

/// The recording of fixture `name` inside a recorded corpus folder.
fn recording(dir: &Path, name: &str) -> PathBuf {
    let route = dir.join("fixtures");
    let date = std::fs::read_dir(&route)
        .expect("route folder")
        .next()
        .expect("a date folder")
        .expect("entry")
        .path();
    let path = date.join(format!("{name}.jsonl"));
    assert!(path.exists(), "{}", path.display());
    path
}

pub fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

#[tokio::test]
async fn exit_codes_follow_fail_on_and_severity_overrides() {
    let (dir, _) = record_corpus("exit").await;
    let clean = recording(&dir, "pass_parallel_false_single_call");
    let warning_only = recording(&dir, "stream_index_skips");
    let error = recording(&dir, "stream_done_missing");
    assert_eq!(run(&[s(&clean)]).0, 0);
    assert_eq!(run(&[s(&warning_only)]).0, 0);
    assert_eq!(run(&[s(&warning_only), "--fail-on", "warning"]).0, 1);
    let (code, out, _) = run(&[s(&error)]);
    assert_eq!(code, 1);
    assert!(out.contains("sse.done_missing"), "{out}");
    assert!(
        out.contains("1 with violations (1 error(s), 0 warning(s))"),
        "{out}"
    );
    assert_eq!(run(&[s(&error), "--severity", "sse.done_missing=off"]).0, 0);
    assert_eq!(
        run(&[s(&error), "--severity", "sse.done_missing=warning"]).0,
        0
    );
    let (code, out, _) = run(&[s(&recording(&dir, "stream_id_changed"))]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "delta.id_changed at /choices/0/delta/tool_calls/0/id (choice 0, tool call 0, seq 2)"
        ),
        "the human report says where: {out}"
    );
}

/// The counts a JUnit reader shows must agree: `failures` is the number of failed testcases
/// (one `<failure>` each, listing all their violations), and a testcase's name says which
/// exchange it is without looking the id up.
#[tokio::test]
async fn junit_failures_count_failed_testcases_named_for_humans() {
    let (dir, fixtures) = record_corpus("junit").await;
    for (fail_on, keep) in [("error", "error"), ("warning", "")] {
        let off = super::conversation_rules_off();
        let argv = [
            s(&dir),
            "--format",
            "junit",
            "--fail-on",
            fail_on,
            "--severity",
            &off,
        ];
        let (code, out, err) = run(&argv);
        assert_eq!(code, 1, "{err}");
        let document = roxmltree::Document::parse(&out).expect("well-formed XML");
        let testcases: Vec<_> = document
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(testcases.len(), fixtures.len());
        let failed = testcases
            .iter()
            .filter(|t| t.children().any(|n| n.has_tag_name("failure")))
            .count();
        let failures = document
            .descendants()
            .filter(|n| n.has_tag_name("failure"))
            .count();
        let counted = |f: &Fixture| {
            read_expected(f)
                .iter()
                .filter(|v| keep.is_empty() || v["severity"] == keep)
                .count()
        };
        let expected_failed = fixtures.iter().filter(|f| counted(f) > 0).count();
        assert!(expected_failed > 0 && expected_failed < fixtures.len());
        assert_eq!((failed, failures), (expected_failed, expected_failed));
        let suite = document
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .expect("suite");
        assert_eq!(
            suite.attribute("failures"),
            Some(failed.to_string().as_str())
        );
        assert!(failed <= testcases.len());
        assert_eq!(
            suite.attribute("tests"),
            Some(testcases.len().to_string().as_str())
        );
        assert_eq!(suite.attribute("errors"), Some("0"));
        for fixture in &fixtures {
            let tail = format!("[{}]", fixture.name);
            let case = testcases
                .iter()
                .find(|t| t.attribute("name").is_some_and(|n| n.ends_with(&tail)))
                .unwrap_or_else(|| panic!("no testcase named ...{tail}"));
            let name = case.attribute("name").unwrap_or_default();
            assert!(
                // The path without its query (which may carry a `key=`).
                name.starts_with(&format!(
                    "{} {} ",
                    fixture.method,
                    fixture.path().split('?').next().unwrap_or_default()
                )) && name
                    .split(' ')
                    .any(|part| part.len() >= 20 && part.as_bytes()[10] == b'T'),
                "a name a human maps back: {name}"
            );
            // Every violation at the threshold is a line of the one failure's body.
            let body = case
                .children()
                .find(|n| n.has_tag_name("failure"))
                .and_then(|f| f.text())
                .unwrap_or_default();
            assert_eq!(body.lines().count(), counted(fixture), "{name}: {body}");
        }
    }
}

#[tokio::test]
async fn unreadable_inputs_exit_2_naming_file_and_line() {
    let (dir, _) = record_corpus("unreadable").await;
    let good = recording(&dir, "stream_done_missing");
    let text = std::fs::read_to_string(&good).expect("read");
    let lines: Vec<&str> = text.lines().collect();

    let future = dir.join("future.jsonl");
    std::fs::write(&future, lines[0].replace("\"v\":1", "\"v\":7")).expect("write");
    let (code, out, err) = run(&[s(&future), "--format", "junit"]);
    assert_eq!(code, 2);
    assert!(err.contains(&format!("{}:1:", future.display())), "{err}");
    assert!(err.contains("newer"), "{err}");
    let document = roxmltree::Document::parse(&out).expect("XML even so");
    assert_eq!(
        document
            .descendants()
            .filter(|n| n.has_tag_name("error"))
            .count(),
        1
    );

    let corrupt = dir.join("corrupt.jsonl");
    let mut broken = lines.clone();
    broken[2] = "{not json";
    std::fs::write(&corrupt, broken.join("\n") + "\n").expect("write");
    let (code, _, err) = run(&[s(&corrupt), s(&good)]);
    assert_eq!(code, 2, "unreadable input beats violations");
    assert!(err.contains(&format!("{}:3:", corrupt.display())), "{err}");

    let missing = dir.join("nope");
    let (code, _, err) = run(&[s(&missing)]);
    assert_eq!(code, 2);
    assert!(err.contains("nope"), "{err}");
    assert_eq!(run(&[]).0, 2, "no input at all is a usage error");
}

#[tokio::test]
async fn temp_files_are_skipped_and_a_file_without_its_end_is_truncated() {
    let (dir, _) = record_corpus("partial").await;
    let full = std::fs::read_to_string(recording(&dir, "stream_done_missing")).expect("read");
    let without_end: String = full
        .lines()
        .filter(|l| !l.contains("\"type\":\"end\""))
        .fold(String::new(), |mut acc, line| {
            acc.push_str(line);
            acc.push('\n');
            acc
        });
    let only = TempDir::new("partial-only");
    std::fs::write(only.join(".crashed.jsonl.tmp"), &without_end).expect("write");
    let (code, out, err) = run(&[s(&only)]);
    assert_eq!(code, 2, "a folder with no exchange is an error: {out}");
    assert!(err.contains("no recording found"), "{err}");
    let (code, out, _) = run(&[s(&only), "--allow-empty"]);
    assert_eq!(code, 0);
    assert!(out.contains("checked 0 exchange(s)"), "{out}");

    // The same bytes as a finished name, cut mid-line as a crash would leave them.
    let cut = only.join("cut.jsonl");
    std::fs::write(&cut, format!("{without_end}{{\"type\":\"fra")).expect("write");
    let (code, out, err) = run(&[s(&cut), "--format", "json"]);
    assert_eq!(
        code, 0,
        "end-of-body rules are not applied to a cut body: {err}"
    );
    let report: Value = serde_json::from_str(&out).expect("json");
    let exchange = &report["exchanges"][0];
    assert_eq!(exchange["completeness"]["state"], "truncated");
    assert_eq!(exchange["outcome"], Value::Null);
    assert_eq!(exchange["violations"], serde_json::json!([]));
}

/// A capture from a path no dialect names is judged as `--dialect` says (old labels read); an
/// unknown name is refused.
#[test]
fn a_capture_s_dialect_can_be_named() {
    let dir = fixtures_dir().join("anthropic_response_tool_use_name_unknown");
    let (request, response) = (dir.join("request.json"), dir.join("response.json"));
    let rules = |dialect: Option<&str>| {
        let mut argv = vec!["--request", s(&request), "--response", s(&response)];
        argv.extend(["--format", "json", "--path", "/v1/generate"]);
        argv.extend(
            dialect
                .map(|name| ["--dialect", name])
                .into_iter()
                .flatten(),
        );
        let (code, out, err) = run(&argv);
        assert!(code <= 1, "{err}");
        let report: Value = serde_json::from_str(&out).expect("json");
        report["exchanges"][0]["violations"]
            .as_array()
            .expect("violations")
            .iter()
            .map(|v| v["rule"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    let named = vec!["anthropic.response.tool_use_name_unknown".to_owned()];
    assert_eq!(rules(Some("anthropic")), named);
    assert_eq!(rules(Some("anthropic_messages")), named);
    assert_ne!(rules(None), named, "the path alone names no dialect: Chat");
    let full = [
        "tooltap",
        "check",
        "--request",
        "a",
        "--response",
        "b",
        "--dialect",
        "cohere",
    ];
    let error = <tooltap::cli::Cli as clap::Parser>::try_parse_from(full).expect_err("refused");
    assert!(
        error.to_string().contains(tooltap::engine::Dialect::NAMES),
        "{error}"
    );
}

/// `check` of `fixture`'s request and response files as a capture (`--content-type` when given):
/// the violations it found and the fixture's expected ones, comparable (`seq` kept when
/// `keep_seq`).
fn capture_verdict(
    fixture: &Fixture,
    content_type: Option<&str>,
    keep_seq: bool,
) -> (Vec<Value>, Vec<Value>) {
    let dir = fixtures_dir().join(&fixture.name);
    let request = dir.join("request.json");
    let response = dir.join(fixture.response_file());
    let status = fixture.head.status.to_string();
    let mut argv = vec!["--request", s(&request), "--response", s(&response)];
    argv.extend([
        "--format",
        "json",
        "--status",
        &status,
        "--path",
        fixture.path(),
    ]);
    argv.extend(
        content_type
            .map(|ct| ["--content-type", ct])
            .into_iter()
            .flatten(),
    );
    let (code, out, err) = run(&argv);
    assert!(code <= 1, "{}: {err}", fixture.name);
    let report: Value = serde_json::from_str(&out).expect("json");
    let actual = report["exchanges"][0]["violations"]
        .as_array()
        .expect("violations")
        .iter()
        .map(|v| comparable(v, keep_seq))
        .collect();
    let expected = read_expected(fixture)
        .iter()
        .map(|v| comparable(v, keep_seq))
        .collect();
    (actual, expected)
}

#[test]
fn captures_made_elsewhere_give_the_expected_violations() {
    let mut checked = 0;
    // A capture is a request body and a response: an MCP case whose verdict depends on its
    // request's method and headers (head.json) is not one.
    for fixture in load_all()
        .into_iter()
        .filter(|f| f.request_headers.is_empty() && f.method == "POST")
    {
        // Declared types stay declared; everything else is sniffed from the bytes.
        let declared = fixtures_dir()
            .join(&fixture.name)
            .join("head.json")
            .exists();
        let content_type = fixture.head.content_type.as_deref().filter(|_| declared);
        // Encoded bodies are fed as one frame here (the corpus uses 64-byte frames): no seq.
        let keep_seq = fixture.head.content_encoding.is_none();
        let (actual, expected) = capture_verdict(&fixture, content_type, keep_seq);
        assert_eq!(actual, expected, "{}", fixture.name);
        checked += 1;
    }
    assert!(checked > 50);
}

/// A bare NDJSON capture (Ollama's `/api/chat` stream, no `--content-type`) gets the verdict it
/// had live with its `application/x-ndjson` head: JSON bytes there name no type, so the head rule
/// `ollama.stream.content_type` never judges a type the server did not send. Before, the body
/// was sniffed `application/json` and every clean stream got that warning.
#[test]
fn a_bare_ndjson_capture_gets_its_live_verdict_without_a_content_type() {
    let mut checked = 0;
    let ndjson = load_all().into_iter().filter(|fixture| {
        fixture.dialect == tooltap::engine::Dialect::Ollama
            && fixture.head.content_type.as_deref() == Some("application/x-ndjson")
    });
    for fixture in ndjson {
        let (actual, expected) = capture_verdict(&fixture, None, true);
        assert_eq!(actual, expected, "{}", fixture.name);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} NDJSON fixtures");
}
