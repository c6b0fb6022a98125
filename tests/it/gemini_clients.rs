//! Acceptance with real clients and a real third-party upstream, for the Gemini API (issue 34):
//! `@copilotkit/aimock` (npm) serves `/v1beta/models/{m}:generateContent` and
//! `:streamGenerateContent` from `tests/clients/aimock/fixtures/gemini-tools.json`; the official
//! `google-genai` Python SDK (`generate_content` and `generate_content_stream`, automatic
//! function calling off and on, an explicit two-turn loop) and the `@google/genai` Node SDK
//! (`generateContent`, `generateContentStream`, a two-turn loop) each run their cases (one call,
//! parallel calls in one event, parallel calls in separate events with ids, text only; python
//! also as a Vertex AI client on `/v1/projects/{p}/locations/{l}/publishers/google/models/{m}`)
//! direct, through a recording tooltap and against `tooltap replay` of the recordings, and must
//! get the same three times: function calls, args, ids, text, finish reasons and the SDK's
//! warnings. Every exchange is judged as `gemini` with no error-severity violation, recorded
//! without its credential, and `tooltap check` and the replay give the verdicts it had live. aimock's default tool-call answer (finishReason
//! `FUNCTION_CALL`) is kept as the violating case: `gemini.response.finish_reason_unknown` live
//! and by `check`, while the python SDK warns "FUNCTION_CALL is not a valid FinishReason"; in
//! enforce mode both SDKs raise an error that names the rule, buffered and streamed.
//!
//! What of aimock 1.43.0's Gemini bytes deviates from the contract (reference §1(c), §1(d)):
//! * a tool-call answer's `finishReason` is `FUNCTION_CALL` unless the fixture sets
//!   `"finishReason": "stop"` (the faithful fixtures do; one fixture keeps the default);
//! * `:streamGenerateContent` is always served as SSE, `alt=sse` or not: the JSON-array stream
//!   is never served, so these tests cannot exercise it (the SDKs always ask for `alt=sse`);
//! * events end with LF (`\n\n`), where Google's servers use CRLF;
//! * `usageMetadata` (all zero) rides on the last event only, not on every event; no
//!   `modelVersion`, no `responseId`, no `thoughtSignature` on any part;
//! * `functionCall.id` only when the fixture pins one (Gemini 2 style otherwise); parallel calls
//!   share one event unless the fixture lists them as `blocks`, which gives one event per call;
//! * `/v1/models/...` (google-genai 3.6.1's default API version) and the SDKs' Vertex default
//!   `/v1beta1/projects/...` are not routed: a 404 with an OpenAI-shaped error body.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::record::flush;
use crate::support::aimock::start_aimock;
use crate::support::check::{assert_check_judges_as_live, error_lines};
use crate::support::clients::run_sdk_script;
use crate::support::fixtures::settle;
use crate::support::metrics::metric_sum;
use crate::support::proxy;
use crate::support::temp::temp_file;
use crate::support::temp::{files_under, json_lines};

/// The rule aimock's default tool-call answer breaks: `finishReason: "FUNCTION_CALL"`.
const UNKNOWN_FINISH: &str = "gemini.response.finish_reason_unknown";

/// The API key the scripts send (`x-goog-api-key`) and the python Vertex client's OAuth token
/// (`Authorization: Bearer`); no recording may hold them.
const SECRETS: [&str; 2] = ["gemini-test-key", "vertex-test-token"];

/// Exchanges one faithful run makes: four cases buffered and streamed, then python's automatic
/// function calling (two turns buffered, two streamed), each SDK's explicit two-turn loop and
/// python's two Vertex AI calls.
const PYTHON_EXCHANGES: u64 = 8 + 4 + 2 + 2;
const NODE_EXCHANGES: u64 = 8 + 2;

/// Runs one SDK script (`python` or `node`) against `base_url` in `mode`; its JSON output.
/// Rule ids per exchange id from a violations file, every line judged as `gemini`.
fn live_verdicts_of(violations: &Path) -> BTreeMap<String, Vec<String>> {
    crate::support::check::live_verdicts(violations, "gemini")
}

async fn run(sdk: &str, base_url: &str, mode: &str) -> Value {
    run_sdk_script(sdk, "gemini_check", "@google/genai", base_url, mode).await
}

/// Every recording under `recordings` names the `gemini` dialect and holds no credential; their
/// count.
fn recorded_as_gemini(recordings: &Path) -> usize {
    let files = files_under(recordings);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        assert!(
            text.contains(r#""dialect":"gemini""#),
            "{} is not recorded as gemini",
            file.display()
        );
        for secret in SECRETS {
            assert!(!text.contains(secret), "{} holds {secret}", file.display());
        }
    }
    files.len()
}

/// One SDK's faithful cases direct against aimock, through a recording tooltap and against
/// `tooltap replay` of its recordings: the three outputs equal, every exchange inspected as
/// `gemini` with no error-severity violation live, in replay and by `check`, which give each
/// exchange its live verdict. Returns what the SDK got.
async fn faithful_round_trip(sdk: &str, exchanges: u64) -> Value {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let violations = temp_file(&format!("gemini-{sdk}-violations.jsonl"));
    let recordings = temp_file(&format!("gemini-{sdk}-recordings"));
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;

    let direct = run(sdk, &upstream, "faithful").await;
    let through = run(sdk, &format!("http://{}", tooltap.local_addr()), "faithful").await;
    assert_eq!(direct, through, "{sdk} got something else through tooltap");

    let text = settle(&tooltap, exchanges).await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_exchanges_inspected_total",
            &["dialect=\"gemini\""]
        ),
        exchanges,
        "{text}"
    );
    let found = error_lines(&violations);
    assert!(
        found.is_empty(),
        "{sdk}: errors on faithful traffic: {found:?}"
    );

    flush(&tooltap).await;
    assert_eq!(recorded_as_gemini(&recordings) as u64, exchanges);
    let live = live_verdicts_of(&violations);
    assert_check_judges_as_live(&recordings, &live, 0, Some(exchanges), sdk);

    let replay_violations = temp_file(&format!("gemini-{sdk}-replay-violations.jsonl"));
    let replay = proxy::start_replay(recordings.clone(), Some(replay_violations.clone())).await;
    let replayed = run(sdk, &format!("http://{}", replay.local_addr()), "faithful").await;
    assert_eq!(direct, replayed, "{sdk} got something else from the replay");
    drop(replay);
    let found = error_lines(&replay_violations);
    assert!(
        found.is_empty(),
        "{sdk}: errors on replayed traffic: {found:?}"
    );
    // The replay's exchanges have ids of their own: the verdicts compare as a multiset.
    let verdicts = |path: &Path| {
        let mut all: Vec<Vec<String>> = live_verdicts_of(path).into_values().collect();
        all.sort();
        all
    };
    assert_eq!(
        verdicts(&replay_violations),
        verdicts(&violations),
        "{sdk}: the replay was judged otherwise than live"
    );
    direct
}

/// What the faithful cases give both SDKs (the same JSON shape): the calls with their args and
/// ids, parallel calls in one event and in two, STOP on tool-call turns, no warning.
fn assert_faithful_answers(got: &Value) {
    let one = &got["one"]["buffered"];
    assert_eq!(one["calls"][0]["name"], "get_forecast", "{got}");
    assert_eq!(one["calls"][0]["args"]["city"], "Lyon");
    assert_eq!(one["finish_reasons"][0], "STOP");
    let parallel = &got["parallel"]["stream"]["chunks"];
    assert_eq!(parallel.as_array().map(Vec::len), Some(1), "{got}");
    assert_eq!(parallel[0]["calls"][1]["args"]["city"], "Nantes");
    let split = &got["split"]["stream"]["chunks"];
    assert_eq!(split.as_array().map(Vec::len), Some(2), "{got}");
    assert_eq!(split[0]["calls"][0]["id"], "call_g1");
    assert_eq!(split[0]["finish_reasons"][0], Value::Null);
    assert_eq!(split[1]["calls"][0]["id"], "call_g2");
    assert_eq!(split[1]["finish_reasons"][0], "STOP");
    let text = &got["text"]["stream"]["chunks"];
    assert_eq!(text.as_array().map(Vec::len), Some(3), "{got}");
    assert_eq!(
        got["text"]["buffered"]["text"],
        "Hello from aimock, speaking the Gemini API in three events."
    );
    assert_eq!(
        got["loop"]["second"]["text"],
        "Lille is cloudy and Nice is sunny today."
    );
    assert!(
        !got.to_string().contains("FinishReason"),
        "an SDK warned: {got}"
    );
}

#[tokio::test]
async fn the_google_genai_python_sdk_gets_the_same_through_tooltap_and_its_replay() {
    let got = faithful_round_trip("python", PYTHON_EXCHANGES).await;
    assert_faithful_answers(&got);
    // Automatic function calling: the SDK ran get_forecast and sent the response back itself.
    for call in ["buffered", "stream"] {
        let afc = &got["afc"][call];
        let last = if call == "buffered" {
            afc.clone()
        } else {
            afc["chunks"]
                .as_array()
                .and_then(|c| c.last())
                .cloned()
                .expect("chunks")
        };
        let history = last["afc_history"].as_array().expect("history");
        assert_eq!(history.len(), 3, "{afc}");
        assert_eq!(history[2]["responses"][0]["name"], "get_forecast");
    }
    assert_eq!(got["afc"]["buffered"]["text"], "Lyon: sunny, 24 degrees.");
    assert_eq!(got["vertex"]["buffered"], got["one"]["buffered"], "{got}");
    assert_eq!(got["vertex"]["stream"], got["text"]["stream"], "{got}");
}

#[tokio::test]
async fn the_google_genai_node_sdk_gets_the_same_through_tooltap_and_its_replay() {
    let got = faithful_round_trip("node", NODE_EXCHANGES).await;
    assert_faithful_answers(&got);
}

#[tokio::test]
async fn aimocks_default_finish_reason_is_reported_live_by_check_and_raised_in_enforce_mode() {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let violations = temp_file("gemini-default-violations.jsonl");
    let recordings = temp_file("gemini-default-recordings");
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;
    let through_url = format!("http://{}", tooltap.local_addr());

    for sdk in ["python", "node"] {
        let direct = run(sdk, &upstream, "unfaithful").await;
        let through = run(sdk, &through_url, "unfaithful").await;
        assert_eq!(direct, through, "{sdk} got something else through tooltap");
        let buffered = &through["default"]["buffered"];
        assert_eq!(buffered["finish_reasons"][0], "FUNCTION_CALL", "{through}");
        assert_eq!(buffered["calls"][0]["args"]["city"], "Brest");
        if sdk == "python" {
            let warning = "FUNCTION_CALL is not a valid FinishReason";
            assert_eq!(buffered["warnings"][0], warning, "{through}");
            assert_eq!(through["default"]["stream"]["warnings"][0], warning);
        }
    }

    // Two SDKs, each a buffered and a streamed answer: four exchanges, each breaking the rule
    // once, at error severity.
    settle(&tooltap, 4).await;
    let live = live_verdicts_of(&violations);
    assert_eq!(live.len(), 4, "{live:?}");
    for rules in live.values() {
        assert!(rules.iter().any(|rule| rule == UNKNOWN_FINISH), "{live:?}");
    }
    let unknown: Vec<Value> = json_lines(&violations)
        .into_iter()
        .filter(|line| line["rule"] == UNKNOWN_FINISH)
        .collect();
    assert_eq!(unknown.len(), 4, "{unknown:?}");
    assert!(unknown.iter().all(|line| line["severity"] == "error"));

    flush(&tooltap).await;
    assert_eq!(recorded_as_gemini(&recordings), 4);
    assert_check_judges_as_live(&recordings, &live, 1, None, "unknown finish reasons");
    drop(tooltap);

    // Enforce mode: each call raises, buffered (a 502) and streamed (the stream's error object),
    // and the error names the rule.
    let enforcing = proxy::start_enforcing(&upstream).await;
    let base_url = format!("http://{}", enforcing.local_addr());
    for sdk in ["python", "node"] {
        let got = run(sdk, &base_url, "unfaithful").await;
        for call in ["buffered", "stream"] {
            let raised = &got["default"][call];
            let message = raised["message"].as_str().unwrap_or_default();
            assert!(
                raised["error"].is_string() && message.contains(UNKNOWN_FINISH),
                "{sdk} {call} did not raise naming the rule: {got}"
            );
            assert!(message.contains("502"), "{sdk} {call}: {got}");
        }
    }
}
