//! The agent-loop acceptance with a real framework: pydantic-ai (over the openai SDK) against an
//! upstream that sends no tool-call ids (an empty `id`), so pydantic-ai invents one per run. Captured once
//! through `replay --on-miss forward` under a cassette, the loop then replays offline: strict
//! matching misses the second turn, naming that turn's recording and the two id pointers and
//! suggesting `--match-tool-call-ids loose`; with it, or with wildcard `--ignore`s, the second
//! turn hits and the agent ends with the recorded answer.

use std::time::Duration;

use serde_json::{Value, json};

use crate::replay::cassettes::{replay, replay_args};
use crate::support::TempDir;
use crate::support::clients::{run_python, script_json};
use crate::support::temp::jsonl_under;
use crate::support::upstream::{Received, Script, Upstream};

const CASSETTE: &str = "tests/test_agent.py::test_weather";
const ANSWER: &str = "It is sunny in Paris.";

/// Turn 1: a `weather` tool call whose id is empty (as some OpenAI-compatible servers send it;
/// a `null` id fails pydantic-ai's validation); turn 2 (a `tool` message present): the answer.
async fn idless_upstream() -> Upstream {
    Upstream::start(
        |request: &Received| {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let answered = body["messages"]
                .as_array()
                .is_some_and(|messages| messages.iter().any(|m| m["role"] == "tool"));
            let message = if answered {
                json!({"role": "assistant", "content": ANSWER})
            } else {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "",
                    "type": "function", "function": {"name": "weather",
                    "arguments": "{\"city\":\"Paris\"}"}}]})
            };
            let finish = if answered { "stop" } else { "tool_calls" };
            let reply = json!({"id": "c", "object": "chat.completion", "created": 1,
                "model": "gpt-4o-mini", "choices": [{"index": 0, "message": message,
                "finish_reason": finish}]});
            Script::full(200, "application/json", &reply.to_string())
        },
        None,
    )
    .await
}

async fn agent(addr: std::net::SocketAddr) -> Value {
    let base_url = format!("http://{addr}/v1");
    let args = [base_url.as_str(), CASSETTE];
    let output = run_python("pydantic_ai_loop.py", &args, Duration::from_secs(90)).await;
    script_json(&output, "pydantic-ai", &base_url)
}

/// One agent run against a replay server started with `extra` flags.
async fn run_with(dir: &std::path::Path, extra: &[&str]) -> Value {
    let mut server = replay(&replay_args(dir, extra)).await;
    let result = agent(server.addr).await;
    server.stop_and_drain().await;
    result
}

#[tokio::test]
async fn pydantic_ais_invented_tool_call_ids_miss_strict_and_hit_loose_or_wildcards() {
    let upstream = idless_upstream().await;
    let dir = TempDir::new("pydantic-ai");
    let url = upstream.url();
    let captured = run_with(dir.path(), &["--on-miss", "forward", "--upstream", &url]).await;
    assert_eq!(captured["output"], ANSWER, "{captured}");
    let first_ids = captured["tool_call_ids"].clone();
    let mut files = jsonl_under(dir.path());
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let turn_two = files[1]
        .strip_prefix(dir.path())
        .expect("under")
        .to_string_lossy()
        .into_owned();
    assert!(turn_two.starts_with("tests/test_agent.py/test_weather/"));

    let strict = run_with(dir.path(), &[]).await;
    assert_eq!(strict["status"], 404, "{strict}");
    let message = strict["error"].as_str().expect("message");
    assert!(
        message.contains(&format!(
            "closest recording: {turn_two}, which differs at /messages/1/tool_calls/0/id, \
             /messages/2/tool_call_id;"
        )),
        "{message}"
    );
    assert!(message.contains("--match-tool-call-ids loose"), "{message}");

    let loose = run_with(dir.path(), &["--match-tool-call-ids", "loose"]).await;
    assert_eq!(loose["output"], ANSWER, "{loose}");
    assert_ne!(
        loose["tool_call_ids"], first_ids,
        "pydantic-ai invents new ids per run"
    );

    let wildcards = [
        "--ignore",
        "/messages/*/tool_calls/*/id",
        "--ignore",
        "/messages/*/tool_call_id",
    ];
    let ignored = run_with(dir.path(), &wildcards).await;
    assert_eq!(ignored["output"], ANSWER, "{ignored}");
}
