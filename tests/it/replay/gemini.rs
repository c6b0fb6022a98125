//! Gemini exchanges recorded through the live proxy from a real upstream, then replayed: an SSE
//! stream framed with CRLF, a streamed JSON array whose bracket, elements and commas are split
//! across frames, and a buffered answer come back with their exact bytes, frame boundaries and
//! content type. One request body is recorded twice, with `alt=sse` and without: each query
//! gets its own recording; the `key=` and `x-goog-api-key` credentials make no miss.

use std::time::Duration;

use bytes::Bytes;

use super::support::{Received, TempDir, post_with};
use crate::support::gemini::{MODEL, request_body};
use crate::support::proxy;
use crate::support::recording::recordings_written;
use crate::support::upstream::{Script, Upstream};

const KEY: &str = "AIzaSyReplayPlanted-9d8c";

/// Data-only SSE with CRLF, one event per frame.
const SSE: [&str; 2] = [
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Checking.\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,\"totalTokenCount\":11}}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":6,\"totalTokenCount\":15}}\r\n\r\n",
];

/// The same answer as a JSON array, cut where TCP reads cut it: `[` alone, an element split
/// inside a string, the comma leading the next element, `]` alone.
const ARRAY: [&str; 5] = [
    "[",
    "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Chec",
    "king.\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,\"totalTokenCount\":11}}\r\n",
    ",\r\n{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":6,\"totalTokenCount\":15}}\r\n",
    "]",
];

const BUFFERED: &str = "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":6,\"totalTokenCount\":15}}";

fn chunked(content_type: &str, frames: &[&str]) -> Script {
    Script {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        chunks: frames
            .iter()
            .map(|frame| {
                (
                    Duration::from_millis(15),
                    Bytes::copy_from_slice(frame.as_bytes()),
                )
            })
            .collect(),
        silent: false,
        abort: false,
    }
}

/// The three requests: (path with query, the frames the upstream sends, its content type).
fn cases() -> [(String, Vec<&'static str>, &'static str); 3] {
    [
        (
            format!("{MODEL}:streamGenerateContent?alt=sse&key={KEY}"),
            SSE.to_vec(),
            "text/event-stream",
        ),
        (
            format!("{MODEL}:streamGenerateContent?key={KEY}"),
            ARRAY.to_vec(),
            "application/json; charset=UTF-8",
        ),
        (
            format!("{MODEL}:generateContent?key={KEY}"),
            vec![BUFFERED],
            "application/json; charset=UTF-8",
        ),
    ]
}

fn frames(received: &Received) -> Vec<String> {
    received
        .frames
        .iter()
        .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
        .collect()
}

#[tokio::test]
async fn gemini_streams_replay_with_their_bytes_boundaries_and_content_type() {
    let upstream = Upstream::start(
        |received| {
            let (_, frames, content_type) = cases()
                .into_iter()
                .find(|(path, _, _)| *path == received.uri)
                .expect("a known request");
            chunked(content_type, &frames)
        },
        None,
    )
    .await;
    let dir = TempDir::new("replay-gemini");
    let recordings = dir.join("rec");
    let tooltap = proxy::start_recording(&upstream.url(), &dir.join("v.jsonl"), &recordings).await;
    let body = request_body("Paris");
    let key_header = [("x-goog-api-key", KEY)];
    for (path, frames_sent, _) in cases() {
        let live = post_with(tooltap.local_addr(), &path, body.as_bytes(), &key_header).await;
        assert_eq!(live.status, 200);
        assert_eq!(frames(&live), frames_sent, "{path}: live, as sent");
    }
    let files = recordings_written(&tooltap, &recordings, 3).await;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        assert!(!text.contains(KEY), "{} holds the key", file.display());
    }

    let replay = proxy::start_replay(recordings, None).await;
    // Twice over: a recording is served again, and every query finds its own.
    for _ in 0..2 {
        for (path, frames_sent, content_type) in cases() {
            let replayed =
                post_with(replay.local_addr(), &path, body.as_bytes(), &key_header).await;
            assert_eq!(replayed.status, 200, "{path}: {:?}", frames(&replayed));
            assert_eq!(replayed.header("content-type"), content_type, "{path}");
            assert_eq!(frames(&replayed), frames_sent, "{path}: replayed");
        }
    }
    // Without the key at all (a client configured another way): still a match.
    let (path, frames_sent, _) = &cases()[1];
    let bare = path.replace(&format!("?key={KEY}"), "");
    let replayed = post_with(replay.local_addr(), &bare, body.as_bytes(), &[]).await;
    assert_eq!(frames(&replayed), *frames_sent);
}
