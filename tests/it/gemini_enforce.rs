//! Enforce mode on Gemini's streamed JSON array (`:streamGenerateContent` without `alt=sse`),
//! through the real proxy from a real upstream: the element that completes a violation (for a
//! call's rules, the one that finishes its candidate), and every element after it, never reach
//! the client; the array is closed with Google's error object
//! (`{"error":{"code","message","status"}}`) as its last element, so the body still parses and
//! the SDKs raise; a clean array passes byte for byte; and the recording of the cut replays as
//! the client saw it.

use std::time::{Duration, Instant};

use http_body_util::BodyExt;

use bytes::Bytes;
use serde_json::Value;

use crate::support::TempDir;
use crate::support::client::{Collected, exchange, request, send};
use crate::support::gemini::{MODEL, request_body};
use crate::support::proxy;
use crate::support::recording::recordings_written;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;
use tooltap::proxy::server::RunningProxy;
use tooltap::record::RecordMode;

/// The streamed method without `alt=sse`: a JSON array.
fn stream() -> String {
    format!("{MODEL}:streamGenerateContent")
}

const TEXT: &str =
    r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking."}]},"index":0}]}"#;
/// `args` sent as a JSON string (`gemini.response.function_call_args_not_object`, an error),
/// judged when the candidate finishes: this element carries its `finishReason`, so it completes
/// the violation.
const BROKEN: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":"{\"city\":\"Paris\"}"}}]},"finishReason":"STOP","index":0}]}"#;
/// What an upstream sent after it: never forwarded.
const AFTER: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"NEVER-FORWARDED"}]},"index":0}]}"#;
const CALL: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},"finishReason":"STOP","index":0}]}"#;

/// The stream request posted to `addr`, read whole.
async fn post_stream(addr: std::net::SocketAddr) -> Collected {
    let request = request(addr, "POST", &stream(), &request_body("Paris"));
    within(Duration::from_secs(30), exchange(addr, request)).await
}

/// An enforcing proxy in front of an upstream serving `script`.
async fn enforcing(script: Script) -> (RunningProxy, Upstream) {
    let upstream = Upstream::serving(script).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    (proxy::start(raw).await, upstream)
}

/// A chunked `application/json` body sent in these frames, 10 ms apart.
fn array(frames: &[String]) -> Script {
    Script {
        status: 200,
        headers: vec![(
            "content-type".into(),
            "application/json; charset=UTF-8".into(),
        )],
        chunks: frames
            .iter()
            .map(|frame| (Duration::from_millis(10), Bytes::from(frame.clone())))
            .collect(),
        silent: false,
        abort: false,
    }
}

/// The broken stream: the text element split across two frames, then the broken element with
/// the next one in the same frame, then the close.
fn broken_frames() -> Vec<String> {
    let (head, tail) = TEXT.split_at(30);
    vec![
        format!("[{head}"),
        format!("{tail}\r\n"),
        format!(",\r\n{BROKEN}\r\n,\r\n{AFTER}"),
        "\r\n]".to_owned(),
    ]
}

fn clean_frames() -> Vec<String> {
    vec![format!("[{TEXT}\r\n"), format!(",\r\n{CALL}\r\n]")]
}

#[tokio::test]
async fn a_refused_json_array_stream_ends_in_googles_error_and_replays_as_sent() {
    let upstream = Upstream::start(
        |received| match received.uri.ends_with("?clean") {
            true => array(&clean_frames()),
            false => array(&broken_frames()),
        },
        None,
    )
    .await;
    let dir = TempDir::new("gemini-enforce");
    let recordings = dir.join("rec");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(recordings.clone());
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();

    let cut = post_stream(addr).await;
    assert_eq!(cut.status, 200, "the head went before the violation");
    let text = String::from_utf8_lossy(&cut.body).into_owned();
    assert!(!text.contains("NEVER-FORWARDED"), "{text}");
    let parsed: Value = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("the client's body is not JSON ({error}): {text}"));
    let elements = parsed.as_array().expect("still an array");
    assert_eq!(elements.len(), 2, "{text}");
    assert_eq!(
        elements[0],
        serde_json::from_str::<Value>(TEXT).expect("json")
    );
    let error = &elements[1]["error"];
    assert_eq!(error["code"], 502, "{text}");
    assert!(error["status"].is_string(), "{text}");
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains("gemini.response.function_call_args_not_object"),
        "{message}"
    );
    assert!(
        text.starts_with(&format!("[{TEXT},{{\"error\"")),
        "the forwarded bytes are the upstream's up to the last good element: {text}"
    );

    let clean = exchange(
        addr,
        request(
            addr,
            "POST",
            &format!("{}?clean", stream()),
            &request_body("Paris"),
        ),
    )
    .await;
    assert_eq!(
        clean.body,
        clean_frames().concat().as_bytes(),
        "a clean array passes byte for byte"
    );

    // The recording keeps the upstream's frames and says what the client got instead.
    recordings_written(&tooltap, &recordings, 2).await;
    let replay = proxy::start_replay(recordings, None).await;
    let replayed = exchange(
        replay.local_addr(),
        request(
            replay.local_addr(),
            "POST",
            &stream(),
            &request_body("Paris"),
        ),
    )
    .await;
    assert_eq!(replayed.body, cut.body, "replay serves what the client saw");
}

/// A stream that ends without a finish reason (`gemini.stream.no_finish_reason`, judged at the
/// end): every element reaches the client, and the error element takes the place of the `]`.
#[tokio::test]
async fn an_array_judged_at_its_end_gets_the_error_in_place_of_its_close() {
    let frames = vec![
        format!("[{TEXT}\r\n"),
        format!(",\r\n{TEXT}\r\n"),
        "]".to_owned(),
    ];
    let (tooltap, _upstream) = enforcing(array(&frames)).await;
    let got = post_stream(tooltap.local_addr()).await;
    let text = String::from_utf8_lossy(&got.body).into_owned();
    assert!(
        text.starts_with(&format!("[{TEXT}\r\n,\r\n{TEXT},{{\"error\":")),
        "every element, then the error: {text}"
    );
    let parsed: Value = serde_json::from_str(&text).expect("a valid array");
    let elements = parsed.as_array().expect("array");
    assert_eq!(elements.len(), 3);
    assert_eq!(
        elements[2]["error"]["details"][0]["metadata"]["rule"],
        "gemini.stream.no_finish_reason"
    );
}

/// An element past the bound enforce mode holds (the engine's element bound, 8 MiB): what was
/// held is forwarded then, before the element ends, and the rest of the stream passes
/// unenforced, byte for byte; the passive inspector reports the exchange `too_large` (its framer
/// stops at the same bound). Without the bound the client would get nothing of the element
/// before its last byte came.
#[tokio::test]
async fn an_element_past_the_bound_is_forwarded_before_its_end_and_unenforced() {
    let big = format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"text":"{}"}}]}},"index":0}}]}}"#,
        "a".repeat(9 << 20)
    );
    let body = format!("[{TEXT},\r\n{big},\r\n{BROKEN}]");
    // All but the element's last 64 bytes at once, then the rest two seconds later: time for a
    // debug build on a loaded machine to forward the 8 MiB before it.
    let split = body.len() - BROKEN.len() - 64;
    let mut script = array(&[]);
    for chunk in body.as_bytes()[..split].chunks(256 << 10) {
        script
            .chunks
            .push((Duration::ZERO, Bytes::copy_from_slice(chunk)));
    }
    let rest = Bytes::copy_from_slice(&body.as_bytes()[split..]);
    script.chunks.push((Duration::from_secs(2), rest));
    let (tooltap, upstream) = enforcing(script).await;
    let addr = tooltap.local_addr();
    let request = request(addr, "POST", &stream(), &request_body("Paris"));
    let (response, _conn) = send(addr, request).await;
    assert_eq!(response.status(), 200);
    let mut incoming = response.into_body();
    let mut got = Vec::new();
    let mut past_bound_at = None;
    while let Some(frame) = within(Duration::from_secs(30), incoming.frame()).await {
        if let Ok(data) = frame.expect("body frame").into_data() {
            got.extend_from_slice(&data);
            if past_bound_at.is_none() && got.len() > 8 << 20 {
                past_bound_at = Some(Instant::now());
            }
        }
    }
    assert!(got == body.as_bytes(), "the whole body, unchanged");
    let last_chunk = *upstream.chunk_times().last().expect("chunks sent");
    assert!(
        past_bound_at.expect("more than the bound arrived") < last_chunk,
        "the held element went out once past the bound, before its end"
    );
    let text = crate::support::fixtures::settle(&tooltap, 1).await;
    crate::support::metrics::assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"too_large\""] == 1
    );
}

/// A gzip-encoded array: element ends cannot be found in compressed bytes, nor an error element
/// appended to them, so it is held, judged whole and refused with a 502 in Google's shape.
#[tokio::test]
async fn a_content_encoded_array_is_refused_whole() {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(broken_frames().concat().as_bytes())
        .expect("gzip");
    let gzipped = encoder.finish().expect("gzip");
    let mut script = array(&[]);
    script.chunks = gzipped
        .chunks(64)
        .map(|chunk| (Duration::ZERO, Bytes::copy_from_slice(chunk)))
        .collect();
    script
        .headers
        .push(("content-encoding".into(), "gzip".into()));
    let (tooltap, _upstream) = enforcing(script).await;
    let got = post_stream(tooltap.local_addr()).await;
    assert_eq!(got.status, 502);
    let error = &got.json()["error"];
    assert_eq!(error["status"], "INTERNAL");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("gemini.response.function_call_args_not_object")),
        "{error}"
    );
}
