//! The MCP conversation fixtures (`tests/conversations/<case>/conversation.json`): each case is
//! written out as one recording segment (its exchanges in order, SSE answers one frame per
//! event) and judged by `tooltap check`; the conversation rules it reports (state S,
//! `engine::mcp_conversation::RULES`) equal the case's `expected.jsonl` (`TOOLTAP_BLESS=1`
//! rewrites them). `mcp_pass_*` cases must be clean. Every conversation rule fires in some case.
//!
//! One exchange of `conversation.json`: `method`; `session`, `version` and `last_event_id` (the
//! request's `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`); `headers` (more
//! request headers, `[name, value]` pairs: `Mcp-Param-*`); `body` (the request's
//! JSON); `status` (default 200, or 202 with no `events`); `response_session`; `events` (each
//! `{"id"?, "data"}`); `start_ms` and `end_ms` (default 10 ms apart, 5 ms long), or `start_us`
//! and `end_us` where a case needs the microsecond the recordings keep.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tooltap::engine::mcp_conversation::RULES;

use crate::support::TempDir;
use crate::support::check::check_json;

mod splits;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conversations")
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root())
        .expect("tests/conversations")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.join("conversation.json").exists())
        .collect();
    cases.sort();
    cases
}

/// The case as recording lines: `exchange`, its frames, `end`, for each exchange in order.
fn segment(conversation: &[Value]) -> String {
    let mut lines = Vec::new();
    for (k, exchange) in conversation.iter().enumerate() {
        let start = exchange["start_us"]
            .as_u64()
            .or_else(|| exchange["start_ms"].as_u64().map(|ms| ms * 1000))
            .unwrap_or(k as u64 * 10_000);
        let end = exchange["end_us"]
            .as_u64()
            .or_else(|| exchange["end_ms"].as_u64().map(|ms| ms * 1000))
            .unwrap_or(start + 5000);
        let mut request_headers = vec![json!(["content-type", "application/json"])];
        for (name, key) in [
            ("mcp-session-id", "session"),
            ("mcp-protocol-version", "version"),
            ("last-event-id", "last_event_id"),
        ] {
            if let Some(value) = exchange[key].as_str() {
                request_headers.push(json!([name, value]));
            }
        }
        if let Some(more) = exchange["headers"].as_array() {
            request_headers.extend(more.iter().cloned());
        }
        let events = exchange["events"].as_array().cloned().unwrap_or_default();
        let status =
            exchange["status"]
                .as_u64()
                .unwrap_or(if events.is_empty() { 202 } else { 200 });
        let mut response_headers = Vec::new();
        if !events.is_empty() {
            response_headers.push(json!(["content-type", "text/event-stream"]));
        }
        if let Some(session) = exchange["response_session"].as_str() {
            response_headers.push(json!(["mcp-session-id", session]));
        }
        let body = match exchange.get("body") {
            Some(body) if !body.is_null() => json!({"json": body}),
            _ => json!({"text": ""}),
        };
        lines.push(json!({
            "type": "exchange", "v": 1, "id": format!("tconv-{}", k + 1),
            "started": started(start), "route": "default", "upstream": "http://127.0.0.1:1",
            "method": exchange["method"], "path": "/mcp", "dialect": "mcp",
            "request": {"headers": request_headers, "body": body},
            "response": {"status": status, "headers": response_headers},
        }));
        let mut bytes = 0;
        for (seq, event) in events.iter().enumerate() {
            let id = event["id"]
                .as_str()
                .map(|id| format!("id: {id}\n"))
                .unwrap_or_default();
            let text = format!("{id}event: message\ndata: {}\n\n", event["data"]);
            bytes += text.len();
            lines
                .push(json!({"type": "frame", "seq": seq, "t_us": 1000 + seq * 100, "text": text}));
        }
        lines.push(json!({
            "type": "end", "outcome": "complete", "t_us": end - start,
            "dropped_frames": 0, "frames": events.len(), "bytes": bytes,
            "completeness": {"state": "complete"}, "violations": [],
        }));
    }
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// `2026-12-06T00:00:00.000000Z` plus `us`, to the microsecond as tooltap writes `started`.
fn started(us: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_micros(1_796_515_200_000_000 + us);
    humantime::format_rfc3339_micros(at).to_string()
}

/// The conversation rules `check` reports per exchange (1-based), comparable fields only.
fn judged(case: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(case.join("conversation.json")).expect("conversation");
    let conversation: Vec<Value> = serde_json::from_str(&text).expect("conversation is JSON");
    let dir = TempDir::new("mcp-conversation-fixture");
    let file = dir.join("segment-tconv-1.jsonl");
    std::fs::File::create(&file)
        .and_then(|mut f| f.write_all(segment(&conversation).as_bytes()))
        .expect("segment written");
    let checked = check_json(dir.path());
    assert!(checked.code <= 1, "check failed: {}", checked.stderr);
    let state: BTreeSet<&str> = RULES.iter().map(|r| r.as_str()).collect();
    let mut lines = Vec::new();
    for exchange in checked.report["exchanges"].as_array().expect("exchanges") {
        let id = exchange["id"].as_str().expect("id");
        let number: u64 = id
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("number");
        for violation in exchange["violations"].as_array().expect("violations") {
            let rule = violation["rule"].as_str().unwrap_or_default();
            if state.contains(rule) {
                lines.push(json!({
                    "exchange": number, "rule": rule, "severity": violation["severity"],
                    "path": violation["path"], "seq": violation["seq"],
                }));
            }
        }
    }
    lines.sort_by_key(|line| (line["exchange"].as_u64(), line.to_string()));
    lines
}

fn expected(case: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(case.join("expected.jsonl")).unwrap_or_default();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("expected line is JSON"))
        .collect()
}

/// The conversation rules some case expects (read by `engine_fixtures`' every-rule test).
pub fn fired_rules() -> BTreeSet<String> {
    cases()
        .iter()
        .flat_map(|case| expected(case))
        .filter_map(|line| line["rule"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn every_conversation_fixture_reports_exactly_its_expected_state_rules() {
    let bless = std::env::var("TOOLTAP_BLESS").is_ok_and(|v| v == "1");
    let mut failures = BTreeMap::new();
    let cases = cases();
    assert!(cases.len() >= 8, "{} cases", cases.len());
    for case in &cases {
        let actual = judged(case);
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if name.starts_with("mcp_pass_") {
            assert!(actual.is_empty(), "{name} must be clean: {actual:?}");
        }
        if bless {
            let text: String = actual.iter().map(|line| format!("{line}\n")).collect();
            std::fs::write(case.join("expected.jsonl"), text).expect("blessed");
        } else if actual != expected(case) {
            failures.insert(name, actual);
        }
    }
    assert!(
        failures.is_empty(),
        "cases differ (actual shown): {failures:#?}"
    );
}

#[test]
fn every_conversation_rule_fires_in_some_fixture() {
    let fired = fired_rules();
    let missing: Vec<&str> = RULES
        .iter()
        .map(|r| r.as_str())
        .filter(|id| !fired.contains(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "conversation rules without a fixture: {missing:?}"
    );
}
