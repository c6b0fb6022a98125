//! Acceptance with a real client and a real third-party upstream, for Bedrock Converse (issue
//! 37): `@copilotkit/aimock` (npm) serves `/model/{modelId}/converse` and `/converse-stream`
//! from `tests/clients/aimock/fixtures/bedrock-tools.json`; boto3's `bedrock-runtime` client
//! (`tests/clients/python/bedrock_check.py`: `endpoint_url` at the base URL, an
//! inference-profile ARN as the model id, which botocore percent-encodes) runs its cases direct,
//! through a recording tooltap and against `tooltap replay` of the recordings, and must get the
//! same three times: toolUse names, input objects and ids, text, stopReason, usage, the streamed
//! event sequence, and the errors it raised. The cases: `converse` and `converse_stream` for one
//! call and for parallel calls, text only, a two-turn loop that sends the toolResults back (its
//! first turn buffered, and streamed), and the same one call from a client that sends a Bedrock
//! API key (`AWS_BEARER_TOKEN_BEDROCK`) instead of signing with SigV4. Every exchange is judged
//! as `bedrock` with no error-severity violation on faithful traffic, recorded without its
//! credentials (the SigV4 `Authorization`, `X-Amz-Security-Token`, the Bearer key), and `tooltap
//! check` and the replay give the verdicts it had live. aimock's deviating answers (below) are
//! the violating cases: each reported with its `bedrock.*` rule live, by `check` and in replay,
//! and in enforce mode raised by boto3 as Bedrock's own error naming the rule.
//!
//! What of aimock 1.43.0's Converse bytes deviates from the contract (reference §2(d), §2(i)):
//! * every text block of `converse-stream` opens with `contentBlockStart {"start": {}}`, an
//!   empty union: boto3 raises `ResponseParserError: ContentBlockStart must have one and only one
//!   member set.` (`bedrock.stream.empty_start_union`). A text-only stream, the text of a
//!   text-plus-tools stream and a streamed answer to a toolResult are all unusable by boto3, so
//!   the faithful cases stream only tool calls; the streamed texts (alone, and before a toolUse)
//!   are violating cases;
//! * a fixture's `finishReason: "stop"` becomes `stopReason: end_turn` even with toolUse blocks
//!   (`bedrock.response.call_without_stop_tool_use`): the second violating case;
//! * a reasoning block opens with `start: {"reasoningContent": {}}`, not a `ContentBlockStart`
//!   member (not exercised here);
//! * toolUse ids are `toolu_<base64url>`, random per answer, unless the fixture pins one (these
//!   pin `tooluse_…` ids, so direct, proxied and replayed answers compare);
//! * no `"p"` padding field in event payloads; usage all zero and `metrics.latencyMs` 0;
//! * error answers carry an OpenAI- or Anthropic-shaped JSON body and no `x-amzn-ErrorType`
//!   header, where Bedrock sends `{"message": …}` and the header;
//! * a toolResult's `json` content reaches fixture matching as empty text (aimock keeps only
//!   `text` members), and no SigV4 signature is checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::record::flush;
use crate::support::aimock::start_aimock;
use crate::support::check::{self, error_lines as errors};
use crate::support::clients::run_sdk_script;
use crate::support::fixtures::settle;
use crate::support::metrics::metric_sum;
use crate::support::proxy;
use crate::support::temp::temp_file;
use crate::support::temp::{TempFile, files_under};
use crate::support::within;
use tooltap::quirk::{QuirkId, Shape};

/// The rule aimock's streamed text breaks: `contentBlockStart.start` is `{}`.
const EMPTY_START: &str = "bedrock.stream.empty_start_union";
/// The rule a toolUse answer with `stopReason: end_turn` breaks.
const END_TURN_WITH_CALL: &str = "bedrock.response.call_without_stop_tool_use";

/// What the script's clients send that no recording may hold: the SigV4 access key id (inside
/// `Authorization`), the SigV4 scheme and signature, the session token (`X-Amz-Security-Token`)
/// and the Bedrock API key (`Authorization: Bearer`).
const SECRETS: [&str; 5] = [
    "AKIDBEDROCKTEST0001",
    "AWS4-HMAC-SHA256",
    "Signature=",
    "bedrock-test-session-token",
    "bedrock-test-api-key",
];

/// Exchanges one faithful run makes: one call and parallel calls, each buffered and streamed;
/// text, and text before a toolUse, buffered; two two-turn loops; the Bearer client's two calls.
const FAITHFUL_EXCHANGES: u64 = 4 + 2 + 2 + 2 + 2;
/// Exchanges one unfaithful run makes: the streamed text, alone and before a toolUse; the
/// end_turn answer buffered and streamed.
const UNFAITHFUL_EXCHANGES: u64 = 2 + 2;

/// Runs boto3's script against `base_url` in `mode`; its JSON output.
async fn run(base_url: &str, mode: &str) -> Value {
    run_sdk_script("python", "bedrock_check", "", base_url, mode).await
}

/// Rule ids per exchange id from a violations file; every line names `bedrock`.
fn live_verdicts(violations: &Path) -> BTreeMap<String, Vec<String>> {
    check::live_verdicts(violations, "bedrock")
}

/// The verdicts of a violations file as a multiset (a replay's exchanges have ids of their own).
fn verdict_multiset(violations: &Path) -> Vec<Vec<String>> {
    let mut all: Vec<Vec<String>> = live_verdicts(violations).into_values().collect();
    all.sort();
    all
}

/// Every recording under `recordings` holds no credential, and the credential headers were
/// recorded (as `[REDACTED]`), so their absence means something; their count.
fn recorded_without_credentials(recordings: &Path) -> usize {
    let files = files_under(recordings);
    let mut all = String::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for secret in SECRETS {
            assert!(!text.contains(secret), "{} holds {secret}", file.display());
        }
        all.push_str(&text);
    }
    for header in ["authorization", "x-amz-security-token"] {
        let redacted = format!(r#"["{header}","[REDACTED]"]"#);
        assert!(all.contains(&redacted), "no recording has {redacted}");
    }
    files.len()
}

/// One mode's cases run direct against aimock, through a recording tooltap and against `tooltap
/// replay` of its recordings, and what each run left behind.
struct Trip {
    direct: Value,
    through: Value,
    replayed: Value,
    /// The recording tooltap's metrics once it inspected every exchange.
    metrics: String,
    violations: TempFile,
    replay_violations: TempFile,
    recordings: TempFile,
}

async fn round_trip(mode: &str, exchanges: u64) -> Trip {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let violations = temp_file(&format!("bedrock-{mode}-violations.jsonl"));
    let recordings = temp_file(&format!("bedrock-{mode}-recordings"));
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;
    let direct = run(&upstream, mode).await;
    let through = run(&format!("http://{}", tooltap.local_addr()), mode).await;
    let metrics = settle(&tooltap, exchanges).await;
    flush(&tooltap).await;
    drop(tooltap);

    let replay_violations = temp_file(&format!("bedrock-{mode}-replay-violations.jsonl"));
    let replay = proxy::start_replay(
        recordings.to_path_buf(),
        Some(replay_violations.to_path_buf()),
    )
    .await;
    let replayed = run(&format!("http://{}", replay.local_addr()), mode).await;
    drop(replay);
    Trip {
        direct,
        through,
        replayed,
        metrics,
        violations,
        replay_violations,
        recordings,
    }
}

impl Trip {
    /// boto3 got the same direct, through tooltap and from the replay; every exchange was
    /// recorded, none with a credential.
    fn assert_same_everywhere(&self, exchanges: u64) {
        assert_eq!(
            self.direct, self.through,
            "boto3 got something else through tooltap"
        );
        assert_eq!(
            self.direct, self.replayed,
            "boto3 got something else from the replay"
        );
        assert_eq!(
            recorded_without_credentials(&self.recordings) as u64,
            exchanges
        );
    }

    /// Every exchange inspected and recorded as `bedrock`; `check` gives each recording its
    /// live verdict and the replay the same verdicts. Returns the live verdicts.
    fn assert_judged_as_bedrock(&self, exchanges: u64) -> BTreeMap<String, Vec<String>> {
        let inspected = metric_sum(
            &self.metrics,
            "tooltap_exchanges_inspected_total",
            &["dialect=\"bedrock\""],
        );
        assert_eq!(inspected, exchanges, "{}", self.metrics);
        for file in files_under(&self.recordings) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            assert!(
                text.contains(r#""dialect":"bedrock""#),
                "{} is not recorded as bedrock",
                file.display()
            );
        }
        let live = live_verdicts(&self.violations);
        check::assert_check_judges_as_live(
            &self.recordings,
            &live,
            u8::from(!live.is_empty()),
            Some(exchanges),
            "bedrock",
        );
        assert_eq!(
            verdict_multiset(&self.replay_violations),
            verdict_multiset(&self.violations),
            "the replay was judged otherwise than live"
        );
        live
    }
}

#[tokio::test]
async fn boto3_gets_the_same_direct_through_tooltap_and_its_replay() {
    let trip = round_trip("faithful", FAITHFUL_EXCHANGES).await;
    trip.assert_same_everywhere(FAITHFUL_EXCHANGES);
    let got = &trip.direct;
    // The faithful cases are what the fixtures say, whole: ids, inputs, stopReason, the events.
    let one = &got["one"]["buffered"];
    assert_eq!(one["calls"][0]["name"], "get_weather", "{got}");
    assert_eq!(one["calls"][0]["input"]["city"], "Lyon");
    assert_eq!(one["calls"][0]["id"], "tooluse_b1Lyon");
    assert_eq!(one["stopReason"], "tool_use");
    let stream = &got["one"]["stream"];
    assert_eq!(stream["calls"], one["calls"], "{got}");
    assert_eq!(stream["stopReason"], "tool_use");
    // `{"city":"Lyon"}` in 7-byte fragments: three deltas.
    let events = stream["events"].as_array().expect("events");
    assert_eq!(events.len(), 8, "{got}");
    assert_eq!(events[0], "messageStart");
    assert_eq!(events[7], "metadata");
    let parallel = &got["parallel"]["stream"]["calls"];
    assert_eq!(parallel[1]["id"], "tooluse_b3Nantes", "{got}");
    assert_eq!(parallel, &got["parallel"]["buffered"]["calls"]);
    assert_eq!(
        got["text"]["buffered"]["text"],
        "Hello from aimock, speaking Bedrock Converse."
    );
    assert_eq!(got["text"]["buffered"]["stopReason"], "end_turn");
    let mixed = &got["mixed"]["buffered"];
    assert_eq!(mixed["text"], "Checking Nantes.", "{got}");
    assert_eq!(mixed["calls"][0]["id"], "tooluse_b5Nantes");
    assert_eq!(mixed["stopReason"], "tool_use");
    assert_eq!(
        got["loop"]["second"]["text"],
        "Lyon is sunny and Nantes is rainy today."
    );
    assert_eq!(
        got["loop_stream"]["second"]["text"],
        "Lyon: sunny, 24 degrees."
    );
    assert_eq!(got["bearer"], got["one"], "the Bearer client got otherwise");
    assert!(
        !got.to_string().contains("\"error\""),
        "boto3 raised: {got}"
    );
}

#[tokio::test]
async fn faithful_converse_traffic_is_judged_bedrock_without_errors_live_by_check_and_replayed() {
    let trip = round_trip("faithful", FAITHFUL_EXCHANGES).await;
    trip.assert_judged_as_bedrock(FAITHFUL_EXCHANGES);
    let found = errors(&trip.violations);
    assert!(found.is_empty(), "errors on faithful traffic: {found:?}");
    let found = errors(&trip.replay_violations);
    assert!(found.is_empty(), "errors on replayed traffic: {found:?}");
}

#[tokio::test]
async fn boto3_gets_aimocks_deviating_answers_the_same_direct_through_tooltap_and_replayed() {
    let trip = round_trip("unfaithful", UNFAITHFUL_EXCHANGES).await;
    trip.assert_same_everywhere(UNFAITHFUL_EXCHANGES);
    let got = &trip.direct;
    // boto3 refuses aimock's streamed text, alone or before a toolUse; it takes the end_turn
    // answer as it is.
    for case in ["text", "mixed"] {
        let raised = &got[case]["stream"];
        assert_eq!(raised["error"], "ResponseParserError", "{got}");
        let message = raised["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("ContentBlockStart must have one and only one member set"),
            "{got}"
        );
    }
    for call in ["buffered", "stream"] {
        let answer = &got["end_turn"][call];
        assert_eq!(answer["stopReason"], "end_turn", "{got}");
        assert_eq!(answer["calls"][0]["input"]["city"], "Brest");
    }
}

#[tokio::test]
async fn aimocks_deviating_converse_answers_break_their_rules_live_by_check_and_replayed() {
    let trip = round_trip("unfaithful", UNFAITHFUL_EXCHANGES).await;
    let live = trip.assert_judged_as_bedrock(UNFAITHFUL_EXCHANGES);
    assert_eq!(live.len() as u64, UNFAITHFUL_EXCHANGES, "{live:?}");
    // Each exchange breaks its rule and no other, at error severity: the two streamed texts
    // their empty contentBlockStart, the end_turn answer (buffered and streamed) its toolUse.
    let mut rules: Vec<&str> = live.values().flatten().map(String::as_str).collect();
    rules.sort_unstable();
    assert_eq!(errors(&trip.violations).len(), rules.len(), "{live:?}");
    assert_eq!(
        rules,
        [
            END_TURN_WITH_CALL,
            END_TURN_WITH_CALL,
            EMPTY_START,
            EMPTY_START
        ],
        "{live:?}"
    );
}

/// Enforce mode: each deviating answer reaches boto3 as Bedrock's own error, which it raises
/// naming the rule: a buffered answer as `ModelErrorException`, a stream cut by an `:exception`
/// message as `EventStreamError` (`modelStreamErrorException`), where direct boto3 raised a
/// parser error (the empty contentBlockStart) or got tool calls it would not run (end_turn).
#[tokio::test]
async fn in_enforce_mode_boto3_raises_naming_the_rule_on_aimocks_deviating_answers() {
    let (_aimock, port) = start_aimock().await;
    let enforcing = proxy::start_enforcing(&format!("http://127.0.0.1:{port}")).await;
    let got = run(&format!("http://{}", enforcing.local_addr()), "unfaithful").await;
    let raised = [
        ("text", "stream", "EventStreamError", EMPTY_START),
        ("mixed", "stream", "EventStreamError", EMPTY_START),
        (
            "end_turn",
            "buffered",
            "ModelErrorException",
            END_TURN_WITH_CALL,
        ),
        ("end_turn", "stream", "EventStreamError", END_TURN_WITH_CALL),
    ];
    for (case, call, error, rule) in raised {
        let answer = &got[case][call];
        assert_eq!(answer["error"], error, "{case} {call}: {got}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(rule), "{case} {call}: {got}");
        // One attempt: the script's boto3 does not retry the refusal.
        assert!(
            !message.contains("max retries") || message.contains("max retries: 0)"),
            "{case} {call}: {got}"
        );
        if call == "stream" {
            assert!(message.contains("modelStreamErrorException"), "{got}");
        }
    }
}

/// `tooltap replay --quirk` of the faithful run's recordings, on an ephemeral port, judging
/// what it serves into `violations`.
async fn quirked_replay(
    recordings: &Path,
    quirk: QuirkId,
    violations: &Path,
) -> tooltap::replay::server::RunningReplay {
    let mut settings = tooltap::replay::ReplaySettings::new(recordings.to_path_buf());
    settings.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    settings.violations = Some(violations.to_path_buf());
    settings.quirks = vec![quirk];
    within(
        Duration::from_secs(20),
        tooltap::replay::server::RunningReplay::start(&settings),
    )
    .await
    .expect("replay starts")
}

/// boto3 against each Bedrock quirk replayed over aimock's parallel calls: a quirk that keeps
/// the stream decodable (its rewritten messages re-encoded with their lengths and both CRCs)
/// reaches the caller through botocore's event-stream parser, every event decoded, with exactly
/// the quirk's change; the bad-CRC quirk is refused by botocore's own CRC check. The replay's
/// inspector reports each quirk's rule on the exchange it rewrote.
#[tokio::test]
async fn boto3_decodes_replayed_bedrock_quirks_whose_crcs_are_right_and_refuses_the_bad_crc() {
    let trip = round_trip("faithful", FAITHFUL_EXCHANGES).await;
    let healthy = &trip.direct["parallel"];
    assert_eq!(healthy["stream"]["calls"].as_array().map(Vec::len), Some(2));
    for quirk in [
        QuirkId::BedrockStopReasonEndTurn,
        QuirkId::BedrockToolUseIdReused,
        QuirkId::BedrockInputNotJson,
        QuirkId::BedrockFrameBadCrc,
    ] {
        let violations = temp_file(&format!("bedrock-{quirk}-violations.jsonl"));
        let replay = quirked_replay(&trip.recordings, quirk, &violations).await;
        let got = run(&format!("http://{}", replay.local_addr()), "quirked").await;
        drop(replay);
        let got = &got["parallel"];
        let (buffered, stream) = (&got["buffered"], &got["stream"]);
        match quirk {
            QuirkId::BedrockStopReasonEndTurn => {
                for (call, answer) in [("buffered", buffered), ("stream", stream)] {
                    let mut expected = healthy[call].clone();
                    expected["stopReason"] = "end_turn".into();
                    assert_eq!(answer, &expected, "{quirk} {call}");
                }
            }
            QuirkId::BedrockToolUseIdReused => {
                for (call, answer) in [("buffered", buffered), ("stream", stream)] {
                    let mut expected = healthy[call].clone();
                    expected["calls"][1]["id"] = expected["calls"][0]["id"].clone();
                    assert_eq!(answer, &expected, "{quirk} {call}");
                }
            }
            QuirkId::BedrockInputNotJson => {
                assert_eq!(buffered, &healthy["buffered"], "stream-only: {got}");
                // botocore decoded every event; the caller's json.loads of the joined input
                // fails.
                assert_eq!(stream["error"], "JSONDecodeError", "{got}");
            }
            _ => {
                assert_eq!(buffered, &healthy["buffered"], "stream-only: {got}");
                assert_eq!(stream["error"], "ChecksumMismatch", "{got}");
            }
        }
        let rules: BTreeSet<String> = check::live_verdicts(&violations, "bedrock")
            .into_values()
            .flatten()
            .collect();
        let declared: BTreeSet<String> = [quirk.detected_by(Shape::Streamed, Default::default())]
            .into_iter()
            .flatten()
            .map(|rule| rule.to_string())
            .collect();
        assert_eq!(rules, declared, "{quirk}: the replay's inspector");
    }
}
