//! Measurement helpers of `bench_client`: the target process's CPU time from /proc (and the
//! wait until it stops growing after the load), nearest-rank percentiles, wall-clock
//! nanoseconds, and the per-request sample store.
//! Input: /proc/PID/stat and raw samples; output: JSON fragments for the report.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// A process's CPU time in clock ticks, all threads: user and kernel apart (fields 14 and 15
/// of /proc/PID/stat), since a proxy's kernel time (the loopback TCP stack) is much of it and
/// moves with the machine, while its user time is its own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub system: u64,
}

pub fn cpu_ticks(pid: u32) -> Option<CpuTicks> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; the fields after its closing parenthesis do not.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    Some(CpuTicks {
        user: fields.get(11)?.parse().ok()?,
        system: fields.get(12)?.parse().ok()?,
    })
}

/// After the load stops, waits until the target's CPU time stops growing (unchanged across
/// three polls 100 ms apart, at most 60 s) and returns its ticks then, with how long that took.
/// Work a proxy queued during the window (a recorder behind on its disk writes) belongs to the
/// window's requests: read at the window's end, it would be left out of CPU per request.
pub async fn settled_ticks(pid: Option<u32>) -> (Option<CpuTicks>, f64) {
    let started = Instant::now();
    let Some(pid) = pid else {
        return (None, 0.0);
    };
    let mut last = cpu_ticks(pid);
    let mut quiet = 0;
    while quiet < 3 && started.elapsed().as_secs() < 60 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now = cpu_ticks(pid);
        quiet = if now == last { quiet + 1 } else { 0 };
        last = now;
    }
    // The three quiet polls are not part of the drain.
    let drain = (started.elapsed().as_secs_f64() - 0.3).max(0.0);
    (last, drain)
}

/// Linux reports CPU time in USER_HZ ticks, 100 per second on every mainstream architecture.
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds and microseconds per request between two readings: in all, and user and kernel
/// apart.
pub fn cpu_json(before: Option<CpuTicks>, after: Option<CpuTicks>, requests: usize) -> Value {
    match (before, after) {
        (Some(b), Some(a)) if requests > 0 => {
            let seconds = |b: u64, a: u64| a.saturating_sub(b) as f64 / TICKS_PER_SECOND;
            let per_request = |seconds: f64| seconds * 1e6 / requests as f64;
            let (user, system) = (seconds(b.user, a.user), seconds(b.system, a.system));
            json!({
                "cpu_seconds": user + system,
                "cpu_us_per_request": per_request(user + system),
                "user_us_per_request": per_request(user),
                "system_us_per_request": per_request(system),
            })
        }
        _ => json!({"cpu_seconds": null, "cpu_us_per_request": null}),
    }
}

/// Nearest-rank percentiles of nanosecond samples, reported in microseconds.
pub fn percentiles(samples: &mut [i64]) -> Value {
    if samples.is_empty() {
        return json!(null);
    }
    samples.sort_unstable();
    let at = |p: f64| {
        let rank = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        samples[rank - 1] as f64 / 1000.0
    };
    json!({"n": samples.len(), "p50": at(0.50), "p90": at(0.90), "p99": at(0.99),
           "p999": at(0.999), "max": at(1.0), "min": at(0.0)})
}

pub fn unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

#[derive(Default)]
pub struct Samples {
    pub scheduled: Vec<i64>,
    pub service: Vec<i64>,
    pub lateness: Vec<i64>,
    pub errors: usize,
    pub first_error: Option<String>,
}

impl Samples {
    pub fn record(
        &mut self,
        outcome: Result<(), String>,
        at: Instant,
        sent: Instant,
        done: Instant,
    ) {
        match outcome {
            Ok(()) => {
                self.scheduled.push((done - at).as_nanos() as i64);
                self.service.push((done - sent).as_nanos() as i64);
                self.lateness.push((sent - at).as_nanos() as i64);
            }
            Err(error) => {
                self.errors += 1;
                self.first_error.get_or_insert(error);
            }
        }
    }
}
