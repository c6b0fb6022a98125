//! Measurement helpers of `bench_client`: the target process's CPU time from /proc (and the
//! wait until it stops growing after the load), nearest-rank percentiles, wall-clock
//! nanoseconds, and the per-request sample store.
//! Input: /proc/PID/stat, /proc/PID/task/*/sched and raw samples; output: JSON fragments for
//! the report.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// A process's CPU time, all threads: in clock ticks, user and kernel apart (fields 14 and 15
/// of /proc/PID/stat), since a proxy's kernel time (the loopback TCP stack) is much of it and
/// moves with the machine, while its user time is its own code; and, when the kernel exposes
/// it, the total to the nanosecond ([`run_ns`]), for figures too small for ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTime {
    pub user: u64,
    pub system: u64,
    pub run_ns: Option<u64>,
}

impl CpuTime {
    /// The tick counts alone: what "stopped growing" compares, since a nanosecond count moves
    /// with every timer a parked runtime wakes for.
    fn ticks(self) -> (u64, u64) {
        (self.user, self.system)
    }
}

/// The time the process's live threads have run, in ns: the sum of each thread's
/// `se.sum_exec_runtime` (milliseconds with six decimals) in /proc/PID/task/TID/sched, which
/// kernels built with scheduler debugging expose. `None` without it. A thread that exits between
/// two readings takes its time with it, so this is for processes whose threads live on (a proxy
/// under test).
pub fn run_ns(pid: u32) -> Option<u64> {
    let mut total = None::<u64>;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        // A thread that exited since the listing has no file left to read: skipped.
        let Ok(sched) = std::fs::read_to_string(task.path().join("sched")) else {
            continue;
        };
        let ns = sum_exec_runtime_ns(&sched)?;
        total = Some(total.unwrap_or(0).saturating_add(ns));
    }
    total
}

/// `se.sum_exec_runtime` of one /proc/.../sched file, in ns.
fn sum_exec_runtime_ns(sched: &str) -> Option<u64> {
    let line = sched
        .lines()
        .find(|line| line.starts_with("se.sum_exec_runtime"))?;
    let value = line.rsplit(':').next()?.trim();
    let (ms, fraction) = value.split_once('.').unwrap_or((value, "0"));
    let fraction = format!("{fraction:0<6}");
    Some(ms.parse::<u64>().ok()? * 1_000_000 + fraction.get(..6)?.parse::<u64>().ok()?)
}

pub fn cpu_time(pid: u32) -> Option<CpuTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; the fields after its closing parenthesis do not.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    Some(CpuTime {
        user: fields.get(11)?.parse().ok()?,
        system: fields.get(12)?.parse().ok()?,
        run_ns: run_ns(pid),
    })
}

/// After the load stops, waits until the target's CPU time stops growing (its ticks unchanged
/// across three polls 100 ms apart, at most 60 s) and returns that time, with how long it took.
/// Work a proxy queued during the window (a recorder behind on its disk writes) belongs to the
/// window's requests: read at the window's end, it would be left out of CPU per request.
pub async fn settled_cpu_time(pid: Option<u32>) -> (Option<CpuTime>, f64) {
    let started = Instant::now();
    let Some(pid) = pid else {
        return (None, 0.0);
    };
    let mut last = cpu_time(pid);
    let mut quiet = 0;
    while quiet < 3 && started.elapsed().as_secs() < 60 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now = cpu_time(pid);
        quiet = if now.map(CpuTime::ticks) == last.map(CpuTime::ticks) {
            quiet + 1
        } else {
            0
        };
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
pub fn cpu_json(before: Option<CpuTime>, after: Option<CpuTime>, requests: usize) -> Value {
    match (before, after) {
        (Some(b), Some(a)) if requests > 0 => {
            let seconds = |b: u64, a: u64| a.saturating_sub(b) as f64 / TICKS_PER_SECOND;
            let per_request = |seconds: f64| seconds * 1e6 / requests as f64;
            let (user, system) = (seconds(b.user, a.user), seconds(b.system, a.system));
            // Nanoseconds, when both readings have them and no thread took its time away.
            let run = b
                .run_ns
                .zip(a.run_ns)
                .filter(|(b, a)| a >= b)
                .map(|(b, a)| (a - b) as f64 / 1e9);
            json!({
                "cpu_seconds": user + system,
                "cpu_us_per_request": per_request(user + system),
                "user_us_per_request": per_request(user),
                "system_us_per_request": per_request(system),
                "run_seconds": run,
                "run_us_per_request": run.map(per_request),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_exec_runtime_reads_milliseconds_with_six_decimals_as_nanoseconds() {
        let sched = "tooltap (7, #threads: 5)\n---\nse.exec_start   :   4017743.987134\n\
                     se.sum_exec_runtime    :    1234.056789\nnr_switches : 3\n";
        assert_eq!(sum_exec_runtime_ns(sched), Some(1_234_056_789));
        assert_eq!(
            sum_exec_runtime_ns("se.sum_exec_runtime : 2.5\n"),
            Some(2_500_000)
        );
        assert_eq!(sum_exec_runtime_ns("nr_switches : 3\n"), None);
    }

    #[test]
    fn this_process_has_run_for_a_while_when_the_kernel_exposes_it() {
        // Where /proc/PID/task/*/sched exists, the sum grows as this thread burns CPU: 50 ms
        // of spinning gives at least 10 ms of it even on a busy machine.
        let Some(before) = run_ns(std::process::id()) else {
            assert!(
                std::fs::metadata(format!("/proc/{}/sched", std::process::id())).is_err(),
                "sched files exist but could not be read"
            );
            return;
        };
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed().as_millis() < 50 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = run_ns(std::process::id()).unwrap_or(0);
        assert!(after >= before + 10_000_000, "{before} -> {after}");
    }
}
