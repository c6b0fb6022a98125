//! `GET /__tooltap/verdicts`, what a test harness asks after each test: on the proxy's admin
//! listener (in process) and on `tooltap replay`'s own port (the real binary), the exchange a
//! client holds the id of (its `x-tooltap-exchange` header) answers `judged` with the rule it
//! broke, a clean one `judged` with none, an id the server never saw `unknown`, and a broken
//! query 400.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::replay::cassettes::{replay, replay_args};
use crate::replay::support::{Fixture, TempDir, send};
use crate::support::client::{exchange, request};
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};

/// A Chat Completions answer whose tool call's arguments are an object, not a JSON string:
/// `tool_call.arguments_not_string` (error).
fn broken_answer() -> Value {
    json!({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
        "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}}]})
}

fn clean_answer() -> Value {
    json!({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "hello"}}]})
}

fn chat_request(content: &str) -> Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]})
}

/// The one answer line of `verdicts` for `id`.
fn line<'a>(verdicts: &'a Value, id: &str) -> &'a Value {
    verdicts["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .find(|line| line["exchange"] == id)
        .unwrap_or_else(|| panic!("{id} answered: {verdicts}"))
}

fn assert_broken_and_clean(verdicts: &Value, broken: &str, clean: &str) {
    let broken = line(verdicts, broken);
    assert_eq!(broken["state"], "judged", "{verdicts}");
    assert_eq!(
        broken["violations"][0]["rule"], "tool_call.arguments_not_string",
        "{verdicts}"
    );
    assert_eq!(broken["violations"][0]["severity"], "error");
    assert_eq!(
        broken["violations"][0]["path"],
        "/choices/0/message/tool_calls/0/function/arguments"
    );
    let clean = line(verdicts, clean);
    assert_eq!(
        (&clean["state"], &clean["violations"]),
        (&json!("judged"), &json!([])),
        "{verdicts}"
    );
    assert_eq!(line(verdicts, "never-seen")["state"], "unknown");
}

#[tokio::test]
async fn the_proxy_admin_listener_answers_each_exchange_verdict() {
    let broken_upstream = Upstream::serving(Script::full(
        200,
        "application/json",
        &broken_answer().to_string(),
    ))
    .await;
    let clean_upstream = Upstream::serving(Script::full(
        200,
        "application/json",
        &clean_answer().to_string(),
    ))
    .await;
    let mut raw = proxy::raw_config(&broken_upstream.url());
    raw.routes = vec![proxy::route("clean", "/clean", &clean_upstream.url())];
    let tooltap = proxy::start(raw).await;
    let (addr, admin) = (tooltap.local_addr(), tooltap.admin_addr().expect("admin"));
    let body = chat_request("weather?").to_string();
    let mut ids = Vec::new();
    for path in ["/v1/chat/completions", "/clean/v1/chat/completions"] {
        let got = exchange(addr, request(addr, "POST", path, &body)).await;
        assert_eq!(got.status, StatusCode::OK);
        let id = got.headers["x-tooltap-exchange"].to_str().expect("id");
        ids.push(id.to_owned());
    }
    // Asked the moment the responses are in: the wait covers inspections still running.
    let query = format!(
        "/__tooltap/verdicts?exchange={}&exchange={}&exchange=never-seen&wait_ms=10000",
        ids[0], ids[1]
    );
    let got = exchange(admin, request(admin, "GET", &query, "")).await;
    assert_eq!(got.status, StatusCode::OK);
    let verdicts: Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_broken_and_clean(&verdicts, &ids[0], &ids[1]);

    let bad = "/__tooltap/verdicts?wait_ms=soon";
    let got = exchange(admin, request(admin, "GET", bad, "")).await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn replay_answers_each_exchange_verdict_on_its_own_port() {
    let dir = TempDir::new("verdict-board");
    Fixture::json(chat_request("broken?"), &broken_answer()).write_in_cassette(
        dir.path(),
        "t/broken.jsonl",
        "t",
    );
    Fixture::json(chat_request("clean?"), &clean_answer()).write_in_cassette(
        dir.path(),
        "t/clean.jsonl",
        "t",
    );
    let mut server = replay(&replay_args(dir.path(), &[])).await;
    let mut ids = Vec::new();
    for content in ["broken?", "clean?"] {
        let body = chat_request(content).to_string();
        let got = send(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            body.as_bytes(),
            &[("x-tooltap-cassette", "t")],
        )
        .await;
        assert_eq!(got.status, StatusCode::OK, "{content}");
        ids.push(
            got.headers["x-tooltap-exchange"]
                .to_str()
                .expect("id")
                .to_owned(),
        );
    }
    let query = format!(
        "/__tooltap/verdicts?exchange={}&exchange={}&exchange=never-seen&wait_ms=10000",
        ids[0], ids[1]
    );
    let got = send(server.addr, Method::GET, &query, b"", &[]).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_broken_and_clean(&got.json(), &ids[0], &ids[1]);
    let wrong = send(server.addr, Method::POST, "/__tooltap/verdicts", b"", &[]).await;
    assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(server.stop().await.success(), "{:?}", server.log);
}
