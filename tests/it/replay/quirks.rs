//! `tooltap replay --quirk` with real clients: the response says which quirk applied, the seed's
//! vitest suite fails on exactly its compatibility line under `args-as-object` (and passes
//! without it), and the official openai Python SDK does with a few quirks what docs/quirks.md's
//! table says; a Responses quirk rewrites a `/v1/responses` recording and a Chat quirk leaves it.

use std::process::Command;

use serde_json::{Value, json};
use tooltap::quirk::QuirkId;
use tooltap::replay::RunningReplay;

use crate::replay::clients::{assert_args_as_object_failure, run, seed_suite, vitest};
use crate::replay::support::{repo, settings, start};
use crate::support::clients::{python, python_script};

async fn replay_with(quirks: &[QuirkId]) -> RunningReplay {
    let mut settings = settings(&repo().join("recordings/examples"));
    settings.quirks = quirks.to_vec();
    start(&settings).await
}

fn seed_request(name: &str) -> Value {
    let path = repo().join("recordings/examples/seed").join(name);
    let text = std::fs::read_to_string(path).expect("seed example");
    let meta: Value = serde_json::from_str(text.lines().next().expect("meta line")).expect("json");
    meta["request"]["body"]["json"].clone()
}

/// One run of tests/clients/python/quirk_probe.py.
async fn python_probe(replay: &RunningReplay, mode: &str, request: &Value) -> Value {
    let mut command = Command::new(python());
    command
        .arg(python_script("quirk_probe.py"))
        .arg(format!("http://{}/v1", replay.local_addr()))
        .arg(mode)
        .arg(request.to_string());
    let (status, output) = run(command, "quirk-probe").await;
    assert!(status.success(), "the probe failed:\n{output}");
    let last = output.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {output}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_suite_fails_on_its_compatibility_line_under_args_as_object() {
    let dir = seed_suite();
    let clean = replay_with(&[]).await;
    let (status, output) = vitest(
        &dir,
        &format!("http://{}/v1", clean.local_addr()),
        "gpt-4o-mini",
    )
    .await;
    assert!(
        status.success(),
        "no quirk: the seed suite must pass:\n{output}"
    );

    let broken = replay_with(&[QuirkId::ArgsAsObject]).await;
    let (status, output) = vitest(
        &dir,
        &format!("http://{}/v1", broken.local_addr()),
        "gpt-4o-mini",
    )
    .await;
    assert!(
        !status.success(),
        "args-as-object: the seed suite passed:\n{output}"
    );
    assert_args_as_object_failure(&output);
    // The compatibility line itself.
    assert!(
        output.contains("expect(typeof call.function.arguments).toBe(\"string\")"),
        "{output}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_meets_a_few_quirks_as_documented() {
    let buffered = seed_request("forced-buffered.jsonl");
    let streamed = seed_request("required-stream.jsonl");

    let replay = replay_with(&[QuirkId::ArgsAsObject]).await;
    let got = python_probe(&replay, "create", &buffered).await;
    assert_eq!(got["outcome"], "returned", "{got}");
    assert_eq!(
        got["calls"][0]["arguments"],
        json!({"non_string": "dict", "value": {"city": "Paris", "unit": "c"}}),
        "the SDK hands the object through: {got}"
    );

    let replay = replay_with(&[QuirkId::ErrorEventMidstream]).await;
    let got = python_probe(&replay, "stream-helper", &streamed).await;
    assert_eq!(got["outcome"], "raised", "{got}");
    assert!(
        got["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("APIError: ")),
        "{got}"
    );

    let replay = replay_with(&[QuirkId::UsageChunkWithoutChoices]).await;
    let got = python_probe(&replay, "create-stream", &streamed).await;
    assert!(
        got["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("TypeError: ")),
        "{got}"
    );

    // done-missing: the SDK copes; the same two calls as the healthy stream.
    let clean = replay_with(&[]).await;
    let healthy = python_probe(&clean, "stream-helper", &streamed).await;
    let replay = replay_with(&[QuirkId::DoneMissing]).await;
    let got = python_probe(&replay, "stream-helper", &streamed).await;
    assert_eq!(got, healthy);
    assert_eq!(
        healthy["calls"].as_array().map(Vec::len),
        Some(2),
        "{healthy}"
    );
}

#[tokio::test]
async fn the_response_names_the_quirks_that_applied_and_those_that_did_not() {
    let replay = replay_with(&[QuirkId::ArgsAsObject, QuirkId::DoneMissing]).await;
    let received = crate::replay::support::post_json(
        replay.local_addr(),
        &seed_request("forced-buffered.jsonl"),
    )
    .await;
    assert_eq!(received.header("x-tooltap-quirk"), "args-as-object");
    assert_eq!(
        received.header("x-tooltap-quirk-not-applicable"),
        "done-missing"
    );
    let body = received.json();
    assert!(body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].is_object());
}

#[tokio::test]
async fn a_quirk_applies_to_recordings_of_its_own_dialect_only() {
    let dir = crate::replay::support::TempDir::new("quirk-dialect");
    let fixture = |name: &str, file: &str| {
        let path = repo().join("tests/fixtures").join(name).join(file);
        std::fs::read_to_string(path).expect("fixture")
    };
    let request: Value =
        serde_json::from_str(&fixture("responses_pair_parallel_json", "request.json"))
            .expect("request");
    let response: Value =
        serde_json::from_str(&fixture("responses_pair_parallel_json", "response.json"))
            .expect("response");
    crate::replay::support::Fixture::json(request.clone(), &response).write_at(
        dir.path(),
        "responses.jsonl",
        "/v1/responses",
    );
    let mut settings = settings(dir.path());
    settings.quirks = vec![QuirkId::ResponsesArgsAsObject, QuirkId::ArgsAsObject];
    let replay = start(&settings).await;
    let body = serde_json::to_vec(&request).expect("json");
    let received = crate::replay::support::post(replay.local_addr(), "/v1/responses", &body).await;
    assert_eq!(
        received.header("x-tooltap-quirk"),
        "responses-args-as-object"
    );
    assert_eq!(
        received.header("x-tooltap-quirk-not-applicable"),
        "args-as-object"
    );
    let body = received.json();
    assert_eq!(body["output"][0]["arguments"], json!({"location": "Paris"}));
}
