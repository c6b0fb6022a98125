//! Record → replay: a raw HTTP/1.1 client receives the recorded frames byte for byte, with the
//! recorded boundaries, and the recorded head minus the re-framed length headers.

use crate::replay::support::{Fixture, TempDir, chat, connect, post_json, settings, start};

/// Frames a client accumulator must survive: an event split mid-JSON, a UTF-8 code point split
/// across frames, a frame that is not UTF-8 at all (stored as base64), two events in one frame.
fn tricky_frames() -> Vec<(u64, Vec<u8>)> {
    let snow = "data: {\"c\":\"❄\"}\n\n".as_bytes();
    let cut = snow.iter().position(|b| *b == 0xE2).expect("multibyte") + 1;
    vec![
        (100, b"data: {\"id\":\"c1\",\"cho".to_vec()),
        (200, b"ices\":[]}\n\n".to_vec()),
        (300, snow[..cut].to_vec()),
        (400, snow[cut..].to_vec()),
        (500, vec![0xff, 0xfe, b'\n', b'\n']),
        (600, b": ping\n\ndata: {\"a\":1}\n\n".to_vec()),
        (700, b"data: [DONE]\n\n".to_vec()),
    ]
}

#[tokio::test]
async fn replayed_frames_are_byte_identical_with_the_same_boundaries() {
    let dir = TempDir::new("frames");
    let mut fixture = Fixture::sse(chat("frames"), tricky_frames());
    fixture.headers = vec![
        ("content-type", "text/event-stream; charset=utf-8"),
        ("content-length", "999"),
        ("transfer-encoding", "chunked"),
        ("connection", "close"),
        ("keep-alive", "timeout=5"),
        ("x-request-id", "req_123"),
        ("openai-processing-ms", "97"),
    ];
    fixture.write(dir.path(), "route/2026-12-02/t1-1.jsonl");
    let replay = start(&settings(dir.path())).await;

    let received = post_json(replay.local_addr(), &chat("frames")).await;

    assert_eq!(received.status, 200);
    let sent: Vec<&[u8]> = received.frames.iter().map(|f| f.1.as_ref()).collect();
    let recorded: Vec<Vec<u8>> = tricky_frames().into_iter().map(|f| f.1).collect();
    assert_eq!(sent.len(), recorded.len(), "frame count");
    for (i, (got, want)) in sent.iter().zip(&recorded).enumerate() {
        assert_eq!(*got, want.as_slice(), "frame {i}");
    }
    assert_eq!(
        received.header("content-type"),
        "text/event-stream; charset=utf-8"
    );
    assert_eq!(received.header("x-request-id"), "req_123");
    assert_eq!(received.header("openai-processing-ms"), "97");
    assert_eq!(received.header("transfer-encoding"), "chunked");
    assert!(received.headers.get("content-length").is_none());
    assert!(received.headers.get("keep-alive").is_none());
    assert_eq!(
        received.header("x-tooltap-recording"),
        "route/2026-12-02/t1-1.jsonl"
    );
    assert!(received.header("x-tooltap-exchange").starts_with('t'));
    replay.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_recorded_error_status_and_a_buffered_body_come_back_as_recorded() {
    let dir = TempDir::new("status");
    let error = serde_json::json!({"error": {"message": "Rate limit", "type": "requests", "code": "rate_limit_exceeded"}});
    let mut fixture = Fixture::json(chat("limited"), &error);
    fixture.status = 429;
    fixture.headers.push(("retry-after", "2"));
    fixture.write(dir.path(), "limited.jsonl");
    let replay = start(&settings(dir.path())).await;

    let received = post_json(replay.local_addr(), &chat("limited")).await;

    assert_eq!(received.status, 429);
    assert_eq!(received.header("retry-after"), "2");
    assert_eq!(received.frames.len(), 1);
    assert_eq!(received.json(), error);
}

#[tokio::test]
async fn a_bad_recording_stops_the_start_naming_the_file_and_line() {
    let dir = TempDir::new("bad");
    Fixture::sse(chat("ok"), vec![(1, b"data: [DONE]\n\n".to_vec())]).write(dir.path(), "ok.jsonl");
    let good = std::fs::read_to_string(dir.path().join("ok.jsonl")).expect("read");
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(
        2,
        "{\"type\":\"frame\",\"seq\":0,\"t_us\":1,\"text\":\"again\"}",
    );
    std::fs::write(dir.path().join("zz-broken.jsonl"), lines.join("\n") + "\n").expect("write");

    let error = match tooltap::replay::RunningReplay::start(&settings(dir.path())).await {
        Ok(_) => panic!("a broken recording was accepted"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains("zz-broken.jsonl:3:"), "{error}");
    assert!(error.contains("seq"), "{error}");
}

#[tokio::test]
async fn h2c_clients_get_one_data_frame_per_recorded_frame() {
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    use crate::replay::support::{LIMIT, within};

    let dir = TempDir::new("h2c");
    Fixture::sse(chat("h2"), tricky_frames()).write(dir.path(), "h2.jsonl");
    let replay = start(&settings(dir.path())).await;
    let stream = within(LIMIT, tokio::net::TcpStream::connect(replay.local_addr()))
        .await
        .expect("connect");
    let (mut sender, connection) = within(
        LIMIT,
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream)),
    )
    .await
    .expect("h2c handshake");
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let request = http::Request::post(format!(
        "http://{}/v1/chat/completions",
        replay.local_addr()
    ))
    .body(Full::new(bytes::Bytes::from(chat("h2").to_string())))
    .expect("request");
    let response = within(LIMIT, sender.send_request(request))
        .await
        .expect("head");
    assert_eq!(response.version(), http::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut frames = Vec::new();
    while let Some(frame) = within(LIMIT, body.frame()).await {
        if let Ok(data) = frame.expect("frame").into_data() {
            frames.push(data.to_vec());
        }
    }
    let recorded: Vec<Vec<u8>> = tricky_frames().into_iter().map(|f| f.1).collect();
    assert_eq!(frames, recorded);
    driver.abort();
}

#[tokio::test]
async fn an_upstream_that_broke_off_is_replayed_as_a_broken_stream() {
    use http_body_util::{BodyExt, Full};

    use crate::replay::support::{LIMIT, within};

    let dir = TempDir::new("break");
    let mut fixture = Fixture::sse(
        chat("break"),
        vec![
            (10, b"data: {\"a\":1}\n\n".to_vec()),
            (20, b"data: {\"b\"".to_vec()),
        ],
    );
    fixture.outcome = tooltap::record::Outcome::UpstreamBroke;
    fixture.write(dir.path(), "broken.jsonl");
    let replay = start(&settings(dir.path())).await;

    let (mut sender, driver) = connect(replay.local_addr()).await;
    let request = http::Request::post("/v1/chat/completions")
        .header("host", "replay")
        .body(Full::new(bytes::Bytes::from(chat("break").to_string())))
        .expect("request");
    let mut body = within(LIMIT, sender.send_request(request))
        .await
        .expect("head")
        .into_body();
    let mut data = Vec::new();
    let mut failed = false;
    while let Some(frame) = within(LIMIT, body.frame()).await {
        match frame {
            Ok(frame) => data.extend_from_slice(&frame.into_data().expect("data")),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert_eq!(data, b"data: {\"a\":1}\n\ndata: {\"b\"");
    assert!(
        failed,
        "the replayed stream ended cleanly; the recorded one broke off"
    );
    driver.abort();
}

/// A Bedrock ConverseStream recording: binary event-stream messages (stored as base64 where
/// they are not UTF-8), one cut across two frames, come back byte for byte with the recorded
/// boundaries, and the whole body decodes into the same messages.
#[tokio::test]
async fn a_replayed_bedrock_event_stream_is_byte_identical() {
    use tooltap::engine::framing::event_stream::{EventStreamDecoder, encode};
    let path = "/model/us.anthropic.claude-sonnet-4-5-v1%3A0/converse-stream";
    let request = serde_json::json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}]});
    let event = |kind: &str, payload: &str| {
        encode(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.as_bytes(),
        )
    };
    let delta = event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"hi"}}"#,
    );
    let recorded = vec![
        (100, event("messageStart", r#"{"role":"assistant"}"#)),
        (200, delta[..30].to_vec()),
        (300, delta[30..].to_vec()),
        (400, event("messageStop", r#"{"stopReason":"end_turn"}"#)),
    ];
    let dir = TempDir::new("eventstream");
    let mut fixture = Fixture::sse(request.clone(), recorded.clone());
    fixture.headers = vec![("content-type", "application/vnd.amazon.eventstream")];
    fixture.write_at(dir.path(), "bedrock.jsonl", path);
    let replay = start(&settings(dir.path())).await;

    let received =
        crate::replay::support::post(replay.local_addr(), path, request.to_string().as_bytes())
            .await;

    assert_eq!(received.status, 200);
    assert_eq!(
        received.header("content-type"),
        "application/vnd.amazon.eventstream"
    );
    let sent: Vec<&[u8]> = received.frames.iter().map(|f| f.1.as_ref()).collect();
    assert_eq!(sent.len(), recorded.len(), "frame count");
    for (i, (got, (_, want))) in sent.iter().zip(&recorded).enumerate() {
        assert_eq!(*got, want.as_slice(), "frame {i}");
    }
    let mut messages = Vec::new();
    let mut decoder = EventStreamDecoder::new(1 << 20);
    decoder
        .push(&sent.concat(), &mut messages)
        .expect("within the bound");
    assert_eq!(messages.len(), 3);
    replay.shutdown().await.expect("clean shutdown");
}
