//! The official SDKs' MCP servers and clients through `tooltap proxy`: the Python SDK server
//! (`mcp` 2.x) in its four transport modes and the TypeScript SDK 1.x server in two, each
//! listed and called by every client (the Python `Client` in legacy and auto modes, the OpenAI
//! Agents SDK, the TypeScript `Client`), get exactly what they get direct.

use serde_json::Value;

use super::{ALL_CLIENTS, McpClient, round_trip};
use crate::support::mcp::{start_python_server, start_ts_server};

/// What every client must have got from the weather servers: three tools sorted by name, only
/// `get_alert_text` without an `outputSchema`; `get_weather_data`'s `structuredContent`,
/// `get_alert_text`'s text, and `check_station`'s `isError` result.
fn assert_weather_answers(client: McpClient, got: &Value) {
    let names: Vec<&str> = got["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["check_station", "get_alert_text", "get_weather_data"],
        "{client:?}: {got}"
    );
    assert!(got["tools"][1].get("outputSchema").is_none(), "{got}");
    assert_eq!(got["tools"][2]["outputSchema"]["type"], "object", "{got}");
    let calls = &got["calls"];
    assert_eq!(calls[0]["structuredContent"]["location"], "Paris", "{got}");
    assert_eq!(calls[0]["structuredContent"]["humidity"], 40, "{got}");
    assert_eq!(
        calls[1]["content"][0]["text"], "No alert of severity 2 or more in Brittany.",
        "{got}"
    );
    assert!(calls[1].get("structuredContent").is_none(), "{got}");
    assert_eq!(calls[2]["isError"], true, "{client:?}: {got}");
}

/// The Python server in `body` and `state` mode, every client direct and through tooltap.
async fn python_server_round_trip(body: &str, state: &str) -> Vec<String> {
    let server = start_python_server(body, state).await;
    let trip = round_trip(&server, &ALL_CLIENTS).await;
    for (client, got) in ALL_CLIENTS.iter().zip(&trip.got) {
        assert_weather_answers(*client, got);
    }
    trip.requests
}

/// A stateful server's requests through tooltap include the legacy clients' GET streams and
/// their DELETEs, answered 200.
fn assert_get_and_delete(requests: &[String]) {
    for line in ["GET /mcp 200", "DELETE /mcp 200"] {
        assert!(
            requests.iter().any(|r| r == line),
            "no {line} through tooltap: {requests:?}"
        );
    }
}

/// A stateless server mints no session, so no client ends one with a DELETE.
fn assert_no_delete(requests: &[String]) {
    assert!(
        requests.iter().all(|r| !r.starts_with("DELETE ")),
        "{requests:?}"
    );
}

#[tokio::test]
async fn the_python_sdk_server_json_stateful_answers_every_client_the_same_through_tooltap() {
    let requests = python_server_round_trip("json", "stateful").await;
    assert_get_and_delete(&requests);
}

#[tokio::test]
async fn the_python_sdk_server_sse_stateful_answers_every_client_the_same_through_tooltap() {
    let requests = python_server_round_trip("sse", "stateful").await;
    assert_get_and_delete(&requests);
}

#[tokio::test]
async fn the_python_sdk_server_json_stateless_answers_every_client_the_same_through_tooltap() {
    let requests = python_server_round_trip("json", "stateless").await;
    assert_no_delete(&requests);
}

#[tokio::test]
async fn the_python_sdk_server_sse_stateless_answers_every_client_the_same_through_tooltap() {
    let requests = python_server_round_trip("sse", "stateless").await;
    assert_no_delete(&requests);
}

#[tokio::test]
async fn the_typescript_sdk_server_answers_every_client_the_same_through_tooltap() {
    for body in ["sse", "json"] {
        let server = start_ts_server(body).await;
        let trip = round_trip(&server, &ALL_CLIENTS).await;
        for (client, got) in ALL_CLIENTS.iter().zip(&trip.got) {
            assert_weather_answers(*client, got);
        }
        assert_get_and_delete(&trip.requests);
    }
}
