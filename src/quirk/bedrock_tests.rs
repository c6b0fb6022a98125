//! Bedrock's quirks over a ConverseStream built here (text, then two parallel toolUse blocks):
//! live and recorded send the same bytes whatever the frame split, and the rewritten stream
//! decodes with both CRCs right, except where the quirk means it not to.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::engine::framing::EventStreamDecoder;
use crate::engine::framing::event_stream::{Corruption, DecodeEnd, Message, encode};
use crate::engine::{Dialect, ResponseHead};
use crate::quirk::{LiveQuirks, QuirkId, TimedFrame, apply};

const REQUEST: &[u8] = br#"{"messages":[{"role":"user","content":[{"text":"Weather?"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}}}}]}}"#;

fn head(content_type: &str) -> ResponseHead {
    ResponseHead {
        status: 200,
        content_type: Some(content_type.to_owned()),
        content_encoding: None,
        ..ResponseHead::default()
    }
}

fn event(name: &str, payload: Value) -> Vec<u8> {
    encode(
        &[
            (":event-type", name),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// The stream's messages, one per frame.
fn stream() -> Vec<Vec<u8>> {
    let delta = |index: u32, delta: Value| {
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": index, "delta": delta}),
        )
    };
    let start = |index: u32, id: &str| {
        event(
            "contentBlockStart",
            json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": "get_weather"}}}),
        )
    };
    let stop = |index: u32| event("contentBlockStop", json!({"contentBlockIndex": index}));
    vec![
        event("messageStart", json!({"role": "assistant"})),
        delta(0, json!({"text": "Checking."})),
        stop(0),
        start(1, "tooluse_a"),
        delta(1, json!({"toolUse": {"input": "{\"city\":"}})),
        delta(1, json!({"toolUse": {"input": "\"Paris\"}"}})),
        stop(1),
        start(2, "tooluse_b"),
        delta(2, json!({"toolUse": {"input": "{\"city\":\"Oslo\"}"}})),
        stop(2),
        event("messageStop", json!({"stopReason": "tool_use"})),
        event(
            "metadata",
            json!({"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}),
        ),
    ]
}

fn decode(body: &[u8]) -> (Vec<Message>, DecodeEnd) {
    let mut decoder = EventStreamDecoder::new(1 << 20);
    let mut messages = Vec::new();
    decoder.push(body, &mut messages).expect("within the bound");
    (messages, decoder.end())
}

fn payloads(messages: &[Message]) -> Vec<(String, Value)> {
    messages
        .iter()
        .map(|m| {
            let name = m.header(":event-type").unwrap_or_default().to_owned();
            (name, serde_json::from_slice(&m.payload).expect("json"))
        })
        .collect()
}

/// `quirk` recorded over one frame per message, and live over 7-byte pushes: the same bytes.
fn quirked(quirk: QuirkId, content_type: &str, frames: &[Vec<u8>]) -> Vec<u8> {
    let timed: Vec<TimedFrame> = frames
        .iter()
        .enumerate()
        .map(|(i, bytes)| TimedFrame {
            t_us: 1000 * i as u64,
            bytes: Bytes::copy_from_slice(bytes),
        })
        .collect();
    let recorded = apply(
        &[quirk],
        Dialect::Bedrock,
        REQUEST,
        &head(content_type),
        &timed,
    );
    assert_eq!(
        recorded.applied,
        vec![quirk],
        "{:?}",
        recorded.not_applicable
    );
    let body: Vec<u8> = frames.concat();
    let mut live = LiveQuirks::new(
        &[quirk],
        Dialect::Bedrock,
        REQUEST,
        &head(content_type),
        1 << 20,
    )
    .expect("applies");
    let mut sent = Vec::new();
    for piece in body.chunks(7) {
        sent.extend(live.push(piece).unwrap_or_default());
    }
    sent.extend(live.finish().unwrap_or_default());
    let expected: Vec<u8> = recorded
        .frames
        .iter()
        .flat_map(|f| f.bytes.to_vec())
        .collect();
    assert_eq!(sent, expected, "{quirk}: live and recorded agree");
    assert_eq!(live.applied(), [quirk]);
    expected
}

const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// The stream with `quirk` applied, decoded: it must decode clean (both CRCs right); its
/// messages and their events' payloads.
fn decoded_clean(quirk: QuirkId) -> (Vec<Message>, Vec<(String, Value)>) {
    let (messages, end) = decode(&quirked(quirk, EVENT_STREAM, &stream()));
    assert_eq!(end, DecodeEnd::Clean, "{quirk}");
    let got = payloads(&messages);
    (messages, got)
}

#[test]
fn each_stream_quirk_rewrites_its_messages_and_keeps_the_crcs_right() {
    let original = payloads(&decode(&stream().concat()).0);

    let (_, got) = decoded_clean(QuirkId::BedrockStopReasonEndTurn);
    assert_eq!(got[10].1, json!({"stopReason": "end_turn"}));
    assert_eq!(got[..10], original[..10], "only messageStop changed");

    let (_, got) = decoded_clean(QuirkId::BedrockToolUseIdReused);
    assert_eq!(
        got[7].1.pointer("/start/toolUse/toolUseId"),
        Some(&json!("tooluse_a"))
    );
    assert_eq!(got[3], original[3], "the first block keeps its id");

    let (messages, got) = decoded_clean(QuirkId::BedrockEmptyTextStart);
    assert_eq!(got.len(), original.len() + 1);
    assert_eq!(
        got[1],
        (
            "contentBlockStart".to_owned(),
            json!({"contentBlockIndex": 0, "start": {}})
        )
    );
    assert_eq!(messages[1].headers.len(), 3, "the delta's headers");
    assert_eq!(got[2..], original[1..]);

    let (_, got) = decoded_clean(QuirkId::BedrockInputNotJson);
    assert_eq!(
        got[4].1.pointer("/delta/toolUse/input"),
        Some(&json!("{'city':"))
    );
    assert_eq!(
        got[8].1.pointer("/delta/toolUse/input"),
        Some(&json!("{'city':'Oslo'}"))
    );

    let body = quirked(QuirkId::BedrockFrameBadCrc, EVENT_STREAM, &stream());
    let original_body = stream().concat();
    assert_eq!(body.len(), original_body.len());
    let differ: Vec<usize> = (0..body.len())
        .filter(|&i| body[i] != original_body[i])
        .collect();
    let first_delta_end: usize = stream()[..2].iter().map(Vec::len).sum();
    assert_eq!(
        differ,
        [first_delta_end - 1],
        "one byte of the first delta's CRC"
    );
    let (messages, end) = decode(&body);
    assert_eq!(messages.len(), 1);
    assert!(matches!(
        end,
        DecodeEnd::Corrupt {
            corruption: Corruption::MessageCrc { .. },
            ..
        }
    ));
}

#[test]
fn buffered_converse_quirks_and_what_does_not_apply() {
    let body = json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_a", "name": "get_weather", "input": {"city": "Paris"}}},
            {"toolUse": {"toolUseId": "tooluse_b", "name": "get_weather", "input": {"city": "Oslo"}}}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
        "metrics": {"latencyMs": 1}
    });
    let frames = vec![body.to_string().into_bytes()];
    let json_type = "application/json";
    let end_turn: Value = serde_json::from_slice(&quirked(
        QuirkId::BedrockStopReasonEndTurn,
        json_type,
        &frames,
    ))
    .expect("json");
    assert_eq!(end_turn["stopReason"], "end_turn");
    let reused: Value = serde_json::from_slice(&quirked(
        QuirkId::BedrockToolUseIdReused,
        json_type,
        &frames,
    ))
    .expect("json");
    assert_eq!(
        reused.pointer("/output/message/content/2/toolUse/toolUseId"),
        Some(&json!("tooluse_a"))
    );
    // Stream-only quirks on a buffered body, a text-only stream and a corrupt stream.
    let timed = |frames: &[Vec<u8>]| -> Vec<TimedFrame> {
        frames
            .iter()
            .map(|bytes| TimedFrame {
                t_us: 0,
                bytes: Bytes::copy_from_slice(bytes),
            })
            .collect()
    };
    let applied = apply(
        &[QuirkId::BedrockEmptyTextStart],
        Dialect::Bedrock,
        REQUEST,
        &head(json_type),
        &timed(&frames),
    );
    assert_eq!(
        applied.not_applicable,
        vec![(
            QuirkId::BedrockEmptyTextStart,
            crate::quirk::NotApplicable::Shape
        )]
    );
    let mut text_only = stream();
    text_only.drain(3..10);
    for quirk in [
        QuirkId::BedrockToolUseIdReused,
        QuirkId::BedrockInputNotJson,
        QuirkId::BedrockStopReasonEndTurn,
    ] {
        let applied = apply(
            &[quirk],
            Dialect::Bedrock,
            REQUEST,
            &head(EVENT_STREAM),
            &timed(&text_only),
        );
        assert!(applied.applied.is_empty(), "{quirk}");
        assert_eq!(applied.frames, timed(&text_only), "{quirk}: untouched");
    }
    // Past a message that does not decode, nothing is rewritten.
    let mut corrupt = stream();
    let last = corrupt[1].len() - 1;
    corrupt[1][last] ^= 1;
    let applied = apply(
        &[QuirkId::BedrockStopReasonEndTurn],
        Dialect::Bedrock,
        REQUEST,
        &head(EVENT_STREAM),
        &timed(&corrupt),
    );
    assert!(applied.applied.is_empty());
}
