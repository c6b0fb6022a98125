//! MCP conversation state, live and offline: one conversation (initialize, initialized,
//! `tools/list` in two pages, a good and a bad `tools/call`, a call on a closed session,
//! DELETE) through the in-process proxy against a real loopback MCP upstream, recorded; the
//! conversation rules (state S) the live inspector wrote equal what `tooltap check` finds in
//! the recordings, violation by violation, `seq` included. A 2026-07-28 conversation
//! (`Mcp-Param-*` headers against the listed marks, an MRTR retry) likewise.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Value, json};

use crate::support::check::check_json;
use crate::support::client::exchange;
use crate::support::fixtures::{comparable, settle, sorted, violations_by_exchange};
use crate::support::upstream::{Received, Script, Upstream};
use crate::support::{TempDir, proxy, within};

mod credentials;
mod quirked;

const SESSION: &str = "sess-7f1c";

fn tools_page(first: bool) -> Value {
    if first {
        json!({"tools":[{"name":"get_weather_data","inputSchema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}}],"nextCursor":"page-2"})
    } else {
        json!({"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]})
    }
}

/// A small MCP server answering in SSE (the SDKs' default) or JSON bodies: answers by method; a call for "Oslo" drops its `structuredContent`, and
/// anything after the DELETE is still answered 200 (a stale session not refused).
fn answer(request: &Received, sse: bool) -> Script {
    if request.method == "DELETE" {
        return Script::full(200, "application/json", "");
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let result = match body["method"].as_str().unwrap_or_default() {
        "notifications/initialized" => return Script::full(202, "application/json", ""),
        "initialize" => {
            let result = json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"w","version":"1"}});
            return message(json!({"jsonrpc":"2.0","id":id,"result":result}), sse)
                .header("mcp-session-id", SESSION);
        }
        "tools/list" => tools_page(body.pointer("/params/cursor").is_none()),
        "tools/call" if body.pointer("/params/arguments/location") == Some(&json!("Oslo")) => {
            json!({"content":[{"type":"text","text":"4 C"}]})
        }
        "tools/call" => {
            json!({"content":[{"type":"text","text":"{\"temperature\":22.5}"}],"structuredContent":{"temperature":22.5}})
        }
        _ => json!({}),
    };
    message(json!({"jsonrpc":"2.0","id":id,"result":result}), sse)
}

/// One answer as the SDKs' default SSE stream (one `message` event), or as a JSON body.
fn message(value: Value, sse: bool) -> Script {
    if sse {
        Script::sse(
            &[&format!("event: message\ndata: {value}\n\n")],
            Duration::ZERO,
        )
    } else {
        Script::full(200, "application/json", &value.to_string())
    }
}

async fn send(addr: SocketAddr, method: &str, body: Option<Value>, session: bool) -> u16 {
    let mut builder = http::Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if session {
        builder = builder
            .header("mcp-session-id", SESSION)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let text = body.map(|b| b.to_string()).unwrap_or_default();
    let request = builder.body(Full::new(Bytes::from(text))).expect("request");
    exchange(addr, request).await.status.as_u16()
}

fn call(id: u64, location: &str, extra: Option<(&str, Value)>) -> Value {
    let mut arguments = json!({"location": location});
    if let Some((key, value)) = extra {
        arguments[key] = value;
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"get_weather_data","arguments":arguments}})
}

#[tokio::test]
async fn a_conversation_gets_equal_state_verdicts_live_and_from_its_recordings() {
    conversation(true).await;
}

#[tokio::test]
async fn a_conversation_answered_in_json_bodies_gets_the_same() {
    conversation(false).await;
}

async fn conversation(sse: bool) {
    let upstream = Upstream::start(move |request| answer(request, sse), None).await;
    let dir = TempDir::new("mcp-conversation");
    let recordings = dir.join("recordings");
    let violations = dir.join("violations.jsonl");
    let tooltap = proxy::start_recording(&upstream.url(), &violations, &recordings).await;
    let addr = tooltap.local_addr();
    let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let steps: Vec<(&str, Option<Value>, bool)> = vec![
        ("POST", Some(initialize), false),
        (
            "POST",
            Some(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
            true,
        ),
        (
            "POST",
            Some(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})),
            true,
        ),
        (
            "POST",
            Some(
                json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"page-2"}}),
            ),
            true,
        ),
        ("POST", Some(call(3, "Paris", None)), true),
        (
            "POST",
            Some(call(4, "Oslo", Some(("units", json!("metric"))))),
            true,
        ),
        (
            "POST",
            Some(
                json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_wether","arguments":{}}}),
            ),
            true,
        ),
        ("DELETE", None, true),
        (
            "POST",
            Some(json!({"jsonrpc":"2.0","id":6,"method":"ping"})),
            true,
        ),
    ];
    let count = steps.len() as u64;
    // The ping follows the DELETE's answer at once, sometimes within the millisecond the
    // DELETE began: the store compares times to the microsecond, live and in the recordings.
    for (method, body, session) in steps {
        within(Duration::from_secs(10), send(addr, method, body, session)).await;
    }
    let checked = live_equals_check(&tooltap, count, &violations, &recordings).await;
    // The session id is recorded as a pseudonym, in the headers and in the verdicts that quote it.
    for file in crate::support::temp::files_under(&recordings) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.contains(SESSION), "{file:?} holds the session id");
    }
    let mut state_rules = BTreeMap::new();
    for violation in checked.values().flatten() {
        let rule = violation["rule"].as_str().unwrap_or_default().to_owned();
        *state_rules.entry(rule).or_insert(0) += 1;
    }
    for rule in [
        "mcp.tools_call.arguments_schema",
        "mcp.tools_call.structured_content_missing",
        "mcp.tools_call.name_unlisted",
        "mcp.session.stale_not_404",
    ] {
        assert_eq!(state_rules.get(rule), Some(&1), "{rule} in {state_rules:?}");
    }
}

/// Waits until the proxy inspected `count` exchanges and wrote their recordings, runs
/// `tooltap check` on them and asserts that each exchange has the violations live that `check`
/// finds, `seq` included. Returns `check`'s (comparable) violations by exchange id.
pub(crate) async fn live_equals_check(
    tooltap: &tooltap::proxy::server::RunningProxy,
    count: u64,
    violations: &PathBuf,
    recordings: &Path,
) -> BTreeMap<String, Vec<Value>> {
    settle(tooltap, count).await;
    if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
        within(Duration::from_secs(20), recorder.flush()).await;
    }
    let live = violations_by_exchange(violations);
    let checked = check_json(recordings);
    assert!(checked.code <= 1, "check failed: {}", checked.stderr);
    let exchanges = checked.report["exchanges"].as_array().expect("exchanges");
    assert_eq!(exchanges.len() as u64, count, "one recording per exchange");
    let mut by_exchange = BTreeMap::new();
    for exchange in exchanges {
        let id = exchange["id"].as_str().expect("id");
        let offline: Vec<Value> = exchange["violations"]
            .as_array()
            .expect("violations")
            .iter()
            .map(|v| comparable(v, true))
            .collect();
        let online: Vec<Value> = live
            .get(id)
            .map(|l| l.iter().map(|v| comparable(v, true)).collect())
            .unwrap_or_default();
        assert_eq!(sorted(offline.clone()), sorted(online), "exchange {id}");
        by_exchange.insert(id.to_owned(), offline);
    }
    by_exchange
}

/// A 2026-07-28 server: one listed tool marks `location` for `Mcp-Param-Location`; `login`
/// asks for input (MRTR) until a retry brings `inputResponses`.
fn answer_v4(request: &Received) -> Script {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let result = match body["method"].as_str().unwrap_or_default() {
        "tools/list" => {
            json!({"resultType":"complete","ttlMs":300000,"cacheScope":"public","tools":[
                {"name":"get_weather_data","inputSchema":{"type":"object","properties":{"location":{"type":"string","x-mcp-header":"Location"}}}},
                {"name":"login","inputSchema":{"type":"object"}}]})
        }
        "tools/call"
            if body.pointer("/params/inputResponses").is_none()
                && body.pointer("/params/name") == Some(&json!("login")) =>
        {
            json!({"resultType":"input_required","inputRequests":{"github_login":{"method":"elicitation/create","params":{}}},"requestState":"state-1"})
        }
        _ => json!({"resultType":"complete","content":[{"type":"text","text":"ok"}]}),
    };
    message(json!({"jsonrpc":"2.0","id":id,"result":result}), false)
}

/// One 2026-07-28 POST of `body`, with the `Mcp-Method` (and, for a named call, `Mcp-Name`)
/// headers that version requires, plus `extra` headers; the answer's status.
pub(crate) async fn send_v4(addr: SocketAddr, body: Value, extra: &[(&str, String)]) -> u16 {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut builder = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = body.pointer("/params/name").and_then(Value::as_str) {
        builder = builder.header("mcp-name", name);
    }
    for (name, value) in extra {
        builder = builder.header(*name, value.as_str());
    }
    let request = builder
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    exchange(addr, request).await.status.as_u16()
}

#[tokio::test]
async fn param_headers_and_mrtr_retries_are_judged_live_as_check_judges_them() {
    let upstream = Upstream::start(answer_v4, None).await;
    let dir = TempDir::new("mcp-conversation-v4");
    let recordings = dir.join("recordings");
    let violations = dir.join("violations.jsonl");
    let tooltap = proxy::start_recording(&upstream.url(), &violations, &recordings).await;
    let addr = tooltap.local_addr();
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}});
    let call = |id: &str, name: &str, args: Value, more: Value| {
        let mut params = json!({"name":name,"arguments":args,"_meta":meta});
        if let (Some(params), Some(more)) = (params.as_object_mut(), more.as_object()) {
            params.extend(more.clone());
        }
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
    };
    let retry =
        json!({"inputResponses":{"github_login":{"action":"accept"}},"requestState":"state-1"});
    let steps: Vec<(Value, Option<&str>)> = vec![
        (
            json!({"jsonrpc":"2.0","id":"l-1","method":"tools/list","params":{"_meta":meta}}),
            None,
        ),
        (
            call(
                "c-1",
                "get_weather_data",
                json!({"location":"Paris"}),
                json!({}),
            ),
            Some("Paris"),
        ),
        (
            call(
                "c-2",
                "get_weather_data",
                json!({"location":"Paris"}),
                json!({}),
            ),
            Some("London"),
        ),
        (call("c-3", "login", json!({}), json!({})), None),
        (call("c-3", "login", json!({}), retry.clone()), None),
        (call("c-4", "login", json!({}), retry), None),
    ];
    let count = steps.len() as u64;
    for (body, param) in steps {
        let extra: Vec<(&str, String)> = param
            .map(|value| ("Mcp-Param-Location", value.to_owned()))
            .into_iter()
            .collect();
        let status = within(Duration::from_secs(10), send_v4(addr, body, &extra)).await;
        assert_eq!(status, 200);
    }
    let by_exchange = live_equals_check(&tooltap, count, &violations, &recordings).await;
    let mut fired = BTreeMap::new();
    for violation in by_exchange.values().flatten() {
        let rule = violation["rule"].as_str().unwrap_or_default().to_owned();
        *fired.entry(rule).or_insert(0) += 1;
    }
    assert_eq!(
        fired.get("mcp.http.param_header_mismatch"),
        Some(&1),
        "{fired:?}"
    );
    assert_eq!(
        fired.get("mcp.tools_call.retry_same_id"),
        Some(&1),
        "{fired:?}"
    );
    assert_eq!(fired.get("mcp.tools_call.input_responses_mismatch"), None);
}
