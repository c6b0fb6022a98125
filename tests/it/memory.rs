//! The inspection memory bounds through the real proxy: a long stream stops being reassembled
//! at `inspect.max_reassembled`, and past `inspect.max_memory` new exchanges are forwarded
//! uninspected and counted. The client gets every byte either way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::budget::completion;
use crate::support::client::{exchange, request};
use crate::support::fixtures::settle;
use crate::support::metrics::{metric_sum, metrics};
use crate::support::proxy;
use crate::support::temp::{files_under, jsonl_under};
use crate::support::upstream::{Script, Upstream};
use crate::support::{TempDir, within};
use tooltap::config::RawConfig;
use tooltap::proxy::server::RunningProxy;
use tooltap::record::Recording;

const LIMIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_stream_stops_being_reassembled_at_its_bound_and_reaches_the_client_whole() {
    let event = format!(
        "data: {}\n\n",
        json!({"id":"c","object":"chat.completion.chunk","model":"m",
            "choices":[{"index":0,"delta":{"content":"x".repeat(100)},"finish_reason":null}]})
    );
    let mut events: Vec<&str> = vec![event.as_str(); 2_000];
    events.push("data: [DONE]\n\n");
    let upstream = Upstream::serving(Script::sse(&events, Duration::ZERO)).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.max_reassembled = Some(64 * 1024);
    let tooltap = streamed_whole(raw, &events).await;
    let text = settle(&tooltap, 1).await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_inspection_incomplete_total",
            &["reason=\"too_large\""]
        ),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_memory_budget_new_exchanges_are_forwarded_uninspected_and_counted() {
    let big = format!(
        "data: {}\n\n",
        json!({"id":"c","object":"chat.completion.chunk","model":"m",
            "choices":[{"index":0,"delta":{"content":"x".repeat(48 * 1024)},"finish_reason":null}]})
    );
    // The first event arrives without its blank line, so the framer holds it until the rest.
    let held_line = big.trim_end_matches('\n');
    let stream = [held_line.to_owned(), "\n\ndata: [DONE]\n\n".to_owned()];
    let upstream = Upstream::start(
        move |received| {
            if String::from_utf8_lossy(&received.body).contains("\"stream\":true") {
                let events: Vec<&str> = stream.iter().map(String::as_str).collect();
                Script::sse(&events, Duration::from_millis(1_500))
            } else {
                Script::full(200, "application/json", &completion(&[]))
            }
        },
        None,
    )
    .await;
    let holder_body = r#"{"model":"m","stream":true,"messages":[]}"#;
    // Room for the holder's request body and twice its unfinished event (what a batch reserves
    // on top of what the framer holds); a plain request as large as the event plus 1 KiB fits
    // an empty budget but not what is left once the holder holds its event.
    let holds = holder_body.len() + held_line.len();
    let budget = holds + held_line.len();
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.max_memory = Some(budget);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let holder = tokio::spawn(exchange(
        addr,
        request(addr, "POST", "/v1/chat/completions", holder_body),
    ));
    let inspection = tooltap.state().admission.inspection().clone();
    within(LIMIT, async {
        while inspection.memory.used() < holds {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let plain = json!({"model": "m", "messages": [], "metadata": {"pad": "p".repeat(held_line.len() + 1024)}})
        .to_string();
    assert!(plain.len() < budget && inspection.memory.used() + plain.len() > budget);
    let during = within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/chat/completions", &plain)),
    )
    .await;
    assert_eq!(during.body, completion(&[]).as_bytes(), "forwarded whole");
    let held = within(LIMIT, holder).await.expect("holder");
    assert_eq!(held.body, format!("{big}data: [DONE]\n\n").as_bytes());
    settle(&tooltap, 1).await;
    // The exchange refused while the budget was spent is counted; the holder, whose event fit
    // the budget, was judged.
    let text = within(LIMIT, async {
        loop {
            let text = metrics(&tooltap).await;
            let reason = ["reason=\"memory_budget\""];
            if metric_sum(&text, "tooltap_inspection_incomplete_total", &reason) >= 1 {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_inspection_incomplete_total",
            &["reason=\"memory_budget\""]
        ),
        1
    );
    // Released when the holder's inspector ends (just after its report).
    within(LIMIT, async {
        while inspection.memory.used() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/chat/completions", &plain)),
    )
    .await;
    settle(&tooltap, 2).await;
}

/// `filler` chunks of 1000 characters of text, then a call to the undeclared `nope`, its finish
/// and `[DONE]`.
fn violating_stream(filler: usize) -> Vec<String> {
    violating_stream_of(filler, 1000)
}

/// [`violating_stream`] with `size` characters of text a chunk.
fn violating_stream_of(filler: usize, size: usize) -> Vec<String> {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id":"c","object":"chat.completion.chunk","model":"m",
                "choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
        )
    };
    let mut events: Vec<String> = (0..filler)
        .map(|_| chunk(json!({"content":"x".repeat(size)}), json!(null)))
        .collect();
    events.push(chunk(
        json!({"tool_calls":[{"index":0,"id":"call_1","type":"function",
            "function":{"name":"nope","arguments":"{}"}}]}),
        json!(null),
    ));
    events.push(chunk(json!({}), json!("tool_calls")));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// Streams `events` (`pace` apart) through tooltap recording violating exchanges under `dir`
/// (emptied first), its config tuned by `tune`; checks the client gets every byte, and returns
/// once the recording is flushed.
async fn record_violating(
    events: &[String],
    pace: Duration,
    dir: &Path,
    tune: impl FnOnce(&mut RawConfig),
) -> (RunningProxy, Upstream) {
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let upstream = Upstream::serving(Script::sse(&refs, pace)).await;
    let _ = std::fs::remove_dir_all(dir);
    let mut raw = proxy::raw_config(&upstream.url());
    raw.record.mode = Some(tooltap::record::RecordMode::Violations);
    raw.record.dir = Some(dir.to_path_buf());
    tune(&mut raw);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let got = within(
        LIMIT,
        exchange(
            addr,
            request(addr, "POST", "/v1/chat/completions", &violating_request()),
        ),
    )
    .await;
    assert_eq!(
        got.body,
        events.concat().as_bytes(),
        "the client gets every byte"
    );
    settle(&tooltap, 1).await;
    if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
        within(LIMIT, recorder.flush()).await;
    }
    (tooltap, upstream)
}

/// The request [`record_violating`] sends: a stream, declaring only the tool `f`.
fn violating_request() -> String {
    json!({"model":"m","stream":true,"messages":[],
        "tools":[{"type":"function","function":{"name":"f"}}]})
    .to_string()
}

/// The one recording among `files`, which ends `truncated` with the verdict on the whole stream.
fn the_truncated_recording(files: &[PathBuf]) -> Recording {
    assert_eq!(
        files.len(),
        1,
        "the violating exchange is recorded: {files:?}"
    );
    let recording = tooltap::record::read_file(&files[0]).expect("readable");
    let end = recording.end.as_ref().expect("end line");
    assert_eq!(end.outcome, tooltap::record::Outcome::FramesLost);
    assert!(
        end.violations
            .iter()
            .any(|v| v.rule.as_str() == "tool_call.name_undeclared"),
        "the verdict saw the whole stream: {:?}",
        end.violations
    );
    recording
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_recording_past_its_cap_is_truncated_and_still_judged() {
    let events = violating_stream(20);
    let dir = TempDir::new("it-held");
    let _running = record_violating(&events, Duration::ZERO, &dir, |raw| {
        raw.inspect.max_held_recording = Some(4 * 1024);
    })
    .await;
    let recording = the_truncated_recording(&files_under(&dir));
    assert!(
        recording.body().len() <= 4 * 1024,
        "{} bytes held",
        recording.body().len()
    );
}

/// A violating stream of small events, paced so that it takes many trips: its held frames pass
/// `inspect.held_in_memory` (1 KiB) on nearly every trip, yet the trips run on the inspector's
/// own thread, since a spill append that only joins the spill's shared tail needs no pool; only
/// the first block (a segment to make) goes there. The stream is sent three times. The first
/// exchange compiles its tools' plain schema on the pool in its first trip; its later trips
/// run here. The second finds it cached. The third declares a schema that is not plain
/// (`anyOf`), so all its trips run on the pool. Every recording holds the whole stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spilling_held_recording_leaves_its_trips_on_the_inspectors_thread_and_loses_nothing() {
    let events = violating_stream_of(120, 150);
    let dir = TempDir::new("it-held-here");
    let (tooltap, _upstream) =
        record_violating(&events, Duration::from_millis(5), &dir, |_| {}).await;
    let trips = |text: &str| {
        let here = metric_sum(
            text,
            "tooltap_analysis_trips_total",
            &["thread=\"inspector\""],
        );
        let pool = metric_sum(text, "tooltap_analysis_trips_total", &["thread=\"pool\""]);
        (here, pool)
    };
    let first = trips(&metrics(&tooltap).await);
    assert!(
        first.0 >= 5 && first.1 <= 3,
        "first exchange: {} trips on the inspector's thread, {} on the pool",
        first.0,
        first.1
    );
    let addr = tooltap.local_addr();
    let costly = json!({"model":"m","stream":true,"messages":[],
        "tools":[{"type":"function","function":{"name":"f",
            "parameters":{"anyOf":[{"type":"object"},{"type":"string"}]}}}]})
    .to_string();
    let mut before = first;
    for (n, body) in [violating_request(), costly].iter().enumerate() {
        let got = within(
            LIMIT,
            exchange(addr, request(addr, "POST", "/v1/chat/completions", body)),
        )
        .await;
        assert_eq!(got.body, events.concat().as_bytes());
        let now = trips(&settle(&tooltap, 2 + n as u64).await);
        let (here, pool) = (now.0 - before.0, now.1 - before.1);
        before = now;
        if n == 0 {
            assert!(
                here >= 5 && pool <= 2,
                "cached plain schema: {here} trips on the inspector's thread, {pool} on the pool"
            );
        } else {
            assert!(
                here == 0 && pool >= 5,
                "a schema not plain: {here} trips on the inspector's thread, {pool} on the pool"
            );
        }
    }
    if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
        within(LIMIT, recorder.flush()).await;
    }
    let files = jsonl_under(&dir);
    assert_eq!(
        files.len(),
        3,
        "every violating exchange is recorded: {files:?}"
    );
    for file in &files {
        let recording = tooltap::record::read_file(file).expect("readable");
        assert_eq!(
            recording.body(),
            events.concat().as_bytes(),
            "every frame kept"
        );
        let end = recording.end.as_ref().expect("end line");
        assert_eq!(end.outcome, tooltap::record::Outcome::Complete);
    }
}

/// A violating stream whose held frames cannot all be spilled (`inspect.max_spill` is tiny):
/// its recording ends `truncated` and the cut is counted, the verdict still sees the whole
/// stream, and the client gets every byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_frames_past_the_spill_bound_end_the_recording_truncated_and_are_counted() {
    let events = violating_stream(60);
    let dir = TempDir::new("it-spill");
    let (tooltap, _upstream) = record_violating(&events, Duration::ZERO, &dir, |raw| {
        raw.inspect.held_in_memory = Some(4 * 1024);
        raw.inspect.max_spill = Some(20 * 1024);
    })
    .await;
    let recording = the_truncated_recording(&jsonl_under(&dir));
    let kept = recording.body().len();
    assert!(
        (16 * 1024..=24 * 1024 + 4 * 1024).contains(&kept),
        "what the spill took, and the block in memory: {kept} bytes"
    );
    assert!(events.concat().as_bytes().starts_with(&recording.body()));
    let text = metrics(&tooltap).await;
    assert_eq!(
        metric_sum(&text, "tooltap_limit_hits_total", &["limit=\"held_spill\""]),
        1
    );
    // The segment was unlinked when made: nothing of it is left in the folder.
    assert!(
        files_under(&dir).iter().all(|p| !p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains("spill"))),
        "{:?}",
        files_under(&dir)
    );
}

/// The issue's shape: a stream of minimal `choices` entries weighs far more in reassembly than
/// its bytes. What reassembly holds is charged to `inspect.max_memory` as it grows, so a
/// budget the stream's bytes alone would never reach stops it (`memory_budget`, not a
/// violation); the client gets every byte and the budget is given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reassembly_state_of_many_tiny_choices_is_charged_to_the_memory_budget() {
    let entries: Vec<String> = (0..2_000)
        .map(|index| format!(r#"{{"index":{index},"delta":{{}}}}"#))
        .collect();
    let tiny = format!("data: {{\"choices\":[{}]}}\n\n", entries.join(","));
    let events = [tiny.as_str(), "data: [DONE]\n\n"];
    let upstream = Upstream::serving(Script::sse(&events, Duration::from_millis(300))).await;
    let mut raw = proxy::raw_config(&upstream.url());
    // Ten times the stream's bytes: only its reassembly state can cross it.
    let budget = 10 * tiny.len();
    raw.inspect.max_memory = Some(budget);
    let tooltap = streamed_whole(raw, &events).await;
    tripped_and_given_back(&tooltap).await;
}

/// Starts the proxy with `raw` and streams one Chat request through it, whose response must
/// reach the client as `events`, byte for byte.
async fn streamed_whole(raw: RawConfig, events: &[&str]) -> RunningProxy {
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let body = r#"{"model":"m","stream":true,"messages":[]}"#;
    let got = within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/chat/completions", body)),
    )
    .await;
    assert_eq!(
        got.body,
        events.concat().as_bytes(),
        "the client gets every byte"
    );
    tooltap
}

/// What a stream holds is charged to `inspect.max_memory`, not the bytes it has seen: many
/// concurrent long streams whose held state is small (their padding in a field no rule keeps)
/// are all inspected under a budget far below their bytes together, and the budget is given
/// back. Charging the bytes seen, as before, stopped most of them (`memory_budget`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_long_streams_that_hold_little_are_all_inspected_under_a_small_budget() {
    const STREAMS: usize = 8;
    let padded = format!(
        "data: {}\n\n",
        json!({"id":"c","object":"chat.completion.chunk","model":"m",
            "choices":[{"index":0,"delta":{},"finish_reason":null}],
            "padding":"x".repeat(4 * 1024)})
    );
    // About 1 MiB a stream, 8 MiB together, over at least half a second each: they overlap.
    let mut events: Vec<&str> = vec![padded.as_str(); 256];
    events.push("data: [DONE]\n\n");
    let whole = events.concat();
    let upstream = Upstream::serving(Script::sse(&events, Duration::from_millis(2))).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.max_memory = Some(1024 * 1024);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let body = r#"{"model":"m","stream":true,"messages":[]}"#;
    let clients: Vec<_> = (0..STREAMS)
        .map(|_| {
            tokio::spawn(exchange(
                addr,
                request(addr, "POST", "/v1/chat/completions", body),
            ))
        })
        .collect();
    for client in clients {
        let got = within(LIMIT, client).await.expect("client");
        assert_eq!(got.body, whole.as_bytes(), "the client gets every byte");
    }
    let text = settle(&tooltap, STREAMS as u64).await;
    assert_eq!(
        metric_sum(&text, "tooltap_inspection_incomplete_total", &[]),
        0,
        "every stream inspected whole"
    );
    let inspection = tooltap.state().admission.inspection().clone();
    within(LIMIT, async {
        while inspection.memory.used() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// A stream that really holds a lot still trips the budget: one SSE event of 1 MiB whose line
/// arrives in pieces is held by the framer until it ends, and its growth is charged before it
/// is taken, so a 512 KiB budget stops it (`memory_budget`, never a violation); the client
/// gets every byte and the budget is given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_whose_framing_holds_a_huge_partial_event_trips_the_budget() {
    let huge = format!(
        "data: {}\n\n",
        json!({"id":"c","object":"chat.completion.chunk","model":"m",
            "choices":[{"index":0,"delta":{},"finish_reason":null}],
            "padding":"x".repeat(1024 * 1024)})
    );
    let mut events: Vec<&str> = huge
        .as_bytes()
        .chunks(64 * 1024)
        .map(|piece| std::str::from_utf8(piece).expect("ASCII"))
        .collect();
    events.push("data: [DONE]\n\n");
    let upstream = Upstream::serving(Script::sse(&events, Duration::from_millis(20))).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.max_memory = Some(512 * 1024);
    let tooltap = streamed_whole(raw, &events).await;
    tripped_and_given_back(&tooltap).await;
}

/// A buffered body is held whole, and judging it takes more: it is charged before it is taken,
/// so a 512 KiB body under a 1 MiB budget stops (`memory_budget`, never a violation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_buffered_body_trips_the_budget() {
    let body = json!({"id":"c","object":"chat.completion","model":"m",
        "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
        "padding":"x".repeat(512 * 1024)})
    .to_string();
    let upstream = Upstream::serving(Script::full(200, "application/json", &body)).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.max_memory = Some(1024 * 1024);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let plain = r#"{"model":"m","messages":[]}"#;
    let got = within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/chat/completions", plain)),
    )
    .await;
    assert_eq!(got.body, body.as_bytes(), "the client gets every byte");
    tripped_and_given_back(&tooltap).await;
}

/// Waits for one `memory_budget` exchange, checks nothing was reported a violation, and waits
/// for the budget to be given back.
async fn tripped_and_given_back(tooltap: &RunningProxy) {
    let text = within(LIMIT, async {
        loop {
            let text = metrics(tooltap).await;
            let reason = ["reason=\"memory_budget\""];
            if metric_sum(&text, "tooltap_inspection_incomplete_total", &reason) >= 1 {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(
        metric_sum(&text, "tooltap_violations_total", &[]),
        0,
        "a bound is never a violation"
    );
    let inspection = tooltap.state().admission.inspection().clone();
    within(LIMIT, async {
        while inspection.memory.used() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}
