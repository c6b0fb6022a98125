//! Matching over HTTP: a miss is a 404 in the OpenAI error shape naming the closest recording
//! and the differing pointers; equal requests get their recordings in turn; key order and the
//! default-ignored fields do not matter; `/model` counts unless ignored.

use serde_json::json;

use crate::replay::support::{
    Fixture, LIMIT, TempDir, chat, post, post_json, settings, start, within,
};

fn answer(text: &str) -> serde_json::Value {
    json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
}

#[tokio::test]
async fn a_miss_is_a_404_naming_the_closest_recording_and_the_differences() {
    let dir = TempDir::new("miss");
    Fixture::json(chat("Weather in Paris."), &answer("a")).write(dir.path(), "paris.jsonl");
    Fixture::json(json!({"unrelated": true}), &answer("b")).write(dir.path(), "other.jsonl");
    let replay = start(&settings(dir.path())).await;

    let mut sent = chat("Weather in Oslo.");
    sent["temperature"] = json!(0.2);
    let received = post_json(replay.local_addr(), &sent).await;

    assert_eq!(received.status, 404);
    assert_eq!(received.header("content-type"), "application/json");
    let error = &received.json()["error"];
    assert_eq!(error["type"], "tooltap_error");
    assert_eq!(error["code"], "replay_no_match");
    let message = error["message"].as_str().expect("message");
    assert!(message.contains("POST /v1/chat/completions"), "{message}");
    assert!(
        message.contains("closest recording: paris.jsonl"),
        "{message}"
    );
    assert!(
        message.contains("/messages/0/content, /temperature"),
        "{message}"
    );

    let wrong_path = post(
        replay.local_addr(),
        "/v1/embeddings",
        chat("Weather in Paris.").to_string().as_bytes(),
    )
    .await;
    assert_eq!(wrong_path.status, 404);
    let message = wrong_path.json()["error"]["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(
        message.contains("path (recorded /v1/chat/completions)"),
        "{message}"
    );
}

#[tokio::test]
async fn repeated_requests_get_their_recordings_in_turn() {
    let dir = TempDir::new("turns");
    // Natural file-name order: call-2 before call-10.
    Fixture::json(chat("again"), &answer("second")).write(dir.path(), "call-10.jsonl");
    Fixture::json(chat("again"), &answer("first")).write(dir.path(), "call-2.jsonl");
    let replay = start(&settings(dir.path())).await;

    let mut served = Vec::new();
    for _ in 0..3 {
        let received = post_json(replay.local_addr(), &chat("again")).await;
        assert_eq!(received.status, 200);
        let content = received.json()["choices"][0]["message"]["content"].clone();
        served.push((received.header("x-tooltap-recording").to_owned(), content));
    }
    assert_eq!(
        served,
        [
            ("call-2.jsonl".to_owned(), json!("first")),
            ("call-10.jsonl".to_owned(), json!("second")),
            ("call-2.jsonl".to_owned(), json!("first")),
        ]
    );
}

#[tokio::test]
async fn key_order_and_default_ignored_fields_do_not_matter_but_the_model_does() {
    let dir = TempDir::new("ignore");
    Fixture::json(chat("hello"), &answer("hi")).write(dir.path(), "hello.jsonl");
    let replay = start(&settings(dir.path())).await;
    let reordered = br#"{"max_tokens":16,"user":"u-42","seed":7,"metadata":{"run":"x"},
        "messages":[{"content":"hello","role":"user"}],"model":"gpt-4o-mini"}"#;
    let received = post(replay.local_addr(), crate::replay::support::CHAT, reordered).await;
    assert_eq!(received.status, 200, "{:?}", received.json());

    let mut other_model = chat("hello");
    other_model["model"] = json!("llama-3.1-8b");
    let missed = post_json(replay.local_addr(), &other_model).await;
    assert_eq!(missed.status, 404);
    let message = missed.json()["error"]["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(message.ends_with("differs at /model"), "{message}");
    replay.shutdown().await.expect("shutdown");

    let mut ignoring = settings(dir.path());
    ignoring.rules = tooltap::replay::MatchRules::new(true, &["/model".into()]).expect("rules");
    let replay = start(&ignoring).await;
    let received = post_json(replay.local_addr(), &other_model).await;
    assert_eq!(received.status, 200);
}

#[tokio::test]
async fn an_oversized_request_body_is_refused_with_413() {
    let dir = TempDir::new("large");
    Fixture::json(chat("small"), &answer("ok")).write(dir.path(), "small.jsonl");
    let mut settings = settings(dir.path());
    settings.max_request_body = 256;
    let replay = start(&settings).await;
    let big = chat(&"x".repeat(1_000));
    let received = post_json(replay.local_addr(), &big).await;
    assert_eq!(received.status, 413);
    assert_eq!(received.json()["error"]["code"], "request_too_large");
    let small = post_json(replay.local_addr(), &chat("small")).await;
    assert_eq!(small.status, 200);
}

/// GET `path` on a fresh connection: the status, the content type and the body.
async fn probe(addr: std::net::SocketAddr, path: &str) -> (u16, String, bytes::Bytes) {
    let (mut sender, driver) = crate::replay::support::connect(addr).await;
    let request = http::Request::get(path)
        .header("host", addr.to_string())
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .expect("request");
    let response = within(LIMIT, sender.send_request(request))
        .await
        .expect("response");
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let body = within(
        LIMIT,
        http_body_util::BodyExt::collect(response.into_body()),
    )
    .await
    .expect("body")
    .to_bytes();
    driver.abort();
    (status, content_type, body)
}

#[tokio::test]
async fn health_and_readiness_probes_are_answered_not_matched() {
    let dir = TempDir::new("healthz");
    Fixture::json(chat("Weather in Paris."), &answer("a")).write(dir.path(), "paris.jsonl");
    let replay = start(&settings(dir.path())).await;
    for (path, answer) in [("/healthz", "ok\n"), ("/readyz", "ready\n")] {
        let (status, content_type, body) = probe(replay.local_addr(), path).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(content_type, "text/plain; charset=utf-8");
        assert_eq!(body, answer, "{path}");
    }
    let received = post(replay.local_addr(), "/readyz", b"").await;
    assert_eq!(
        received.status, 404,
        "a POST is a request to match, not a probe"
    );
    // What the shutdown future does first, before the listener drains.
    replay
        .state()
        .accepting
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let (status, _, body) = probe(replay.local_addr(), "/readyz").await;
    assert_eq!((status, &body[..]), (503, &b"shutting down\n"[..]));
    assert_eq!(probe(replay.local_addr(), "/healthz").await.0, 200);
}
