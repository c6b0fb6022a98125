//! SSE load of `bench_client`: `sse` (time to first event, per-event delay against the
//! upstream's `sent_ns` stamps, events counted) and `hold` (many idle streams, the target's RSS).
//! Input: a [`Target`]; output: the report as JSON.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::bench_common::rss_kib;
use crate::stats::{cpu_json, percentiles, unix_nanos};
use crate::{Target, request_body};

/// What one SSE stream saw.
#[derive(Default)]
struct StreamSeen {
    first_event_ns: Option<i64>,
    delays_ns: Vec<i64>,
    events: u32,
    frames: u32,
    done: bool,
    error: Option<String>,
}

/// Reads one SSE response to its end, timestamping each frame on arrival and pairing it with
/// every `"sent_ns"` stamp of the events it completes.
async fn read_stream(target: &Target, query: &str) -> StreamSeen {
    let mut seen = StreamSeen::default();
    let request = match Request::post(format!("{}?{query}", target.uri))
        .header("content-type", "application/json")
        .body(Full::new(request_body(true)))
    {
        Ok(request) => request,
        Err(error) => {
            seen.error = Some(error.to_string());
            return seen;
        }
    };
    let sent = Instant::now();
    let response = match target.client.request(request).await {
        Ok(response) if response.status() == 200 => response,
        Ok(response) => {
            seen.error = Some(format!("status {}", response.status()));
            return seen;
        }
        Err(error) => {
            seen.error = Some(error.to_string());
            return seen;
        }
    };
    let mut body = response.into_body();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let received = unix_nanos();
        let frame = match frame {
            Ok(frame) => frame,
            Err(error) => {
                seen.error = Some(error.to_string());
                break;
            }
        };
        let Some(data) = frame.data_ref() else {
            continue;
        };
        seen.frames += 1;
        pending.extend_from_slice(data);
        // Only complete events (ended by a blank line) are counted; a partial one waits.
        while let Some(end) = find(&pending, b"\n\n") {
            let event: Vec<u8> = pending.drain(..end + 2).collect();
            if find(&event, b"data: [DONE]").is_some() {
                seen.done = true;
            }
            if let Some(stamp) = sent_ns(&event) {
                seen.events += 1;
                seen.delays_ns.push(received - stamp);
                seen.first_event_ns
                    .get_or_insert(sent.elapsed().as_nanos() as i64);
            }
        }
    }
    seen
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn sent_ns(event: &[u8]) -> Option<i64> {
    let marker = b"\"sent_ns\":";
    let at = find(event, marker)? + marker.len();
    let digits: Vec<u8> = event[at..]
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

pub async fn sse_mode(
    target: Target,
    streams: usize,
    events: u32,
    interval_us: u64,
    waves: usize,
) -> Result<Value, String> {
    let query = format!("events={events}&interval_us={interval_us}");
    let budget = target.timeout + Duration::from_micros(interval_us * u64::from(events));
    // Warm the pool with one connection per stream, so time to first event is one round trip
    // on an open connection, like an SDK's, and not a TCP handshake.
    let warmers: Vec<_> = (0..streams)
        .map(|_| {
            let target = target.clone();
            tokio::spawn(async move { target.buffered(request_body(false)).await })
        })
        .collect();
    for warmer in warmers {
        let _ = warmer.await;
    }
    let cpu_before = target.cpu_time();
    let (mut ttfe, mut delays) = (Vec::new(), Vec::new());
    let (mut received, mut frames, mut complete, mut errors) = (0u64, 0u64, 0usize, Vec::new());
    for _ in 0..waves.max(1) {
        let mut tasks = Vec::new();
        for _ in 0..streams {
            let (target, query) = (target.clone(), query.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::timeout(budget, read_stream(&target, &query)).await
            }));
        }
        for task in tasks {
            match task.await {
                Ok(Ok(seen)) => {
                    received += u64::from(seen.events);
                    frames += u64::from(seen.frames);
                    ttfe.extend(seen.first_event_ns);
                    delays.extend(seen.delays_ns);
                    if seen.done && seen.events == events + 1 {
                        complete += 1;
                    }
                    errors.extend(seen.error);
                }
                Ok(Err(_)) => errors.push("stream timed out".to_string()),
                Err(error) => errors.push(error.to_string()),
            }
        }
    }
    let cpu_after = target.cpu_time();
    // Each stream carries `events` tool-call chunks plus the stamped finish chunk.
    let total_streams = streams * waves.max(1);
    let expected = total_streams as u64 * (u64::from(events) + 1);
    Ok(json!({
        "mode": "sse", "streams": total_streams, "events_expected": expected,
        "events_received": received, "frames_received": frames,
        "streams_complete": complete, "errors": errors.len(), "first_error": errors.first(),
        "ttfe_us": percentiles(&mut ttfe), "event_delay_us": percentiles(&mut delays),
        "cpu": cpu_json(cpu_before, cpu_after, total_streams),
    }))
}

pub async fn hold_mode(
    target: Target,
    streams: usize,
    interval: f64,
    ramp: usize,
) -> Result<Value, String> {
    let pid = target.pid.ok_or("hold needs --pid")?;
    let rss_idle = rss_kib(pid);
    let interval_us = (interval * 1e6) as u64;
    // Long enough never to end while held: the client drops the streams when done.
    let query = format!("events=1000&interval_us={interval_us}");
    let gate = Arc::new(Semaphore::new(ramp.max(1)));
    let (opened, mut opened_rx) = tokio::sync::mpsc::unbounded_channel::<bool>();
    let mut tasks = Vec::new();
    for _ in 0..streams {
        let (target, query, gate, opened) =
            (target.clone(), query.clone(), gate.clone(), opened.clone());
        tasks.push(tokio::spawn(async move {
            let permit = gate.acquire_owned().await;
            let body = tokio::time::timeout(target.timeout, open_stream(&target, &query))
                .await
                .ok()
                .flatten();
            drop(permit);
            let _ = opened.send(body.is_some());
            // Keep reading (an event every `interval`) so the stream stays open and drained,
            // until the stream's bounded 1000 events end or the task is aborted.
            if let Some(mut body) = body {
                while let Some(Ok(_)) = body.frame().await {}
            }
        }));
    }
    drop(opened);
    let deadline = Instant::now() + target.timeout + Duration::from_secs(60);
    let (mut ok, mut failed) = (0usize, 0usize);
    while ok + failed < streams && Instant::now() < deadline {
        match tokio::time::timeout_at(deadline.into(), opened_rx.recv()).await {
            Ok(Some(true)) => ok += 1,
            Ok(Some(false)) => failed += 1,
            Ok(None) | Err(_) => break,
        }
    }
    // Let the proxy finish the allocations the last streams triggered before sampling.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_loaded = rss_kib(pid);
    for task in &tasks {
        task.abort();
    }
    let per_stream = match (rss_idle, rss_loaded) {
        (Some(idle), Some(loaded)) if ok > 0 => {
            Some(loaded.saturating_sub(idle) as f64 * 1024.0 / ok as f64)
        }
        _ => None,
    };
    Ok(json!({
        "mode": "hold", "streams": streams, "open": ok, "failed": failed,
        "rss_idle_kib": rss_idle, "rss_loaded_kib": rss_loaded,
        "bytes_per_stream": per_stream,
    }))
}

/// Opens a stream and returns its body once the first frame has arrived.
async fn open_stream(target: &Target, query: &str) -> Option<Incoming> {
    let request = Request::post(format!("{}?{query}", target.uri))
        .header("content-type", "application/json")
        .body(Full::new(request_body(true)))
        .ok()?;
    let response = target.client.request(request).await.ok()?;
    if response.status() != 200 {
        return None;
    }
    let mut body = response.into_body();
    match body.frame().await {
        Some(Ok(_)) => Some(body),
        _ => None,
    }
}
