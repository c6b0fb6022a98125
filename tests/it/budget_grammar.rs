//! Grammars and patterns under attack, through the real proxy and a real upstream: custom tools
//! declaring thousands of distinct regex grammars, a small cached array of custom tools sent
//! again and again, and a backtracking `pattern` over thousands of strings. The attacks end
//! `schema_budget` (never a violation), the clients get every byte, and a normal request made
//! during them is not delayed.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::budget::{attack_ended_in_budget_only, completion};
use crate::support::client::{exchange, request};
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;

const LIMIT: Duration = Duration::from_secs(60);

/// `count` Chat custom tools `c{k}`, each with the 9-byte-ish grammar `\w{9}{k}` (half a
/// megabyte of automaton apiece, Unicode word classes).
fn custom_tools(count: usize) -> Value {
    Value::Array(
        (0..count)
            .map(|k| {
                json!({"type":"custom","custom":{"name":format!("c{k}"),"format":{"type":"grammar",
                    "grammar":{"syntax":"regex","definition":format!("\\w{{9}}{k}")}}}})
            })
            .collect(),
    )
}

fn chat(tools: &Value) -> String {
    json!({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":tools}).to_string()
}

/// A buffered completion with one custom tool call.
fn custom_call(name: &str, input: &str) -> String {
    json!({"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,
        "finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
            {"id":"call_0","type":"custom","custom":{"name":name,"input":input}}]}}]})
    .to_string()
}

fn backtracking() -> Value {
    json!([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{
        "s":{"type":"array","items":{"type":"string","pattern":"^(?:(a)\\1?)*$"}}}}}}])
}

fn strings() -> String {
    let strings: Vec<String> = (0..7_000).map(|_| format!("{}b", "a".repeat(21))).collect();
    json!({ "s": strings }).to_string()
}

async fn scripted_upstream() -> Upstream {
    Upstream::start(
        |received| {
            let body = String::from_utf8_lossy(&received.body);
            let answer = if body.contains("c1499") {
                custom_call("c1499", "abcdefghi1499")
            } else if body.contains("c54") {
                custom_call("c0", "abcdefghi0")
            } else if body.contains("pattern") {
                completion(&[("f", strings())])
            } else {
                completion(&[("f", r#"{"city":"Paris"}"#.to_owned())])
            };
            Script::full(200, "application/json", &answer)
        },
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_grammars_and_backtracking_patterns_end_as_schema_budget_and_never_delay_a_normal_request()
 {
    let upstream = scripted_upstream().await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let bodies = [
        chat(&custom_tools(1_500)),
        chat(&backtracking()),
        chat(&custom_tools(55)),
    ];
    let attacks: Vec<_> = (0..6)
        .map(|n| {
            let body = bodies[n % 3].clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for _ in 0..3 {
                    let req = request(addr, "POST", "/v1/chat/completions", &body);
                    answers.push(exchange(addr, req).await);
                }
                answers
            })
        })
        .collect();
    let normal = chat(
        &json!([{"type":"function","function":{"name":"f","parameters":{
        "type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]),
    );
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let req = request(addr, "POST", "/v1/chat/completions", &normal);
        let got = within(LIMIT, exchange(addr, req)).await;
        latencies.push(started.elapsed());
        assert_eq!(got.status, 200);
    }
    for attack in attacks {
        for answer in within(LIMIT, attack).await.expect("attacker") {
            assert_eq!(answer.status, 200, "the client gets its answer");
        }
    }
    // The 1,500-grammar calls name the last tool, past the array's grammar bytes; the pattern
    // calls meet a schema refused for backtracking; the 55-tool calls are judged in full (a
    // matching input: no violation).
    attack_ended_in_budget_only(&tooltap, latencies, Duration::from_millis(200), 38, 12).await;
}
