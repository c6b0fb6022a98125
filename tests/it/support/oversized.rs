//! Bodies that attack the NDJSON and event-stream framing bounds (`max_sse_line`, 8 MiB, built
//! in): an Ollama NDJSON line and a Bedrock event-stream message of a chosen size, and a prelude
//! that announces a message longer than the bytes that follow. Used by `it::bad_input` (the
//! verdict through the in-process proxy) and `it::memory_rss` (the real binary's memory).

/// The request an Ollama `/api/chat` stream answers.
pub const OLLAMA_REQUEST: &str =
    r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
/// The request a Bedrock `converse-stream` answers, and its path.
pub const CONVERSE_REQUEST: &str = r#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#;
pub const CONVERSE_STREAM: &str = "/model/m/converse-stream";
pub const NDJSON: &str = "application/x-ndjson";
pub const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// An Ollama stream whose first line carries `len` bytes of text, then its `done` line.
pub fn ndjson_line(len: usize) -> Vec<u8> {
    let mut lines = br#"{"model":"m","message":{"role":"assistant","content":""#.to_vec();
    lines.extend(std::iter::repeat_n(b'a', len));
    lines.extend_from_slice(b"\"},\"done\":false}\n");
    lines.extend_from_slice(
        br#"{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}"#,
    );
    lines.push(b'\n');
    lines
}

/// One event-stream event message, both CRCs right.
pub fn bedrock_event(name: &str, payload: &[u8]) -> Vec<u8> {
    tooltap::engine::framing::event_stream::encode(
        &[
            (":event-type", name),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload,
    )
}

/// A ConverseStream whose one text delta message carries `len` bytes of text, then its usual
/// end (stop, messageStop, metadata).
pub fn event_stream_message(len: usize) -> Vec<u8> {
    let mut body = bedrock_event("messageStart", br#"{"role":"assistant"}"#);
    let mut text = br#"{"contentBlockIndex":0,"delta":{"text":""#.to_vec();
    text.extend(std::iter::repeat_n(b'a', len));
    text.extend_from_slice(b"\"}}");
    body.extend(bedrock_event("contentBlockDelta", &text));
    body.extend(bedrock_event(
        "contentBlockStop",
        br#"{"contentBlockIndex":0}"#,
    ));
    body.extend(bedrock_event(
        "messageStop",
        br#"{"stopReason":"end_turn"}"#,
    ));
    body.extend(bedrock_event(
        "metadata",
        br#"{"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}"#,
    ));
    body
}

/// `messageStart`, then a prelude (its CRC right) announcing a message of `announced` bytes,
/// followed by only `sent` bytes of it, and the end.
pub fn event_stream_announcing(announced: u32, sent: usize) -> Vec<u8> {
    let mut body = bedrock_event("messageStart", br#"{"role":"assistant"}"#);
    let mut prelude = announced.to_be_bytes().to_vec();
    prelude.extend_from_slice(&0u32.to_be_bytes());
    let crc = crc32fast::hash(&prelude);
    prelude.extend_from_slice(&crc.to_be_bytes());
    body.extend_from_slice(&prelude);
    body.extend(std::iter::repeat_n(b'p', sent));
    body
}
