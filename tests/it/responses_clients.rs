//! Acceptance with real clients and a real third-party upstream, for the Responses API:
//! `@copilotkit/aimock` (npm) serves function tool calls from `tests/clients/aimock/fixtures`;
//! the official `openai` Python SDK (`responses.create` buffered and streamed, the
//! `responses.stream` helper) and the `openai-agents` SDK (a two-turn tool-using agent) run
//! once direct and once through tooltap, and must get the same thing, with every exchange
//! inspected as the Responses API and no error-severity violation; `tooltap check` re-judges
//! the recordings to the same, and `tooltap replay` of them gives the clients the same again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::record::flush;
use crate::support::aimock::{aimock_dir, start_aimock};
use crate::support::check::check_json;
use crate::support::clients::{run_python, script_json};
use crate::support::fixtures::settle;
use crate::support::metrics::assert_metric;
use crate::support::proxy;
use crate::support::temp::temp_file;
use crate::support::within;

async fn run_clients(base_url: &str) -> Value {
    let output = run_python("responses_check.py", &[base_url], Duration::from_secs(120)).await;
    script_json(&output, "python", base_url)
}

#[tokio::test]
async fn openai_sdk_and_agents_sdk_get_the_same_responses_through_tooltap() {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let violations = temp_file("responses-clients-violations.jsonl");
    let recordings = temp_file("responses-clients-recordings");
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;

    let direct = run_clients(&format!("{upstream}/v1")).await;
    let through = run_clients(&format!("http://{}/v1", tooltap.local_addr())).await;
    assert_eq!(
        direct, through,
        "the clients got something else through tooltap"
    );
    // What they got is the tool-calling answer, not an error or an empty output.
    assert_eq!(
        through["buffered"]["items"].as_array().map(Vec::len),
        Some(2),
        "{through}"
    );
    assert_eq!(through["stream"]["items"][0]["name"], "get_weather");
    assert_eq!(
        through["helper"]["done_arguments"][1],
        r#"{"location":"Oslo"}"#
    );
    assert_eq!(through["agent"]["tool_calls"], serde_json::json!(["Paris"]));
    assert!(
        through["agent"]["final_output"]
            .as_str()
            .is_some_and(|t| t.contains("sunny")),
        "{through}"
    );

    // create ×2, the stream helper, and the agent's two turns: five Responses exchanges.
    let text = settle(&tooltap, 5).await;
    assert_metric!(
        text,
        "tooltap_exchanges_inspected_total",
        ["dialect=\"responses\""] == 5,
        "{text}"
    );
    assert_no_errors(&violations);

    // `tooltap check` re-judges the five recordings: no error (exit 0), warnings only.
    flush(&tooltap).await;
    let checked = check_json(&recordings);
    assert_eq!(checked.code, 0, "{}", checked.stderr);
    let report = checked.report;
    assert_eq!(
        report["exchanges"].as_array().map(Vec::len),
        Some(5),
        "{report}"
    );

    // The recordings, replayed by `tooltap replay`, give the clients the same answers again,
    // and the replayer's inspection judges them as the Responses API.
    let replay_violations = temp_file("responses-clients-replay-violations.jsonl");
    let replay = proxy::start_replay(recordings.clone(), Some(replay_violations.clone())).await;
    let replayed = run_clients(&format!("http://{}/v1", replay.local_addr())).await;
    assert_eq!(
        direct, replayed,
        "the clients got something else from the replay"
    );
    drop(replay);
    assert_no_errors(&replay_violations);
}

/// Every line of a violations file is a Responses warning, never an error.
fn assert_no_errors(violations: &Path) {
    let lines = std::fs::read_to_string(violations).unwrap_or_default();
    let errors: Vec<Value> = lines
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "error-severity violations: {errors:?}");
    let mut per_exchange = std::collections::BTreeMap::<String, usize>::new();
    for line in lines.lines() {
        let v: Value = serde_json::from_str(line).expect("violation line");
        assert_eq!(v["dialect"], "responses");
        // aimock omits the spec-required sequence_number: a warning, and the only one.
        assert_eq!(v["rule"], "responses.stream.sequence_number_missing", "{v}");
        *per_exchange
            .entry(v["exchange"].as_str().unwrap_or_default().to_owned())
            .or_default() += 1;
    }
    // Once per stream, not once per event (it was 71 lines for 7 streams).
    assert!(
        per_exchange.values().all(|count| *count == 1),
        "sequence_number_missing more than once in an exchange: {per_exchange:?}\n{lines}"
    );
}

/// The openai npm SDK that scripts/test installs with the seed suite.
fn node_openai() -> PathBuf {
    let suite = std::env::var_os("TOOLTAP_TEST_SEED_SUITE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/seed-suite"));
    let dir = suite.join("node_modules/openai");
    assert!(
        dir.join("package.json").exists(),
        "{} is missing: run scripts/test, which installs the openai npm SDK",
        dir.display()
    );
    dir
}

async fn run_node(base_url: &str) -> Value {
    let script = aimock_dir().join("responses_check.mjs");
    let output = within(
        Duration::from_secs(60),
        tokio::process::Command::new("node")
            .arg(script)
            .arg(base_url)
            .arg(node_openai())
            .output(),
    )
    .await
    .expect("node runs");
    script_json(&output, "node", base_url)
}

#[tokio::test]
async fn the_openai_node_sdk_gets_the_same_responses_through_tooltap() {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let violations = temp_file("responses-node-violations.jsonl");
    let mut raw = proxy::raw_config(&upstream);
    raw.inspect.violations = Some(violations.clone());
    let tooltap = proxy::start(raw).await;

    let direct = run_node(&format!("{upstream}/v1")).await;
    let through = run_node(&format!("http://{}/v1", tooltap.local_addr())).await;
    assert_eq!(
        direct, through,
        "the Node SDK got something else through tooltap"
    );
    assert_eq!(
        through["buffered"]["items"].as_array().map(Vec::len),
        Some(2),
        "{through}"
    );
    assert_eq!(through["helper"]["status"], "completed");
    assert_eq!(
        through["helper"]["done_arguments"][0],
        r#"{"location":"Paris"}"#
    );
    let text = settle(&tooltap, 3).await;
    assert_metric!(
        text,
        "tooltap_exchanges_inspected_total",
        ["dialect=\"responses\""] == 3
    );
    assert_no_errors(&violations);
}
