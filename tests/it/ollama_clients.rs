//! Acceptance with a real client and a real third-party upstream, for Ollama's native chat API
//! (issue 37): `@copilotkit/aimock` (npm) serves `/api/chat` from
//! `tests/clients/aimock/fixtures/ollama-tools.json`; the official `ollama` Python client
//! (`chat`, `stream=False` and `stream=True`, with tools) runs its cases (one call, parallel
//! calls, text only, a two-turn loop buffered and streamed) direct, through a recording tooltap
//! and against `tooltap replay` of the recordings, and must get the same three times: calls,
//! arguments, text, `done` and `done_reason`, each streamed chunk. Every exchange is judged as
//! `ollama` with no error-severity violation, recorded, and `tooltap check` and the replay give
//! the verdicts it had live. In enforce mode (through the fixture upstream) the client raises
//! `ResponseError` naming the rule, buffered and streamed.
//!
//! What of aimock 1.43.0's Ollama bytes deviates from Ollama's (reference §3(c), §3(d), §3(i)):
//! * tool calls carry no `id` and no `function.index` (Ollama sends both since #12956): optional
//!   in the contract, so not a violation (the `ollama_pair_no_ids_*` fixtures are this shape);
//! * every timing and count of the `done` line is 0, and every chunk has the same `created_at`;
//! * an unmatched request is a 404 with an OpenAI-shaped `{"error":{"message","type"}}`, where
//!   Ollama answers `{"error":"..."}` (not a 2xx: not judged);
//! * it cannot send string arguments, SSE framing or `done_reason: "tool_calls"` (it parses its
//!   fixtures' JSON): those breaks are the `ollama_*` fixtures of the engine corpus instead.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::engine_support::{Fixture, fixture};
use crate::record::flush;
use crate::support::aimock::start_aimock;
use crate::support::check::{assert_check_judges_as_live, error_lines};
use crate::support::clients::{run_python, run_sdk_script, script_json};
use crate::support::fixtures::{fixture_upstream, settle};
use crate::support::metrics::metric_sum;
use crate::support::proxy;
use crate::support::temp::files_under;
use crate::support::temp::temp_file;

/// Exchanges one run makes: three cases buffered and streamed, and two two-turn loops.
const EXCHANGES: u64 = 6 + 4;

/// Rule ids per exchange id from a violations file, every line judged as `ollama`.
fn live_verdicts_of(violations: &Path) -> BTreeMap<String, Vec<String>> {
    crate::support::check::live_verdicts(violations, "ollama")
}

async fn run(base_url: &str) -> Value {
    run_sdk_script("python", "ollama_check", "ollama", base_url, "faithful").await
}

#[tokio::test]
async fn the_ollama_python_client_gets_the_same_through_tooltap_and_its_replay() {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let violations = temp_file("ollama-violations.jsonl");
    let recordings = temp_file("ollama-recordings");
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;

    let direct = run(&upstream).await;
    let through = run(&format!("http://{}", tooltap.local_addr())).await;
    assert_eq!(
        direct, through,
        "the client got something else through tooltap"
    );

    let one = &direct["one"];
    for call in ["buffered", "stream"] {
        assert_eq!(one[call]["calls"][0]["name"], "get_weather", "{direct}");
        assert_eq!(one[call]["calls"][0]["arguments"]["city"], "Lyon");
        assert_eq!(one[call]["done_reason"], "stop");
    }
    let parallel = &direct["parallel"]["stream"];
    assert_eq!(
        parallel["calls"][1]["arguments"]["city"], "Nantes",
        "{direct}"
    );
    assert_eq!(parallel["chunks"].as_array().map(Vec::len), Some(2));
    assert_eq!(parallel["chunks"][1]["done"], true);
    assert_eq!(
        direct["text"]["buffered"]["text"],
        "Hello from aimock, speaking Ollama's native chat API."
    );
    assert_eq!(
        direct["text"]["stream"]["text"],
        direct["text"]["buffered"]["text"]
    );
    assert_eq!(
        direct["loop"]["buffered"]["second"]["text"],
        "Lyon: sunny, 24 degrees."
    );
    assert_eq!(
        direct["loop"]["stream"]["second"]["text"],
        "Lyon is sunny and Nantes is rainy."
    );
    assert!(!direct.to_string().contains("\"error\""), "{direct}");

    let text = settle(&tooltap, EXCHANGES).await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_exchanges_inspected_total",
            &["dialect=\"ollama\""]
        ),
        EXCHANGES,
        "{text}"
    );
    let found = error_lines(&violations);
    assert!(found.is_empty(), "errors on faithful traffic: {found:?}");

    flush(&tooltap).await;
    let files = files_under(&recordings);
    assert_eq!(files.len() as u64, EXCHANGES);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        assert!(text.contains(r#""dialect":"ollama""#), "{}", file.display());
    }
    let live = live_verdicts_of(&violations);
    assert_check_judges_as_live(&recordings, &live, 0, Some(EXCHANGES), "ollama");

    let replay_violations = temp_file("ollama-replay-violations.jsonl");
    let replay = proxy::start_replay(recordings.clone(), Some(replay_violations.clone())).await;
    let replayed = run(&format!("http://{}", replay.local_addr())).await;
    assert_eq!(
        direct, replayed,
        "the client got something else from the replay"
    );
    drop(replay);
    let found = error_lines(&replay_violations);
    assert!(found.is_empty(), "errors on replayed traffic: {found:?}");
}

/// Enforce mode, through the fixture upstream: a buffered break is a 502 in Ollama's
/// `{"error":"..."}` shape, a streamed one ends the stream with that object as one NDJSON line,
/// and the `ollama` client raises `ResponseError` naming the rule on both; a clean stream passes.
#[tokio::test]
async fn the_ollama_python_client_raises_on_enforced_violations() {
    let names = [
        "ollama_buffered_arguments_string",
        "ollama_stream_arguments_string",
        "ollama_pair_single_call_ndjson",
    ];
    let fixtures: Vec<Fixture> = names.iter().map(|n| fixture(n)).collect();
    let upstream = fixture_upstream(&fixtures).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    let tooltap = proxy::start(raw).await;
    let base_url = format!("http://{}", tooltap.local_addr());
    let fixtures_dir = crate::engine_support::fixtures_dir();
    let mut args = vec![
        base_url.as_str(),
        fixtures_dir.to_str().expect("utf-8 path"),
    ];
    args.extend(names);
    let output = run_python("ollama_enforce_check.py", &args, Duration::from_secs(60)).await;
    let out = script_json(&output, "python", &base_url);

    let buffered = &out["ollama_buffered_arguments_string"];
    assert_eq!(buffered["raised"], true, "{out}");
    assert_eq!(buffered["status"], 502);
    let message = buffered["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("ollama.response.arguments_not_object"),
        "{message}"
    );

    // Judged on the call's line, which never reaches the client (whose pydantic model would
    // raise a ValidationError on it): the client meets the error line and raises ResponseError.
    let streamed = &out["ollama_stream_arguments_string"];
    assert_eq!(streamed["raised"], true, "{out}");
    assert_eq!(streamed["kind"], Value::Null, "not a ResponseError: {out}");
    let message = streamed["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("ollama.response.arguments_not_object"),
        "{message}"
    );

    let clean = &out["ollama_pair_single_call_ndjson"];
    assert_eq!(clean["raised"], false, "{out}");
    assert_eq!(clean["calls"][0], "get_weather");
    assert_eq!(clean["done_reason"], "stop");
}
