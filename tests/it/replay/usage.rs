//! Per-cassette turns, `POST /__tooltap/reset`, `GET /__tooltap/usage` and `--fail-on-unused`,
//! on the real binary with the openai SDK: a cassette with two identical requests answers its
//! recordings in order, a reset starts it over, the usage report names the recording no test
//! used, and that fails the run with `--fail-on-unused` (and only then).

use std::net::SocketAddr;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::replay::cassettes::{LOOP, OTHER, replay, replay_args, sdk};
use crate::replay::support::{Fixture, Received, TempDir, chat, send};

fn answer(content: &str) -> Value {
    json!({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": content}}]})
}

/// The SDK's request for `content` (the body `cassette_chat.py` sends).
pub fn sdk_request(content: &str) -> Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]})
}

/// LOOP: `weather?` twice (answers `first`, then `second`) and `thanks`; OTHER: `weather?`.
pub fn recordings() -> TempDir {
    let dir = TempDir::new("usage");
    let write = |name: &str, cassette: &str, content: &str, reply: &str| {
        Fixture::json(sdk_request(content), &answer(reply)).write_in_cassette(
            dir.path(),
            name,
            cassette,
        );
    };
    write("loop/1.jsonl", LOOP, "weather?", "first");
    write("loop/2.jsonl", LOOP, "weather?", "second");
    write("loop/3.jsonl", LOOP, "thanks", "welcome");
    write("other/1.jsonl", OTHER, "weather?", "other");
    dir
}

async fn admin(addr: SocketAddr, method: Method, path: &str, cassette: Option<&str>) -> Received {
    let headers: Vec<(&str, &str)> = cassette
        .map(|c| ("x-tooltap-cassette", c))
        .into_iter()
        .collect();
    send(addr, method, path, b"", &headers).await
}

#[tokio::test]
async fn a_cassette_replays_in_order_resets_and_reports_the_recording_never_used() {
    let dir = recordings();
    let mut server = replay(&replay_args(dir.path(), &["--fail-on-unused"])).await;
    let addr = server.addr;
    let first = sdk(
        addr,
        &[
            (Some(LOOP), "weather?"),
            (Some(LOOP), "weather?"),
            (Some(OTHER), "weather?"),
            (Some(LOOP), "not recorded"),
        ],
    )
    .await;
    let contents: Vec<&Value> = first.iter().map(|r| &r["content"]).collect();
    assert_eq!(
        contents[..3],
        [&json!("first"), &json!("second"), &json!("other")]
    );
    assert_eq!(first[3]["status"], 404, "{first:?}");

    let reset = admin(addr, Method::POST, "/__tooltap/reset", Some(LOOP)).await;
    assert_eq!(reset.status, StatusCode::OK);
    assert_eq!(reset.json(), json!({"reset": LOOP, "recordings": 3}));
    let again = sdk(addr, &[(Some(LOOP), "weather?")]).await;
    assert_eq!(again[0]["content"], "first", "{again:?}");

    let usage = admin(addr, Method::GET, "/__tooltap/usage", None).await;
    assert_eq!(usage.status, StatusCode::OK);
    let usage = usage.json();
    assert_eq!(
        (
            &usage["recordings"],
            &usage["hits"],
            &usage["misses"],
            &usage["unused"]
        ),
        (&json!(4), &json!(4), &json!(1), &json!(1)),
        "{usage}"
    );
    let by_name: Vec<&Value> = usage["cassettes"]
        .as_array()
        .expect("cassettes")
        .iter()
        .collect();
    assert_eq!(
        by_name[1],
        &json!({"cassette": LOOP, "recordings": 3, "hits": 3, "misses": 1,
            "unused": ["loop/3.jsonl"]}),
        "{usage}"
    );
    // The prefix is tooltap's: nothing under it is matched or forwarded.
    let wrong_method = admin(addr, Method::GET, "/__tooltap/reset", None).await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    let unknown = admin(addr, Method::POST, "/__tooltap/v1/chat/completions", None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json()["error"]["code"], "unknown_admin_path");

    let status = server.stop().await;
    assert_eq!(
        status.code(),
        Some(1),
        "--fail-on-unused with one unused: {:?}",
        server.log
    );
    let log = server.log.join("\n");
    assert!(log.contains("recordings never used"), "{log}");
    assert!(log.contains("loop/3.jsonl"), "{log}");
    assert!(
        log.contains("1 recordings were never used (--fail-on-unused)"),
        "{log}"
    );
}

#[tokio::test]
async fn fail_on_unused_passes_when_every_recording_answered() {
    let dir = recordings();
    let mut server = replay(&replay_args(dir.path(), &["--fail-on-unused"])).await;
    for (cassette, content) in [
        (LOOP, "weather?"),
        (LOOP, "weather?"),
        (LOOP, "thanks"),
        (OTHER, "weather?"),
    ] {
        let body = sdk_request(content).to_string();
        let got = send(
            server.addr,
            Method::POST,
            "/v1/chat/completions",
            body.as_bytes(),
            &[("x-tooltap-cassette", cassette)],
        )
        .await;
        assert_eq!(got.status, StatusCode::OK, "{cassette} {content}");
    }
    // A miss alone does not fail the run: it failed its test already.
    let missed = send(
        server.addr,
        Method::POST,
        "/v1/chat/completions",
        chat("never").to_string().as_bytes(),
        &[],
    )
    .await;
    assert_eq!(missed.status, StatusCode::NOT_FOUND);
    let status = server.stop().await;
    assert!(status.success(), "{:?}", server.log);
}
