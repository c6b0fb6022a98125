//! Buffered-request load of `bench_client`: `rate` (open loop, latency from the scheduled send
//! time) and `max` (closed loop, throughput). Input: a [`Target`]; output: the report as JSON.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::stats::{Samples, cpu_json, percentiles, settled_cpu_time};
use crate::{Target, request_body};

pub async fn rate_mode(
    target: Target,
    rate: u32,
    seconds: f64,
    warmup: f64,
    concurrency: usize,
) -> Result<Value, String> {
    let rate = rate.max(1);
    let period = Duration::from_secs_f64(1.0 / f64::from(rate));
    let warmup_count = (warmup * f64::from(rate)) as u64;
    let total = warmup_count + (seconds * f64::from(rate)) as u64;
    let (schedule, mut due) = tokio::sync::mpsc::unbounded_channel::<(u64, Instant)>();
    // A plain thread with nanosleep keeps send times within tens of µs of the plan; tokio's
    // timer rounds up to whole milliseconds, which would swamp the figures measured here.
    let start = Instant::now() + Duration::from_millis(20);
    let pacer = std::thread::spawn(move || {
        for i in 0..total {
            let at = start + period * i as u32;
            let now = Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            if schedule.send((i, at)).is_err() {
                return;
            }
        }
    });
    let gate = Arc::new(Semaphore::new(concurrency));
    let samples = Arc::new(Mutex::new(Samples::default()));
    let body = request_body(false);
    let mut cpu_before = None;
    let mut measured_start = None;
    let mut tasks = Vec::with_capacity(total as usize);
    while let Some((i, at)) = due.recv().await {
        if i == warmup_count {
            cpu_before = target.cpu_time();
            measured_start = Some(Instant::now());
        }
        // Waiting for a permit is charged to the request: its clock started at `at`.
        let permit = gate
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let (target, body, samples) = (target.clone(), body.clone(), samples.clone());
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let outcome = target.buffered(body).await;
            let done = Instant::now();
            drop(permit);
            if i >= warmup_count {
                samples
                    .lock()
                    .map_err(|_| ())?
                    .record(outcome, at, sent, done);
            }
            Ok::<(), ()>(())
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let elapsed = measured_start.map(|s| s.elapsed().as_secs_f64());
    let (cpu_after, drain) = settled_cpu_time(target.pid).await;
    let _ = pacer.join();
    let mut samples = std::mem::take(&mut *samples.lock().map_err(|_| "poisoned")?);
    let ok = samples.scheduled.len();
    Ok(json!({
        "mode": "rate", "rate": rate, "requests": ok + samples.errors, "ok": ok,
        "errors": samples.errors, "first_error": samples.first_error,
        "achieved_rps": elapsed.map(|e| ok as f64 / e),
        "latency_us": percentiles(&mut samples.scheduled),
        "service_us": percentiles(&mut samples.service),
        "send_lateness_us": percentiles(&mut samples.lateness),
        "cpu": cpu_json(cpu_before, cpu_after, ok),
        "drain_seconds": drain,
    }))
}

pub async fn max_mode(
    target: Target,
    seconds: f64,
    warmup: f64,
    concurrency: usize,
) -> Result<Value, String> {
    let body = request_body(false);
    // The warm-up runs alone and the target settles before the window: a backlog it queued
    // while warming up would otherwise be charged to the window's requests.
    let warm_until = Instant::now() + Duration::from_secs_f64(warmup);
    for worker in closed_loop(&target, &body, concurrency, warm_until, None) {
        let _ = worker.await;
    }
    let (cpu_before, _) = settled_cpu_time(target.pid).await;
    let started = Instant::now();
    let stop_at = started + Duration::from_secs_f64(seconds);
    let samples = Arc::new(Mutex::new(Samples::default()));
    for worker in closed_loop(&target, &body, concurrency, stop_at, Some(&samples)) {
        let _ = worker.await;
    }
    // Every request sent in the window is counted, the last ones finishing after `stop_at`,
    // as the CPU read below includes their work.
    let elapsed = started.elapsed().as_secs_f64();
    let (cpu_after, drain) = settled_cpu_time(target.pid).await;
    let mut samples = std::mem::take(&mut *samples.lock().map_err(|_| "poisoned")?);
    let ok = samples.scheduled.len();
    Ok(json!({
        "mode": "max", "concurrency": concurrency, "ok": ok, "errors": samples.errors,
        "first_error": samples.first_error, "rps": ok as f64 / elapsed,
        "latency_us": percentiles(&mut samples.scheduled),
        "cpu": cpu_json(cpu_before, cpu_after, ok),
        "drain_seconds": drain,
    }))
}

/// `concurrency` workers sending back to back until `stop_at`, each request recorded in
/// `samples` when given (the warm-up gives none).
fn closed_loop(
    target: &Target,
    body: &Bytes,
    concurrency: usize,
    stop_at: Instant,
    samples: Option<&Arc<Mutex<Samples>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..concurrency.max(1))
        .map(|_| {
            let (target, body, samples) = (target.clone(), body.clone(), samples.cloned());
            // Bounded by time: every request has its own timeout, the loop ends at `stop_at`.
            tokio::spawn(async move {
                while Instant::now() < stop_at {
                    let sent = Instant::now();
                    let outcome = target.buffered(body.clone()).await;
                    let done = Instant::now();
                    if let Some(samples) = &samples
                        && let Ok(mut samples) = samples.lock()
                    {
                        samples.record(outcome, sent, sent, done);
                    }
                }
            })
        })
        .collect()
}
