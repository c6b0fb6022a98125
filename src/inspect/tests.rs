//! The inspector survives a panic in the analysis: the exchange is reported `inspection_failed`,
//! the client's body is untouched, and the next inspection works.
//!
//! No input is known to panic the engine (the robustness property tests look for one), so this
//! test injects the panic: in test builds only, a frame holding [`MARKER`] panics inside the
//! guarded analysis call, exactly where an engine bug would.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::sync::oneshot;

use super::*;
use crate::tap::framed::{ResponseCopy, ResponseSink};
use crate::tap::tee::{self, Sink, TeeBody};
use crate::tap::whole::{WholeBody, WholeCopy, whole_copy};

const MARKER: &[u8] = b"\xde\xad-inject-panic";

pub(super) fn panic_on_marker(bytes: &[u8]) {
    if bytes.windows(MARKER.len()).any(|w| w == MARKER) {
        panic!("injected analysis panic");
    }
}

fn inspection() -> Arc<Inspection> {
    inspection_with(EngineConfig::default(), 1 << 20)
}

fn inspection_with(engine: EngineConfig, max_request_body: usize) -> Arc<Inspection> {
    Arc::new(Inspection {
        engine: Arc::new(engine),
        schemas: Arc::new(SchemaCache::default()),
        metrics: Arc::new(Metrics::default()),
        violations: None,
        recorder: None,
        hold: crate::inspect::HoldSettings::in_memory(1 << 20),
        max_request_body,
        analysis: AnalysisPool::default(),
        memory: MemoryBudget::new(crate::config::inspect::DEFAULT_MAX_MEMORY),
        mcp: None,
        otlp: None,
    })
}

/// The inspection job of a Chat exchange named `id` on the `default` route, observe mode, no
/// recording.
fn chat_job(
    id: &str,
    request: oneshot::Receiver<WholeBody>,
    response: oneshot::Receiver<ResponsePart>,
) -> InspectJob {
    InspectJob {
        head: crate::inspect::RequestHead::default(),
        label: ExchangeLabel {
            id: Arc::from(id),
            route: Arc::from("default"),
            started: Instant::now(),
            dialect: crate::engine::Dialect::Chat,
        },
        request,
        response,
        enforced: Some(crate::tap::verdict::channel().1),
        recording: None,
        trace: None,
        mcp_turn: None,
    }
}

/// A 200 response of `content_type` whose body the inspector reads from `body`.
fn response_part(content_type: &str, body: tee::TapReceiver) -> ResponsePart {
    ResponsePart {
        head: ResponseHead {
            status: 200,
            content_type: Some(content_type.into()),
            content_encoding: None,
            headers: Vec::new(),
        },
        body: ResponseCopy::Streamed(body),
        ttfb: Duration::ZERO,
        headers: None,
        quirk: None,
    }
}

/// Waits for an inspection task to end, which must be soon and without a panic.
async fn finished(task: tokio::task::JoinHandle<Option<verdicts::Findings>>) {
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("inspector finishes")
        .expect("the inspector task itself does not die");
}

/// Run one exchange whose response body is `body`; returns what the client read.
async fn exchange(shared: &Arc<Inspection>, body: &'static [u8]) -> Bytes {
    exchange_with(shared, b"{\"stream\":true}", "text/event-stream", body).await
}

/// The same with a request body and a response content type of the caller's.
async fn exchange_with(
    shared: &Arc<Inspection>,
    request_body: &'static [u8],
    content_type: &str,
    body: &'static [u8],
) -> Bytes {
    let (request_tap, request_rx) = request_copy(shared);
    let (response_tx, response_rx) = oneshot::channel();
    let job = chat_job("t-1", request_rx, response_rx);
    let task = tokio::spawn(run(shared.clone(), job));
    let request = TeeBody::new(Full::new(Bytes::from_static(request_body)), request_tap);
    request.collect().await.expect("request body");
    let (tap, body_rx) = tee::tap(16);
    let part = response_part(content_type, body_rx);
    assert!(response_tx.send(part).is_ok());
    let client = TeeBody::new(Full::new(Bytes::from_static(body)), tap);
    let seen = client.collect().await.expect("response body").to_bytes();
    finished(task).await;
    seen
}

#[tokio::test]
async fn a_panic_in_the_analysis_is_reported_and_the_client_keeps_every_byte() {
    let shared = inspection();
    let body: &'static [u8] = Box::leak(
        [b"data: ".as_slice(), MARKER, b"\n\ndata: [DONE]\n\n"]
            .concat()
            .into_boxed_slice(),
    );
    let seen = exchange(&shared, body).await;
    assert_eq!(
        seen, body,
        "the client's bytes must not depend on the inspector"
    );
    let text = shared.metrics.render();
    assert!(
        text.contains(
            "tooltap_inspection_incomplete_total{route=\"default\",reason=\"inspection_failed\"} 1"
        ),
        "{text}"
    );
    // The next exchange is inspected normally.
    exchange(&shared, b"data: [DONE]\n\n").await;
    assert!(
        shared
            .metrics
            .render()
            .contains("tooltap_exchanges_inspected_total{")
    );
}

/// `(on the inspector's thread, on the pool)` trips so far.
fn trips(metrics: &Metrics) -> (u64, u64) {
    let text = metrics.render();
    let count = |thread: &str| {
        let needle = format!("tooltap_analysis_trips_total{{thread=\"{thread}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(needle.as_str()))
            .map_or(0, |n| n.trim().parse().expect("a number"))
    };
    (count("inspector"), count("pool"))
}

/// A request declaring one tool with the given `parameters`.
fn declaring(parameters: &str) -> &'static [u8] {
    let body = format!(
        r#"{{"model":"m","tools":[{{"type":"function","function":{{"name":"f","parameters":{parameters}}}}}]}}"#
    );
    Box::leak(body.into_bytes().into_boxed_slice())
}

/// A buffered completion calling `f` with `arguments` (a JSON-encoded string's content).
fn calling(arguments: &str) -> &'static [u8] {
    let body = format!(
        r#"{{"id":"c","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","tool_calls":[{{"id":"call_1","type":"function","function":{{"name":"f","arguments":"{arguments}"}}}}]}},"finish_reason":"tool_calls"}}]}}"#
    );
    Box::leak(body.into_bytes().into_boxed_slice())
}

#[tokio::test]
async fn small_trips_with_cached_plain_schemas_run_on_the_inspector_and_the_rest_on_the_pool() {
    let shared = inspection();
    let plain = declaring(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#);
    let json = "application/json";
    // First sight of the tools array: it must be compiled, which never happens on the
    // inspector's thread.
    exchange_with(&shared, plain, json, calling(r#"{\"a\":\"x\"}"#)).await;
    assert_eq!(trips(&shared.metrics), (0, 1));
    // Cached (admitted on the 2xx answer) and plain: judged right here, with the same verdict
    // (the wrong argument type is a schema violation either way).
    exchange_with(&shared, plain, json, calling(r#"{\"a\":1}"#)).await;
    assert_eq!(trips(&shared.metrics), (1, 1));
    assert!(
        shared
            .metrics
            .render()
            .contains("rule=\"tool_call.arguments_schema\""),
        "{}",
        shared.metrics.render()
    );
    // A schema with a combinator is not plain: the pool, cached or not.
    let costly = declaring(r#"{"anyOf":[{"type":"object"},{"type":"string"}]}"#);
    for _ in 0..2 {
        exchange_with(&shared, costly, json, calling("{}")).await;
    }
    assert_eq!(trips(&shared.metrics), (1, 3));
    // A body past HERE_BYTES: the pool, though its schema is cached and plain.
    let long = "y".repeat(HERE_BYTES);
    let arguments: &'static str = Box::leak(format!(r#"{{\"a\":\"{long}\"}}"#).into_boxed_str());
    exchange_with(&shared, plain, json, calling(arguments)).await;
    assert_eq!(trips(&shared.metrics), (1, 4));
    // A panic on the inspector's thread costs only its exchange, as on the pool.
    let body: &'static [u8] = Box::leak(
        [b"data: ".as_slice(), MARKER, b"\n\ndata: [DONE]\n\n"]
            .concat()
            .into_boxed_slice(),
    );
    exchange(&shared, body).await;
    assert_eq!(trips(&shared.metrics), (2, 4));
    assert!(
        shared
            .metrics
            .render()
            .contains("reason=\"inspection_failed\"} 1")
    );
}

#[tokio::test]
async fn a_stalled_inspector_makes_the_report_lossy_while_the_client_gets_every_byte() {
    let shared = inspection();
    let (request_tap, request_rx) = request_copy(&shared);
    let (response_tx, response_rx) = oneshot::channel();
    let request = TeeBody::new(
        Full::new(Bytes::from_static(b"{\"stream\":true}")),
        request_tap,
    );
    request.collect().await.expect("request body");
    // A tap of one frame, and an inspector that has not run yet: the client reads the whole
    // multi-frame body first, so the copy overflows.
    let (tap, body_rx) = tee::tap(1);
    let upstream = Frames(
        (0..5)
            .map(|i| Bytes::from(format!("data: {{\"id\":\"c{i}\",\"choices\":[]}}\n\n")))
            .collect(),
    );
    let client = TeeBody::new(upstream, tap);
    let seen = client.collect().await.expect("body").to_bytes();
    assert_eq!(
        seen.len(),
        5 * "data: {\"id\":\"c0\",\"choices\":[]}\n\n".len()
    );
    let part = response_part("text/event-stream", body_rx);
    assert!(response_tx.send(part).is_ok());
    let job = chat_job("t-2", request_rx, response_rx);
    run(shared.clone(), job).await;
    let text = shared.metrics.render();
    assert!(
        text.contains("tooltap_inspection_incomplete_total{route=\"default\",reason=\"lossy\"} 1"),
        "{text}"
    );
    // A stream with a hole is not judged: no truncation or missing [DONE] blamed on the upstream.
    assert!(!text.contains("tooltap_violations_total{"), "{text}");
}

/// A body that yields its frames one per poll, like a stream from the network.
struct Frames(std::collections::VecDeque<Bytes>);

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|b| Ok(http_body::Frame::data(b))))
    }
}

/// A body whose frames are the bytes sent on a channel, as they are sent; over when the
/// sender is dropped.
struct Paced(tokio::sync::mpsc::Receiver<Bytes>);

impl http_body::Body for Paced {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|bytes| bytes.map(|b| Ok(http_body::Frame::data(b))))
    }
}

/// A request body's copy as admission makes it: bounded by `shared`'s `max_request_body`,
/// charged to its memory budget.
fn request_copy(shared: &Inspection) -> (WholeCopy, oneshot::Receiver<WholeBody>) {
    whole_copy(shared.max_request_body, shared.memory.empty_charge())
}

/// A [`Paced`] body teed into `sink`, read to its end by a task of its own, as hyper would
/// forward it: the sender of its frames, and the task (what the reader got).
fn paced<S: Sink + Unpin + Send + 'static>(
    sink: S,
) -> (
    tokio::sync::mpsc::Sender<Bytes>,
    tokio::task::JoinHandle<Bytes>,
) {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let body = TeeBody::new(Paced(rx), sink);
    let reader = tokio::spawn(async move { body.collect().await.expect("body").to_bytes() });
    (tx, reader)
}

/// Sends `first`, waits for the inspector to take it in, then sends `rest` and ends the body.
async fn send_paced(tx: tokio::sync::mpsc::Sender<Bytes>, first: Bytes, rest: usize) {
    tx.send(first).await.expect("reader");
    tokio::time::sleep(Duration::from_millis(500)).await;
    for i in 0..rest {
        tx.send(Bytes::from(format!("more {i}\n")))
            .await
            .expect("reader");
    }
}

/// One exchange whose request and response bodies arrive paced ([`send_paced`]): each its
/// first frame, then, once the inspector took that in, `rest` frames. Asserts that each reader
/// got every byte.
async fn paced_exchange(
    shared: &Arc<Inspection>,
    request: (Bytes, usize),
    content_type: &str,
    response: (Bytes, usize),
) {
    let (request_copy, request_rx) = request_copy(shared);
    let (request_tx, request_reader) = paced(request_copy);
    let (response_tx, response_rx) = oneshot::channel();
    let job = chat_job("t-3", request_rx, response_rx);
    let task = tokio::spawn(run(shared.clone(), job));
    let more = |frames: usize| frames * "more 0\n".len();
    send_paced(request_tx, request.0.clone(), request.1).await;
    let request_seen = request_reader.await.expect("request reader");
    assert_eq!(request_seen.len(), request.0.len() + more(request.1));
    let (tap, body_rx) = tee::tap(16);
    let (frames_tx, response_reader) = paced(tap);
    let part = response_part(content_type, body_rx);
    assert!(response_tx.send(part).is_ok());
    send_paced(frames_tx, response.0.clone(), response.1).await;
    let response_seen = response_reader.await.expect("response reader");
    assert_eq!(response_seen.len(), response.0.len() + more(response.1));
    finished(task).await;
}

/// Asserts the frames not copied so far, by body.
fn assert_not_copied(shared: &Inspection, request: u64, response: u64) {
    let text = shared.metrics.render();
    for (body, frames) in [("request", request), ("response", response)] {
        let family =
            format!("tooltap_frames_not_copied_total{{route=\"default\",body=\"{body}\"}} ");
        let counted = text
            .lines()
            .find_map(|line| line.strip_prefix(family.as_str()))
            .map_or(0, |n| n.trim().parse::<u64>().expect("a number"));
        assert_eq!(counted, frames, "{body} frames not copied, in {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_past_what_inspection_takes_are_forwarded_whole_and_no_longer_copied() {
    let engine = EngineConfig {
        max_sse_line: 1024,
        ..EngineConfig::default()
    };
    let shared = inspection_with(engine, 64);
    // A request past `max_request_body` in its first frame, and a stream whose first line is
    // past `max_sse_line` (the inspection stops `too_large`), in a frame large enough to wake
    // the inspector at once: the rest of each is forwarded, not copied. The request's copy
    // stops at the bound itself, so none of its three frames is copied.
    let request = Bytes::from(format!(
        "{{\"stream\":true,\"pad\":\"{}\"}}",
        "p".repeat(100)
    ));
    let line = Bytes::from(format!("data: {}", "x".repeat(tee::WAKE_BYTES)));
    paced_exchange(&shared, (request, 2), "text/event-stream", (line, 3)).await;
    assert_not_copied(&shared, 3, 3);
    let text = shared.metrics.render();
    assert!(!text.contains("reason=\"lossy\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_inspected_is_copied_no_further_than_its_first_trip() {
    let shared = inspection();
    let request = Bytes::from_static(b"{\"stream\":true}");
    // Within every bound, a stream is copied whole.
    let event = Bytes::from_static(b"data: {\"id\":\"c\",\"choices\":[]}\n\n");
    paced_exchange(
        &shared,
        (request.clone(), 0),
        "text/event-stream",
        (event, 2),
    )
    .await;
    assert_not_copied(&shared, 0, 0);
    // A content type without tool rules: after the first trip, nothing more is copied.
    let page = Bytes::from(format!("<html>{}", "h".repeat(tee::WAKE_BYTES)));
    paced_exchange(&shared, (request, 0), "text/html", (page, 4)).await;
    assert_not_copied(&shared, 0, 4);
}

/// A Chat stream's exchange, started, its response head an SSE one.
fn started_stream(engine: EngineConfig) -> crate::engine::Exchange {
    let engine = Arc::new(engine);
    let mut exchange =
        crate::engine::Exchange::new(&engine, &SchemaCache::default(), b"{\"stream\":true}");
    exchange.response_head(ResponseHead {
        status: 200,
        content_type: Some("text/event-stream".into()),
        content_encoding: None,
        headers: Vec::new(),
    });
    exchange
}

#[test]
fn a_trip_stops_the_copies_at_the_frame_after_which_nothing_reads_the_body() {
    let mut exchange = started_stream(EngineConfig {
        max_sse_line: 1024,
        ..EngineConfig::default()
    });
    let (_tap, receiver) = tee::tap(16);
    let stop = receiver.data.copy_stop();
    let frames = |texts: &[String]| -> Vec<tee::TapEvent> {
        texts
            .iter()
            .map(|text| tee::TapEvent {
                bytes: Bytes::from(text.clone()),
                at: Instant::now(),
            })
            .collect()
    };
    // A held recording of at most 4 KiB, which still takes the first 2 KiB.
    let mut tape = Some(ExchangeRecording::Held(Box::new(
        super::held::HeldFrames::new(4096, 1024, None),
    )));
    let event = "data: {\"id\":\"c\",\"choices\":[]}\n\n".to_owned();
    feed(
        &mut exchange,
        frames(&[event]),
        &mut tape,
        Some(&stop),
        false,
    );
    assert!(!exchange.stopped() && !receiver.data.copying_stopped());
    // A line past `max_sse_line`: inspection stops, but the recording still takes frames.
    let line = format!("data: {}", "x".repeat(2048));
    feed(
        &mut exchange,
        frames(&[line]),
        &mut tape,
        Some(&stop),
        false,
    );
    assert!(exchange.stopped(), "the line bound stopped inspection");
    assert!(
        !receiver.data.copying_stopped(),
        "the recording still reads"
    );
    // The recording's bound, at the first frame of a batch whose second frame panics the
    // trip: the copies were stopped before the batch's end, in the middle of the trip.
    let more = "y".repeat(3000);
    let mut batch = frames(&[more]);
    batch.push(tee::TapEvent {
        bytes: Bytes::from_static(MARKER),
        at: Instant::now(),
    });
    let trip = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        feed(&mut exchange, batch, &mut tape, Some(&stop), false);
    }));
    assert!(trip.is_err(), "the second frame panicked the trip");
    assert!(
        receiver.data.copying_stopped(),
        "stopped at the first frame"
    );
}

#[test]
fn a_trip_here_leaves_the_frames_whose_spill_append_would_write_to_the_pool_and_loses_none() {
    let mut exchange = started_stream(EngineConfig::default());
    let dir = crate::test_dir::TestDir::new("trip-here-spill");
    let spill = super::Spill::new(dir.join("spill"), 1 << 20);
    let mut tape = Some(ExchangeRecording::Held(Box::new(
        super::held::HeldFrames::new(1 << 20, 256, Some(spill)),
    )));
    let events: Vec<Bytes> = (0..20)
        .map(|i| {
            Bytes::from(format!(
                "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{i};\"}}}}]}}\n\n"
            ))
        })
        .collect();
    let batch = events
        .iter()
        .map(|bytes| tee::TapEvent {
            bytes: bytes.clone(),
            at: Instant::now(),
        })
        .collect();
    // The spill has no segment yet: the frame whose block would be appended first needs one
    // made (a write), so it and every frame after it are left to the pool.
    let rest = feed(&mut exchange, batch, &mut tape, None, true);
    assert!(
        !rest.is_empty() && rest.len() < events.len(),
        "{} of {} frames left",
        rest.len(),
        events.len()
    );
    let left: Vec<&Bytes> = rest.iter().map(|event| &event.bytes).collect();
    assert_eq!(
        left,
        events[events.len() - rest.len()..]
            .iter()
            .collect::<Vec<_>>()
    );
    super::trip::record_rest(&mut tape, rest);
    let Some(ExchangeRecording::Held(held)) = tape else {
        panic!("the recording is still held");
    };
    let (back, failed) = held.load();
    assert!(failed.is_none());
    let back: Vec<&[u8]> = back.iter().map(|(bytes, _)| bytes.as_ref()).collect();
    let sent: Vec<&[u8]> = events.iter().map(Bytes::as_ref).collect();
    assert_eq!(back, sent, "every frame kept, in order");
    // The engine read every frame on the inspector's thread, whoever kept them.
    let report = exchange.finish(crate::engine::BodyEnd::Complete);
    let content: String = (0..20).map(|i| format!("{i};")).collect();
    assert_eq!(report.choices[0].content.as_deref(), Some(content.as_str()));
}

/// One Chat exchange whose response body arrives as `frames`, copied `framed` (as a small body
/// of known length is) or streamed through a tap of `tap_frames`: what the inspector found, and
/// the metrics it left.
async fn judged_as(
    framed: bool,
    frames: &[Bytes],
    tap_frames: usize,
) -> (Option<verdicts::Findings>, String) {
    let shared = inspection();
    let (request_tap, request_rx) = request_copy(&shared);
    let (response_tx, response_rx) = oneshot::channel();
    let job = chat_job("t-4", request_rx, response_rx);
    let task = tokio::spawn(run(shared.clone(), job));
    let request = declaring(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#);
    TeeBody::new(Full::new(Bytes::from_static(request)), request_tap)
        .collect()
        .await
        .expect("request body");
    let length: usize = frames.iter().map(Bytes::len).sum();
    let (sink, copy) = if framed {
        let (copy, copied) = crate::tap::framed::framed_copy(length, tap_frames);
        (ResponseSink::Framed(copy), ResponseCopy::Framed(copied))
    } else {
        let (tap, receiver) = tee::tap(tap_frames);
        (
            ResponseSink::Streamed(tap),
            ResponseCopy::Streamed(receiver),
        )
    };
    let mut part = response_part("application/json", tee::tap(1).1);
    part.body = copy;
    assert!(response_tx.send(part).is_ok());
    let client = TeeBody::new(Frames(frames.iter().cloned().collect()), sink);
    let seen = client.collect().await.expect("response body").to_bytes();
    assert_eq!(seen, frames.concat(), "the client gets every byte");
    let findings = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("inspector finishes")
        .expect("the inspector task itself does not die");
    let text = shared.metrics.render();
    let judged = text
        .lines()
        .filter(|line| {
            line.starts_with("tooltap_violations_total")
                || line.starts_with("tooltap_inspection_incomplete_total")
                || line.starts_with("tooltap_exchanges_inspected_total")
        })
        .collect::<Vec<_>>()
        .join("\n");
    (findings, judged)
}

#[tokio::test]
async fn a_small_response_copied_framed_is_judged_as_the_streamed_copy_is() {
    // A wrong argument type (a schema violation), cut in three frames.
    let body = calling(r#"{\"a\":1}"#);
    let frames: Vec<Bytes> = [&body[..20], &body[20..90], &body[90..]]
        .iter()
        .map(|part| Bytes::copy_from_slice(part))
        .collect();
    let framed = judged_as(true, &frames, 16).await;
    let streamed = judged_as(false, &frames, 16).await;
    assert_eq!(framed, streamed);
    let findings = framed.0.expect("judged");
    assert_eq!(findings.violations.len(), 1, "{findings:?}");
    assert_eq!(findings.violations[0].rule, "tool_call.arguments_schema");
    assert!(
        framed.1.contains("tooltap_exchanges_inspected_total"),
        "{}",
        framed.1
    );
    // More frames than the tap holds: a hole either way (the streamed tap overflows because
    // the client reads the whole body before the inspector runs), never a verdict on it.
    let framed = judged_as(true, &frames, 2).await;
    let streamed = judged_as(false, &frames, 2).await;
    assert_eq!(framed, streamed);
    assert!(framed.0.expect("judged").violations.is_empty());
    assert!(framed.1.contains("reason=\"lossy\"} 1"), "{}", framed.1);
}

/// The largest allocation glibc serves from its per-thread cache; a larger one takes its slow
/// path (a search of its bins, and first a consolidation of its free lists).
const GLIBC_CACHED_MAX: usize = 1032;

#[test]
fn every_inspector_task_and_its_boxed_analysis_are_allocations_glibc_serves_from_its_cache() {
    // `proxy::admission::spawn` boxes the inspection's future with its permit and its verdict
    // board guard mapped on; `run` boxes the response's analysis apart. A future grown past the
    // bound (a large local kept across an await, an `async fn`'s argument kept beside what it
    // was moved into) costs every exchange glibc's slow path and a copy of the whole future.
    let shared = inspection();
    let (_request, request) = oneshot::channel();
    let (_response, response) = oneshot::channel();
    let task = run(Arc::clone(&shared), chat_job("sizes", request, response));
    let task_size = std::mem::size_of_val(&task)
        + size_of::<tokio::sync::OwnedSemaphorePermit>()
        + size_of::<verdicts::FinishGuard>();
    assert!(
        task_size <= GLIBC_CACHED_MAX,
        "the inspector's task: {task_size} bytes"
    );
    let mut recording = None;
    let mut charge = shared.memory.charge().expect("within the budget");
    let mut first_chunk = None;
    let (_tap, body) = tee::tap_bounded(8, 1 << 16);
    let copy = response_part("application/json", body);
    let start = Start {
        engine: Arc::clone(&shared.engine),
        schemas: Arc::clone(&shared.schemas),
        dialect: crate::engine::Dialect::Chat,
        request: StartRequest {
            body: None,
            head: RequestHead::default(),
        },
        head: copy.head,
    };
    let analysis = analyse(
        &shared,
        start,
        copy.body,
        &mut recording,
        &mut charge,
        &mut first_chunk,
    );
    let analysis_size = std::mem::size_of_val(&analysis);
    assert!(
        analysis_size <= GLIBC_CACHED_MAX,
        "the analysis: {analysis_size} bytes"
    );
}

#[tokio::test]
async fn a_trip_in_the_middle_of_a_stream_runs_after_the_tasks_woken_with_it() {
    let shared = inspection();
    let (request_tap, request_rx) = request_copy(&shared);
    let (response_tx, response_rx) = oneshot::channel();
    let job = chat_job("t-1", request_rx, response_rx);
    let task = tokio::spawn(run(shared.clone(), job));
    let request = TeeBody::new(
        Full::new(Bytes::from_static(b"{\"stream\":true}")),
        request_tap,
    );
    request.collect().await.expect("request body");
    let (mut tap, body_rx) = tee::tap(2 * gather::BATCH);
    assert!(
        response_tx
            .send(response_part("text/event-stream", body_rx))
            .is_ok()
    );
    let event = Bytes::from_static(b"data: {\"id\":\"c\",\"choices\":[]}\n\n");
    // The first frame starts a batch; the inspector takes it and waits for more.
    Sink::copy(&mut tap, &event);
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    assert_eq!(trips(&shared.metrics), (0, 0));
    // A full batch waiting wakes the inspector; a task woken after it (as a connection is, by
    // the next event) runs before its trip does.
    for _ in 0..gather::BATCH {
        Sink::copy(&mut tap, &event);
    }
    let metrics = Arc::clone(&shared.metrics);
    let woken_after = tokio::spawn(async move { trips(&metrics) });
    assert_eq!(woken_after.await.expect("task"), (0, 0));
    Sink::finish(tap, tee::Ending::Complete);
    finished(task).await;
    // The trip was only put off: it ran on the inspector, and so did the body's last.
    assert_eq!(trips(&shared.metrics), (2, 0));
}
