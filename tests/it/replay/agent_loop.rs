//! An agent loop through a real replay server: the second turn's request carries the tool-call
//! id the framework invented (as pydantic-ai and the AI SDK do when an upstream sends none), so
//! strict matching misses, naming the same turn's recording (not the previous turn's, which is
//! a prefix of the conversation) and the exact leaf pointers, while
//! `--match-tool-call-ids loose` and a wildcard `--ignore` hit.

use serde_json::{Value, json};
use tooltap::replay::{MatchRules, ToolCallIds};

use crate::replay::support::{Fixture, TempDir, post_json, settings, start};

const USER: &str = "Weather in Paris?";

fn request(messages: Vec<Value>) -> Value {
    json!({"model": "gpt-4o-mini", "messages": messages, "tools": [{"type": "function",
        "function": {"name": "weather", "parameters": {"type": "object"}}}]})
}

fn first_turn() -> Value {
    request(vec![json!({"role": "user", "content": USER})])
}

fn second_turn(call_id: &str) -> Value {
    request(vec![
        json!({"role": "user", "content": USER}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": call_id,
            "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]}),
        json!({"role": "tool", "tool_call_id": call_id, "content": "sunny"}),
    ])
}

fn answer(message: Value, finish: &str) -> Value {
    json!({"id": "c", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
}

/// Turn 1 (`a-turn-1.jsonl`, sorting first by name) and turn 2 (`b-turn-2.jsonl`), recorded
/// with the id `call_recorded`.
fn recordings() -> TempDir {
    let dir = TempDir::new("agent-loop");
    let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_recorded",
        "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]});
    Fixture::json(first_turn(), &answer(call, "tool_calls")).write(dir.path(), "a-turn-1.jsonl");
    let done = json!({"role": "assistant", "content": "Sunny in Paris."});
    Fixture::json(second_turn("call_recorded"), &answer(done, "stop"))
        .write(dir.path(), "b-turn-2.jsonl");
    dir
}

#[tokio::test]
async fn an_invented_tool_call_id_misses_strict_naming_the_same_turn_and_hits_loose() {
    let dir = recordings();
    let replay = start(&settings(dir.path())).await;
    let first = post_json(replay.local_addr(), &first_turn()).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("x-tooltap-recording"), "a-turn-1.jsonl");

    let missed = post_json(replay.local_addr(), &second_turn("pyd_ai_1f0c")).await;
    assert_eq!(missed.status, 404);
    let message = missed.json()["error"]["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(
        message.contains(
            "closest recording: b-turn-2.jsonl, which differs at \
             /messages/1/tool_calls/0/id, /messages/2/tool_call_id;"
        ),
        "{message}"
    );
    assert!(
        message.contains(
            "next closest recording: a-turn-1.jsonl, which differs at /messages/1, /messages/2"
        ),
        "{message}"
    );
    assert!(message.contains("--match-tool-call-ids loose"), "{message}");
    replay.shutdown().await.expect("shutdown");

    let mut loose = settings(dir.path());
    loose.rules = MatchRules::default().with_tool_call_ids(ToolCallIds::Loose);
    let replay = start(&loose).await;
    for invented in ["pyd_ai_1f0c", "aisdk-77"] {
        let hit = post_json(replay.local_addr(), &second_turn(invented)).await;
        assert_eq!(hit.status, 200, "{invented}: {:?}", hit.json());
        assert_eq!(hit.header("x-tooltap-recording"), "b-turn-2.jsonl");
        assert_eq!(
            hit.json()["choices"][0]["message"]["content"],
            "Sunny in Paris."
        );
    }
    replay.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn wildcard_ignores_reach_every_message_and_call() {
    let dir = recordings();
    let mut wildcards = settings(dir.path());
    let pointers = [
        "/messages/*/tool_calls/*/id".to_owned(),
        "/messages/*/tool_call_id".to_owned(),
    ];
    wildcards.rules = MatchRules::new(true, &pointers).expect("rules");
    let replay = start(&wildcards).await;
    let hit = post_json(replay.local_addr(), &second_turn("aisdk-77")).await;
    assert_eq!(hit.status, 200, "{:?}", hit.json());
    assert_eq!(hit.header("x-tooltap-recording"), "b-turn-2.jsonl");
    // Anything else still counts: another city is a miss.
    let mut other = second_turn("aisdk-77");
    other["messages"][0]["content"] = json!("Weather in Oslo?");
    let missed = post_json(replay.local_addr(), &other).await;
    assert_eq!(missed.status, 404);
    replay.shutdown().await.expect("shutdown");
}
