//! `tooltap proxy --inject`: quirks applied to live responses after the upstream. The client
//! gets the rewritten stream with `x-tooltap-quirk`, the inspector judges what the client got
//! (the quirk's own rules in the violations file), a quirk with nothing to change leaves the
//! bytes alone and says so, the per-exchange draw is reproducible from its seed, a quirk
//! applies only to an exchange of its own dialect (decided by the request path), and Gemini's
//! quirks rewrite its SSE, JSON-array and buffered answers live as offline.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;

use crate::engine_support::{self, Fixture, fixture};
use crate::support::client::{exchange, request};
use crate::support::fixtures::{settle, violations_by_exchange};
use crate::support::proxy;
use crate::support::temp::temp_file;
use crate::support::upstream::{Script, Upstream};
use tooltap::engine::RuleId;
use tooltap::quirk::{self, QuirkId, RequestContext, Shape, TimedFrame};

pub(crate) fn script(fixture: &Fixture) -> Script {
    let content_type = fixture.head.content_type.clone().unwrap_or_default();
    Script {
        status: 200,
        headers: vec![("content-type".into(), content_type)],
        chunks: engine_support::natural_frames(fixture)
            .into_iter()
            .map(|frame| (Duration::from_millis(2), Bytes::copy_from_slice(frame)))
            .collect(),
        silent: false,
        abort: false,
    }
}

pub(crate) fn send(
    addr: std::net::SocketAddr,
    fixture: &Fixture,
) -> impl std::future::Future<Output = crate::support::client::Collected> {
    let body = String::from_utf8(fixture.request.clone()).expect("utf-8 request");
    exchange(addr, request(addr, "POST", fixture.path(), &body))
}

#[tokio::test]
async fn an_injected_stream_reaches_the_client_and_the_inspector_judges_it() {
    let seed = fixture("seed_required_stream");
    let upstream = Upstream::serving(script(&seed)).await;
    let violations = temp_file("inject-violations.jsonl");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.violations = Some(violations.clone());
    raw.inject.quirks = Some("index-all-zero".into());
    let tooltap = proxy::start(raw).await;

    let got = send(tooltap.local_addr(), &seed).await;
    assert_eq!(got.headers["x-tooltap-quirk"], "index-all-zero");
    let frames: Vec<TimedFrame> = engine_support::natural_frames(&seed)
        .iter()
        .map(|bytes| TimedFrame {
            t_us: 0,
            bytes: Bytes::copy_from_slice(bytes),
        })
        .collect();
    let offline = quirk::apply(
        &[QuirkId::IndexAllZero],
        seed.dialect,
        &seed.request,
        &seed.head,
        &frames,
    );
    let expected: Vec<u8> = offline
        .frames
        .iter()
        .flat_map(|f| f.bytes.to_vec())
        .collect();
    assert_eq!(got.body, expected, "live and offline rewrite agree");
    assert_ne!(got.body, seed.body);

    settle(&tooltap, 1).await;
    let id = got.headers["x-tooltap-exchange"]
        .to_str()
        .expect("id")
        .to_string();
    let lines = violations_by_exchange(&violations)
        .remove(&id)
        .unwrap_or_default();
    // Each line says which quirk caused it.
    assert!(
        !lines.is_empty() && lines.iter().all(|v| v["quirk"] == "index-all-zero"),
        "{lines:?}"
    );
    let found: BTreeSet<String> = lines
        .iter()
        .map(|v| v["rule"].as_str().unwrap_or_default().to_string())
        .collect();
    let kind = RequestContext::parse(&seed.request).kind();
    let declared: BTreeSet<String> = QuirkId::IndexAllZero
        .detected_by(Shape::Streamed, kind)
        .iter()
        .map(RuleId::to_string)
        .collect();
    assert_eq!(found, declared);
}

#[tokio::test]
async fn a_quirk_with_nothing_to_change_leaves_the_bytes_and_says_so() {
    let buffered = fixture("seed_forced_buffered");
    let upstream = Upstream::serving(script(&buffered)).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inject.quirks = Some("done-missing".into());
    let tooltap = proxy::start(raw).await;
    let got = send(tooltap.local_addr(), &buffered).await;
    assert_eq!(got.body, buffered.body, "byte-identical");
    assert_eq!(
        got.headers["x-tooltap-quirk-not-applicable"],
        "done-missing"
    );
    assert!(got.headers.get("x-tooltap-quirk").is_none());
}

#[tokio::test]
async fn the_draw_is_reproducible_from_the_seed_and_routes_choose_their_own() {
    let seed = fixture("seed_required_stream");
    let upstream = Upstream::serving(script(&seed)).await;
    let run = |seed_value: u64| {
        let url = upstream.url();
        let seed = seed.clone();
        async move {
            let mut raw = proxy::raw_config(&url);
            raw.inject.quirks = Some("done-missing:0.5".into());
            raw.inject.seed = Some(seed_value);
            let mut quiet = proxy::route("quiet", "/quiet", &url);
            quiet.inject = Some(String::new());
            raw.routes = vec![quiet];
            let tooltap = proxy::start(raw).await;
            let mut draws = Vec::new();
            for _ in 0..12 {
                let got = send(tooltap.local_addr(), &seed).await;
                draws.push(got.headers.contains_key("x-tooltap-quirk"));
                assert_eq!(
                    got.body.ends_with(b"data: [DONE]\n\n"),
                    !draws[draws.len() - 1]
                );
            }
            let addr = tooltap.local_addr();
            let body = String::from_utf8(seed.request.clone()).expect("utf-8");
            let quiet = exchange(
                addr,
                request(addr, "POST", "/quiet/v1/chat/completions", &body),
            )
            .await;
            assert!(
                quiet.headers.get("x-tooltap-quirk").is_none(),
                "the quiet route injects nothing"
            );
            draws
        }
    };
    let first = run(7).await;
    assert_eq!(first, run(7).await, "same seed, same draws");
    assert!(first.contains(&true) && first.contains(&false), "{first:?}");
}

#[tokio::test]
async fn cut_after_name_ends_the_live_stream_mid_arguments() {
    let seed = fixture("seed_required_stream");
    let upstream = Upstream::serving(script(&seed)).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inject.quirks = Some("cut-after-name".into());
    let tooltap = proxy::start(raw).await;
    let got = send(tooltap.local_addr(), &seed).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.headers["x-tooltap-quirk"], "cut-after-name");
    let text = String::from_utf8(got.body.to_vec()).expect("utf-8");
    assert!(text.contains("\"name\":\"get_weather\""), "{text}");
    assert!(
        !text.contains("[DONE]") && !text.contains("finish_reason\":\"tool_calls"),
        "{text}"
    );
    // The role chunk, call 0's name, call 1's name (interleaved), call 0's first arguments
    // fragment: then the end.
    assert_eq!(text.matches("data: ").count(), 4, "{text}");
}

#[tokio::test]
async fn a_quirk_applies_to_its_own_dialect_only() {
    let messages = fixture("anthropic_pair_single_sse");
    let upstream = Upstream::serving(script(&messages)).await;
    let violations = temp_file("inject-dialect-violations.jsonl");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.violations = Some(violations.clone());
    raw.inject.quirks = Some("anthropic-stop-reason-end-turn,finish-stop-with-calls".into());
    let tooltap = proxy::start(raw).await;
    let got = send(tooltap.local_addr(), &messages).await;
    assert_eq!(
        got.headers["x-tooltap-quirk"],
        "anthropic-stop-reason-end-turn"
    );
    assert_eq!(
        got.headers["x-tooltap-quirk-not-applicable"],
        "finish-stop-with-calls"
    );
    let body = String::from_utf8_lossy(&got.body);
    assert!(
        body.contains("event: message_delta\ndata: ") && body.contains("\"end_turn\""),
        "{body}"
    );
    settle(&tooltap, 1).await;
    let id = got.headers["x-tooltap-exchange"]
        .to_str()
        .expect("id")
        .to_string();
    let found: BTreeSet<String> = violations_by_exchange(&violations)
        .remove(&id)
        .unwrap_or_default()
        .iter()
        .map(|v| v["rule"].as_str().unwrap_or_default().to_string())
        .collect();
    let kind = RequestContext::parse(&messages.request).kind();
    let declared: BTreeSet<String> = QuirkId::AnthropicStopReasonEndTurn
        .detected_by(Shape::Streamed, kind)
        .iter()
        .map(RuleId::to_string)
        .collect();
    assert_eq!(found, declared);

    // The same quirk on a Chat exchange: not applicable, byte-identical.
    let chat = fixture("seed_required_stream");
    let upstream = Upstream::serving(script(&chat)).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inject.quirks = Some("anthropic-stop-reason-end-turn".into());
    let tooltap = proxy::start(raw).await;
    let got = send(tooltap.local_addr(), &chat).await;
    assert_eq!(got.body, chat.body, "byte-identical");
    assert_eq!(
        got.headers["x-tooltap-quirk-not-applicable"],
        "anthropic-stop-reason-end-turn"
    );
    assert!(got.headers.get("x-tooltap-quirk").is_none());
}

#[tokio::test]
async fn arguments_past_the_inject_hold_pass_untouched_and_are_counted() {
    let seed = fixture("seed_required_stream");
    let upstream = Upstream::serving(script(&seed)).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inject.quirks = Some("args-as-object-stream".into());
    let tooltap = proxy::start(raw.clone()).await;
    let whole = send(tooltap.local_addr(), &seed).await;
    assert_eq!(whole.headers["x-tooltap-quirk"], "args-as-object-stream");
    assert!(
        text_of(&whole.body).contains("\"arguments\":{"),
        "within the hold the quirk re-sends the arguments as an object"
    );
    let text = crate::support::metrics::metrics(&tooltap).await;
    assert_eq!(hold_hits(&text), 0, "nothing cut within the default hold");

    // A hold smaller than the fixture's arguments: the quirk gives up (the rest of the stream
    // passes untouched, nothing is re-sent) and the cut is counted.
    raw.inject.max_hold = Some(4);
    let tooltap = proxy::start(raw).await;
    let cut = send(tooltap.local_addr(), &seed).await;
    assert!(
        !text_of(&cut.body).contains("\"arguments\":{"),
        "past the hold nothing is re-sent"
    );
    let text = crate::support::metrics::metrics(&tooltap).await;
    assert_eq!(hold_hits(&text), 1, "{text}");
}

fn text_of(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

fn hold_hits(text: &str) -> u64 {
    crate::support::metrics::metric_sum(
        text,
        "tooltap_limit_hits_total",
        &["limit=\"inject_hold\"", "scope=\"inject\""],
    )
}

/// Gemini quirks live, in each of its three framings (SSE, a streamed JSON array, a buffered
/// body): the client gets what the offline rewrite gives, and the inspector reports exactly
/// the quirk's declared rules, marked with the quirk.
#[tokio::test]
async fn gemini_quirks_rewrite_every_framing_live_as_offline() {
    let violations = temp_file("inject-gemini-violations.jsonl");
    for name in [
        "gemini_pair_parallel_sse",
        "gemini_pair_parallel_array",
        "gemini_pair_parallel_json",
    ] {
        let case = fixture(name);
        for quirk in [
            QuirkId::GeminiArgsAsString,
            QuirkId::GeminiParallelCallsCollapsed,
        ] {
            let upstream = Upstream::serving(script(&case)).await;
            let mut raw = proxy::raw_config(&upstream.url());
            raw.inspect.violations = Some(violations.clone());
            raw.inject.quirks = Some(quirk.as_str().into());
            let tooltap = proxy::start(raw).await;
            let got = send(tooltap.local_addr(), &case).await;
            assert_eq!(got.headers["x-tooltap-quirk"], quirk.as_str(), "{name}");
            assert_eq!(
                got.body,
                offline_body(quirk, &case),
                "{quirk} on {name}: live and offline agree"
            );
            settle(&tooltap, 1).await;
            let id = got.headers["x-tooltap-exchange"].to_str().expect("id");
            let found = rules_marked(&violations, id, quirk);
            let declared = declared_rules(quirk, &case);
            assert_eq!(found, declared, "{quirk} on {name}");
        }
    }
}

/// The body `quirk` gives `case` offline (what `replay --quirk` serves), its frames natural.
pub(crate) fn offline_body(quirk: QuirkId, case: &Fixture) -> Vec<u8> {
    let frames: Vec<TimedFrame> = engine_support::natural_frames(case)
        .iter()
        .map(|bytes| TimedFrame {
            t_us: 0,
            bytes: Bytes::copy_from_slice(bytes),
        })
        .collect();
    let offline = quirk::apply(&[quirk], case.dialect, &case.request, &case.head, &frames);
    offline
        .frames
        .iter()
        .flat_map(|f| f.bytes.to_vec())
        .collect()
}

/// The rules the inspector reported on exchange `id`, every line marked with `quirk`.
pub(crate) fn rules_marked(
    violations: &std::path::Path,
    id: &str,
    quirk: QuirkId,
) -> BTreeSet<String> {
    let lines = violations_by_exchange(&violations.to_path_buf())
        .remove(id)
        .unwrap_or_default();
    assert!(
        lines.iter().all(|v| v["quirk"] == quirk.as_str()),
        "{lines:?}"
    );
    lines
        .iter()
        .map(|v| v["rule"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The rules the catalogue declares for `quirk` on `case`'s shape and request.
pub(crate) fn declared_rules(quirk: QuirkId, case: &Fixture) -> BTreeSet<String> {
    let shape = quirk::shape_of(&case.head).expect("a shape");
    let kind = RequestContext::parse(&case.request).kind();
    quirk
        .detected_by(shape, kind)
        .iter()
        .map(RuleId::to_string)
        .collect()
}
