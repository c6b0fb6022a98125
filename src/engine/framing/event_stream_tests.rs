//! Tests of the event-stream decoder: the reference's golden frame, every header type, each
//! corruption, the size bound, and chunk-boundary invariance (proptest).

use proptest::prelude::*;

use super::*;

const DELTA: &[u8] = br#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"city\":"}}}"#;

fn delta_frame() -> Vec<u8> {
    encode(
        &[
            (":event-type", "contentBlockDelta"),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        DELTA,
    )
}

fn decode_all(chunks: &[&[u8]], max: usize) -> (Vec<Message>, DecodeEnd, bool) {
    let mut decoder = EventStreamDecoder::new(max);
    let mut out = Vec::new();
    let mut too_large = false;
    for chunk in chunks {
        too_large |= decoder.push(chunk, &mut out).is_err();
    }
    (out, decoder.end(), too_large)
}

#[test]
fn the_reference_frame_is_written_and_read_byte_for_byte() {
    let frame = delta_frame();
    assert_eq!(frame.len(), 169);
    assert_eq!(
        &frame[..12],
        &[0, 0, 0, 0xa9, 0, 0, 0, 0x57, 0xed, 0x1a, 0xe6, 0xd9]
    );
    assert_eq!(&frame[165..], &[0xac, 0x1d, 0x8d, 0x4b]);
    let (messages, end, _) = decode_all(&[&frame], 1 << 20);
    assert_eq!(end, DecodeEnd::Clean);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].header(":event-type"), Some("contentBlockDelta"));
    assert_eq!(messages[0].payload, DELTA);
    let event = to_event(messages[0].clone());
    assert_eq!(event.event.as_deref(), Some("contentBlockDelta"));
    assert_eq!(event.data.as_bytes(), DELTA);
}

/// A message with one header of every type, its CRCs computed here.
fn every_type() -> Vec<u8> {
    let mut block = Vec::new();
    let mut header = |name: &str, kind: u8, value: &[u8]| {
        block.push(name.len() as u8);
        block.extend_from_slice(name.as_bytes());
        block.push(kind);
        block.extend_from_slice(value);
    };
    header("t", 0, &[]);
    header("f", 1, &[]);
    header("b", 2, &[0xff]);
    header("s", 3, &(-2i16).to_be_bytes());
    header("i", 4, &70000i32.to_be_bytes());
    header("l", 5, &(-5i64).to_be_bytes());
    header("y", 6, &[0, 2, 0xde, 0xad]);
    header("z", 7, &[0, 2, b'o', b'k']);
    header("ts", 8, &1_700_000_000_000i64.to_be_bytes());
    header("u", 9, &[7; 16]);
    raw_message(&block, b"{}")
}

fn raw_message(block: &[u8], payload: &[u8]) -> Vec<u8> {
    let total = 16 + block.len() + payload.len();
    let mut message = Vec::new();
    message.extend_from_slice(&(total as u32).to_be_bytes());
    message.extend_from_slice(&(block.len() as u32).to_be_bytes());
    message.extend_from_slice(&crc32fast::hash(&message).to_be_bytes());
    message.extend_from_slice(block);
    message.extend_from_slice(payload);
    message.extend_from_slice(&crc32fast::hash(&message).to_be_bytes());
    message
}

#[test]
fn every_header_type_is_read() {
    let (messages, end, _) = decode_all(&[&every_type()], 1 << 20);
    assert_eq!(end, DecodeEnd::Clean);
    let headers = &messages[0].headers;
    let values: Vec<&HeaderValue> = headers.iter().map(|(_, value)| value).collect();
    assert_eq!(
        values,
        [
            &HeaderValue::Bool(true),
            &HeaderValue::Bool(false),
            &HeaderValue::Byte(-1),
            &HeaderValue::Short(-2),
            &HeaderValue::Int(70000),
            &HeaderValue::Long(-5),
            &HeaderValue::Bytes(vec![0xde, 0xad]),
            &HeaderValue::String("ok".to_owned()),
            &HeaderValue::Timestamp(1_700_000_000_000),
            &HeaderValue::Uuid([7; 16]),
        ]
    );
}

#[test]
fn a_decoded_message_of_every_header_type_encodes_to_its_own_bytes() {
    for bytes in [every_type(), delta_frame()] {
        let (messages, end, _) = decode_all(&[&bytes], 1 << 20);
        assert_eq!(end, DecodeEnd::Clean);
        assert_eq!(messages[0].encode(), bytes);
    }
    // A rewritten payload is written with its new lengths and both CRCs right.
    let (mut messages, _, _) = decode_all(&[&every_type()], 1 << 20);
    messages[0].payload = b"{\"longer\":\"payload\"}".to_vec();
    let rewritten = messages[0].encode();
    let (again, end, _) = decode_all(&[&rewritten], 1 << 20);
    assert_eq!(end, DecodeEnd::Clean);
    assert_eq!(again, messages);
}

#[test]
fn corruptions_stop_decoding_and_say_which() {
    let good = delta_frame();
    let mut prelude = good.clone();
    prelude[8] ^= 1;
    let mut message = good.clone();
    message[100] ^= 1;
    let short = {
        let mut bytes = vec![0, 0, 0, 10, 0, 0, 0, 0];
        bytes.extend_from_slice(&crc32fast::hash(&bytes).to_be_bytes());
        bytes
    };
    let unknown_type = raw_message(&[1, b'x', 12, 0, 0], b"{}");
    let overrun = raw_message(&[1, b'x', 7, 0, 9, b'a'], b"{}");
    for (bytes, problem) in [
        (prelude, "prelude_crc_mismatch"),
        (message, "message_crc_mismatch"),
        (short, "length_invalid"),
        (unknown_type, "header_type_unknown"),
        (overrun, "length_invalid"),
    ] {
        let mut body = good.clone();
        body.extend_from_slice(&bytes);
        body.extend_from_slice(&good);
        let (messages, end, too_large) = decode_all(&[&body], 1 << 20);
        assert!(!too_large);
        assert_eq!(messages.len(), 1, "{problem}: only the good first message");
        match end {
            DecodeEnd::Corrupt { offset, corruption } => {
                assert_eq!(offset, good.len() as u64, "{problem}");
                assert_eq!(corruption.problem(), problem);
            }
            other => panic!("{problem}: {other:?}"),
        }
    }
}

#[test]
fn a_cut_message_is_truncated_and_a_large_one_stops_at_the_bound() {
    let frame = delta_frame();
    let (messages, end, _) = decode_all(&[&frame[..100]], 1 << 20);
    assert!(messages.is_empty());
    assert_eq!(end, DecodeEnd::Truncated { pending: 100 });
    let (messages, end, too_large) = decode_all(&[&frame, &frame], 168);
    assert!(too_large && messages.is_empty());
    assert_eq!(end, DecodeEnd::TooLarge { offset: 0 });
}

#[test]
fn exceptions_and_errors_become_colon_named_events() {
    let exception = encode(
        &[
            (":message-type", "exception"),
            (":exception-type", "throttlingException"),
        ],
        br#"{"message":"slow down"}"#,
    );
    let error = encode(
        &[
            (":message-type", "error"),
            (":error-code", "InternalFailure"),
            (":error-message", "boom"),
        ],
        b"",
    );
    let (messages, _, _) = decode_all(&[&exception, &error], 1 << 20);
    let events: Vec<SseEvent> = messages.into_iter().map(to_event).collect();
    assert_eq!(
        events[0].event.as_deref(),
        Some(":exception:throttlingException")
    );
    assert_eq!(events[0].data, r#"{"message":"slow down"}"#);
    assert_eq!(events[1].event.as_deref(), Some(":error:InternalFailure"));
    assert_eq!(events[1].data, "boom");
}

fn body_strategy() -> impl Strategy<Value = Vec<u8>> {
    let message = (0usize..4, prop::collection::vec(any::<u8>(), 0..40)).prop_map(
        |(pick, payload)| match pick {
            0 => delta_frame(),
            1 => every_type(),
            2 => encode(&[(":event-type", "metadata")], &payload),
            _ => payload,
        },
    );
    prop::collection::vec(message, 0..6).prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn splitting_the_body_anywhere_changes_nothing(
        body in body_strategy(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let whole = decode_all(&[&body], 1 << 16);
        let offsets = cuts.iter().map(|cut| cut.index(body.len() + 1));
        let chunks = crate::engine::framing::split_driver::cut_at(&body, offsets);
        prop_assert_eq!(decode_all(&chunks, 1 << 16), whole.clone());
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        prop_assert_eq!(decode_all(&bytes, 1 << 16), whole);
    }
}
