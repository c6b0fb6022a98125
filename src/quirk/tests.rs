//! Unit tests of the quirk room that need no recordings: live and recorded agree, in every
//! dialect, and a quirk leaves another dialect's exchange alone.

use bytes::Bytes;

use super::*;
use crate::engine::{Dialect as EngineDialect, ResponseHead};

const REQUEST: &[u8] = br#"{"model":"m","stream":true,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}]}"#;

fn head() -> ResponseHead {
    ResponseHead {
        status: 200,
        content_type: Some("text/event-stream".to_owned()),
        content_encoding: None,
        headers: Vec::new(),
    }
}

/// A Responses and an Anthropic stream with one call, from the engine's fixtures.
const OTHER_STREAMS: [(EngineDialect, &str, &str); 2] = [
    (
        EngineDialect::Responses,
        include_str!("../../tests/fixtures/responses_pass_single_call_sse/request.json"),
        include_str!("../../tests/fixtures/responses_pass_single_call_sse/response.sse"),
    ),
    (
        EngineDialect::Anthropic,
        include_str!("../../tests/fixtures/anthropic_pair_single_sse/request.json"),
        include_str!("../../tests/fixtures/anthropic_pair_single_sse/response.sse"),
    ),
];

/// MCP answers as SSE (CRLF, `event: message`, as the Python SDK frames them): a tool list, a
/// call with `structuredContent`, an unknown tool's error.
const MCP_STREAMS: [(&str, &str); 3] = [
    (
        include_str!("../../tests/fixtures/mcp_pass_quirkbase_list_sse/request.json"),
        include_str!("../../tests/fixtures/mcp_pass_quirkbase_list_sse/response.sse"),
    ),
    (
        include_str!("../../tests/fixtures/mcp_pass_quirkbase_call_sse/request.json"),
        include_str!("../../tests/fixtures/mcp_pass_quirkbase_call_sse/response.sse"),
    ),
    (
        include_str!("../../tests/fixtures/mcp_pass_quirkbase_unknown_tool_sse/request.json"),
        include_str!("../../tests/fixtures/mcp_pass_quirkbase_unknown_tool_sse/response.sse"),
    ),
];

/// A Gemini stream (data-only SSE, CRLF): text, then two parallel calls in the finishing event.
const GEMINI_REQUEST: &str = r#"{"contents":[{"role":"user","parts":[{"text":"Weather?"}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}]}"#;
const GEMINI_SSE: &str = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Checking.\"}]},\"index\":0}]}\r\n\r\ndata: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}},{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Oslo\"}}}]},\"finishReason\":\"STOP\",\"index\":0}]}\r\n\r\n";

/// `sse` as one frame per event.
fn frames_of(sse: &str) -> Vec<TimedFrame> {
    frames_split(sse, "\n\n")
}

/// `sse` as one frame per event, events ending in `delimiter`.
fn frames_split(sse: &str, delimiter: &str) -> Vec<TimedFrame> {
    sse.split_inclusive(delimiter)
        .enumerate()
        .map(|(i, event)| TimedFrame {
            t_us: 1000 * i as u64,
            bytes: Bytes::copy_from_slice(event.as_bytes()),
        })
        .collect()
}

fn stream() -> Vec<TimedFrame> {
    let events = [
        r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]},"finish_reason":null}]}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]},"finish_reason":null}]}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ];
    events
        .iter()
        .enumerate()
        .map(|(i, data)| TimedFrame {
            t_us: 1000 * i as u64,
            bytes: Bytes::from(format!("data: {data}\n\n")),
        })
        .collect()
}

#[test]
fn live_and_recorded_send_the_same_bytes_for_every_quirk() {
    let mut exchanges = vec![(EngineDialect::Chat, REQUEST.to_vec(), stream())];
    for (dialect, request, sse) in OTHER_STREAMS {
        exchanges.push((dialect, request.as_bytes().to_vec(), frames_of(sse)));
    }
    exchanges.push((
        EngineDialect::Gemini,
        GEMINI_REQUEST.as_bytes().to_vec(),
        frames_split(GEMINI_SSE, "\r\n\r\n"),
    ));
    for (request, sse) in MCP_STREAMS {
        let frames = frames_split(sse, "\r\n\r\n");
        exchanges.push((EngineDialect::Mcp, request.as_bytes().to_vec(), frames));
    }
    let mut applied = std::collections::BTreeSet::new();
    for (dialect, request, frames) in &exchanges {
        for quirk in QuirkId::ALL {
            if live_agrees_with_recorded(quirk, *dialect, request, frames) {
                applied.insert(quirk);
            }
        }
    }
    for quirk in QuirkId::ALL {
        let streamed = quirk.shapes().contains(&Shape::Streamed);
        let chat = quirk.dialect() == Dialect::Chat;
        // The chat stream has one call: index-all-zero finds nothing to change.
        if streamed && !(chat && quirk == QuirkId::IndexAllZero) {
            assert!(
                applied.contains(&quirk),
                "{quirk} never applied to a stream"
            );
        }
    }
}

/// Runs `quirk` live and recorded over one stream; true when it applied.
fn live_agrees_with_recorded(
    quirk: QuirkId,
    dialect: EngineDialect,
    request: &[u8],
    frames: &[TimedFrame],
) -> bool {
    let recorded = apply(&[quirk], dialect, request, &head(), frames);
    let mut live = match LiveQuirks::new(&[quirk], dialect, request, &head(), 1 << 20) {
        Ok(live) => live,
        Err(NotApplicable::Shape) => {
            assert!(!quirk.shapes().contains(&Shape::Streamed), "{quirk}");
            return false;
        }
        Err(NotApplicable::Dialect) => {
            assert_ne!(quirk.dialect(), dialect, "{quirk}");
            assert_eq!(
                recorded.frames, frames,
                "{quirk}: another dialect, untouched"
            );
            assert_eq!(
                recorded.not_applicable,
                vec![(quirk, NotApplicable::Dialect)]
            );
            return false;
        }
        Err(other) => panic!("{quirk}: {other:?}"),
    };
    let mut sent = Vec::new();
    for frame in frames {
        // Split every frame in two to show held partial events are completed.
        let (a, b) = frame.bytes.split_at(frame.bytes.len() / 2);
        for part in [a, b] {
            if let Some(bytes) = live.push(part) {
                sent.extend_from_slice(&bytes);
            }
        }
    }
    if let Some(bytes) = live.finish() {
        sent.extend_from_slice(&bytes);
    }
    let expected: Vec<u8> = recorded
        .frames
        .iter()
        .flat_map(|f| f.bytes.to_vec())
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&sent),
        String::from_utf8_lossy(&expected),
        "{quirk}"
    );
    assert_eq!(live.applied(), recorded.applied.as_slice(), "{quirk}");
    !recorded.applied.is_empty()
}

#[test]
fn a_live_stream_over_the_hold_bound_passes_untouched() {
    let mut live = LiveQuirks::new(
        &[QuirkId::DoneMissing],
        EngineDialect::Chat,
        REQUEST,
        &head(),
        16,
    )
    .expect("applies");
    let big = format!("data: {{\"pad\":\"{}\"}}", "x".repeat(64));
    let first = live
        .push(big.as_bytes())
        .expect("over the bound: handed back");
    assert_eq!(first, big.as_bytes());
    assert!(live.gave_up());
    assert_eq!(
        live.push(b"\n\ndata: [DONE]\n\n").as_deref(),
        Some(&b"\n\ndata: [DONE]\n\n"[..])
    );
    assert_eq!(live.finish(), None);
    assert!(live.applied().is_empty());
}

/// A stream whose calls' arguments, each event small, add up past `max_hold`.
fn long_arguments_stream(fragments: usize) -> String {
    let mut sse = String::from(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\\\"\"}}]}}]}\n\n",
    );
    for _ in 0..fragments {
        sse.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"xxxxxxxxxxxxxxxx\"}}]}}]}\n\n");
    }
    sse.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    sse
}

/// Pushes `sse` one event per frame through `quirk` with `max_hold`; returns what was sent.
fn sent_live(quirk: QuirkId, sse: &str, max_hold: usize) -> (String, bool) {
    let mut live = LiveQuirks::new(&[quirk], EngineDialect::Chat, REQUEST, &head(), max_hold)
        .expect("applies");
    let mut sent = Vec::new();
    for event in sse.split_inclusive("\n\n") {
        sent.extend(live.push(event.as_bytes()).unwrap_or_default());
    }
    sent.extend(live.finish().unwrap_or_default());
    (String::from_utf8_lossy(&sent).into_owned(), live.gave_up())
}

#[test]
fn kept_arguments_are_bounded_by_the_hold_and_past_it_pass_untouched() {
    // Within the bound the quirk re-sends the whole arguments as an object at the finish.
    let (sent, gave_up) = sent_live(QuirkId::ArgsAsObjectStream, &long_arguments_stream(8), 4096);
    assert!(!gave_up);
    assert!(sent.contains("\"arguments\":{\"a\":"), "{sent}");
    // Past it (each event fits; the arguments together do not) the rest passes untouched and
    // nothing is owed; the give-up is reported.
    let (sent, gave_up) = sent_live(
        QuirkId::ArgsAsObjectStream,
        &long_arguments_stream(400),
        4096,
    );
    assert!(gave_up, "past the bound is said");
    assert!(!sent.contains("\"arguments\":{\"a\":"));
    assert!(
        sent.contains("\"arguments\":\"xxxxxxxxxxxxxxxx\""),
        "later fragments untouched"
    );
    // A quirk that never re-sends arguments keeps none, so never passes the bound.
    let (_, gave_up) = sent_live(QuirkId::NameOnEveryChunk, &long_arguments_stream(400), 4096);
    assert!(!gave_up);
}

#[test]
fn catalogue_ids_round_trip_and_every_quirk_is_detected_or_says_why_not() {
    let mut seen = std::collections::HashSet::new();
    for quirk in QuirkId::ALL {
        assert!(seen.insert(quirk.as_str()));
        assert_eq!(quirk.as_str().parse::<QuirkId>(), Ok(quirk));
        assert!(
            quirk.seen().link.starts_with("https://") || quirk.seen().link.starts_with("docs/")
        );
        assert!(!quirk.description().is_empty());
        assert!(!quirk.shapes().is_empty());
    }
}

#[test]
fn the_chat_surface_no_quirk_models_is_not_applicable_and_custom_fragments_do_not_panic() {
    let legacy = br#"{"model":"m","stream":true,"functions":[{"name":"f"}]}"#;
    let custom =
        br#"{"model":"m","stream":true,"tools":[{"type":"custom","custom":{"name":"p"}}]}"#;
    for request in [&legacy[..], &custom[..]] {
        for quirk in QuirkId::ALL {
            let chat = EngineDialect::Chat;
            let applied = apply(&[quirk], chat, request, &head(), &stream());
            assert!(applied.applied.is_empty(), "{quirk}");
            assert_eq!(applied.frames, stream(), "{quirk}: untouched");
            let reason = match quirk.dialect() {
                Dialect::Chat => NotApplicable::Surface,
                Dialect::Responses
                | Dialect::Anthropic
                | Dialect::Gemini
                | Dialect::Ollama
                | Dialect::Bedrock
                | Dialect::Mcp => NotApplicable::Dialect,
            };
            assert_eq!(applied.not_applicable, vec![(quirk, reason)]);
            assert_eq!(
                LiveQuirks::new(&[quirk], chat, request, &head(), 1 << 20).err(),
                Some(reason)
            );
        }
    }
    // A `tools` request whose stream carries a custom tool-call fragment (no `function` object)
    // is rewritten without a panic.
    let mut frames = stream();
    frames[1].bytes = Bytes::from_static(
        br#"data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"custom","custom":{"name":"p","input":""}}]},"finish_reason":null}]}

"#,
    );
    for quirk in QuirkId::ALL {
        let _ = apply(&[quirk], EngineDialect::Chat, REQUEST, &head(), &frames);
    }
}
