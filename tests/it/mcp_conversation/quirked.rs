//! The `mcp-unknown-tool-as-result` quirk on a quirked exchange: a healthy server refuses an
//! unknown tool with a JSON-RPC `-32602` error; `proxy --inject` and `replay --quirk` turn that
//! error into an `isError` result, and the rule the quirk declares in docs/quirks.md,
//! `mcp.tools_call.unknown_tool_as_result` (a conversation rule: the session's catalogue must
//! lack the name), is reported on the call: by the live proxy and by `tooltap check` of its
//! recordings alike, and by replay's inspector. The faithful recordings are clean of it.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Value, json};
use tooltap::quirk::QuirkId;

use super::live_equals_check;
use crate::replay::support::{settings, start};
use crate::support::check::check_json;
use crate::support::client::{Collected, exchange};
use crate::support::temp::json_lines;
use crate::support::upstream::{Received, Script, Upstream};
use crate::support::{TempDir, proxy, within};

const RULE: &str = "mcp.tools_call.unknown_tool_as_result";
const UNKNOWN: &str = "get_wether";

/// A healthy server, answering in SSE: one tool, and `-32602` for any other name.
fn answer(request: &Received) -> Script {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let message = match body["method"].as_str().unwrap_or_default() {
        "notifications/initialized" => return Script::full(202, "application/json", ""),
        "initialize" => {
            let result = json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"w","version":"1"}});
            let event = format!(
                "event: message\ndata: {}\n\n",
                json!({"jsonrpc":"2.0","id":id,"result":result})
            );
            return Script::sse(&[&event], Duration::ZERO).header("mcp-session-id", "sess-q");
        }
        "tools/list" => {
            json!({"jsonrpc":"2.0","id":id,"result":{"tools":[{"name":"get_weather","inputSchema":{"type":"object"}}]}})
        }
        "tools/call" if body.pointer("/params/name") == Some(&json!("get_weather")) => {
            json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"22.5"}]}})
        }
        "tools/call" => {
            let name = body.pointer("/params/name").cloned().unwrap_or(Value::Null);
            json!({"jsonrpc":"2.0","id":id,"error":{"code":-32602,"message":format!("Unknown tool: {name}")}})
        }
        _ => json!({"jsonrpc":"2.0","id":id,"result":{}}),
    };
    Script::sse(
        &[&format!("event: message\ndata: {message}\n\n")],
        Duration::ZERO,
    )
}

async fn post(addr: SocketAddr, body: Value, session: Option<&str>) -> Collected {
    let mut builder = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(session) = session {
        builder = builder
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let request = builder
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    within(Duration::from_secs(10), exchange(addr, request)).await
}

/// The JSON-RPC message of an answer: the body, or its one SSE event's data.
fn message(answer: &Collected) -> Value {
    let text = String::from_utf8_lossy(&answer.body);
    let data = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text);
    serde_json::from_str(data.trim()).unwrap_or(Value::Null)
}

/// A client's session: initialize (echoing the session id it is given), initialized,
/// tools/list, a call of an unknown tool. Returns the answer to that call.
async fn session(addr: SocketAddr) -> Value {
    let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let answer = post(addr, initialize, None).await;
    let minted = answer
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let session = Some(minted.as_str());
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    assert_eq!(post(addr, initialized, session).await.status, 202);
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    assert_eq!(post(addr, list, session).await.status, 200);
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":UNKNOWN,"arguments":{}}});
    message(&post(addr, call, session).await)
}

/// Exchanges (by id) whose violations name `rule`.
fn with_rule<'a>(by_exchange: impl IntoIterator<Item = (&'a String, &'a Vec<Value>)>) -> usize {
    by_exchange
        .into_iter()
        .filter(|(_, found)| found.iter().any(|v| v["rule"] == RULE))
        .count()
}

/// Records one session through the proxy (`inject` applied, or faithful); returns check's
/// violations by exchange, asserted equal to the live ones, and the call's answer.
async fn record(upstream: &Upstream, dir: &Path, inject: Option<&str>) -> (usize, Value) {
    let recordings = dir.join("recordings");
    let violations = dir.join("violations.jsonl");
    let mut raw = crate::support::proxy::raw_config(&upstream.url());
    raw.inspect.violations = Some(violations.clone());
    raw.record.mode = Some(tooltap::record::RecordMode::All);
    raw.record.dir = Some(recordings.clone());
    raw.inject.quirks = inject.map(str::to_owned);
    let tooltap = proxy::start(raw).await;
    let answer = session(tooltap.local_addr()).await;
    let checked = live_equals_check(&tooltap, 4, &violations, &recordings).await;
    (with_rule(&checked), answer)
}

#[tokio::test]
async fn an_unknown_tool_answered_as_a_result_by_inject_or_replay_is_reported() {
    let upstream = Upstream::start(answer, None).await;
    let dir = TempDir::new("mcp-unknown-tool-quirk");

    // Faithful: the -32602 error is what the spec asks for.
    let (found, answer) = record(&upstream, &dir.join("faithful"), None).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(found, 0, "the healthy server is not reported");

    // proxy --inject: the client gets an isError result; live and check report it on the call.
    let (found, answer) = record(
        &upstream,
        &dir.join("injected"),
        Some(QuirkId::McpUnknownToolAsResult.as_str()),
    )
    .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(found, 1, "reported on the call, live and by check");

    // replay --quirk of the faithful recordings: replay's inspector reports it.
    let mut replaying = settings(&dir.join("faithful/recordings"));
    let replay_violations = dir.join("replay.jsonl");
    replaying.violations = Some(replay_violations.clone());
    replaying.quirks = vec![QuirkId::McpUnknownToolAsResult];
    let replay = start(&replaying).await;
    let answer = session(replay.local_addr()).await;
    within(Duration::from_secs(20), replay.shutdown())
        .await
        .expect("replay stops");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let judged = json_lines(&replay_violations);
    let reported: Vec<&Value> = judged.iter().filter(|v| v["rule"] == RULE).collect();
    assert_eq!(reported.len(), 1, "{judged:?}");
    assert_eq!(reported[0]["path"], "/result/isError", "{judged:?}");

    // The faithful recordings checked: no such finding (the quirk was replay's doing).
    let checked = check_json(&dir.join("faithful/recordings"));
    let text = checked.report.to_string();
    assert!(!text.contains(RULE), "{text}");
}
