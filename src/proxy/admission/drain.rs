//! Draining inspection at shutdown: the inspections still running, then every writer.
//!
//! Input: the [`Admission`] of a proxy or replay server whose listener has stopped and whose
//! connections are closed (finished or cut), and a deadline. Output: a [`Drained`] report. The
//! in-flight inspections are those holding a permit of the admission's semaphore, so waiting for
//! every permit waits for every inspection, the verdicts, violations lines and recordings it
//! sends included; then the violations file and the recorder (both layouts, held recordings'
//! spill read back on the way) are flushed, each waiting until what was queued before it is on
//! disk; so is the OpenTelemetry exporter (`[otlp]`), until its queued spans were sent. Without this the process exited with inspections and queued writes still in memory.

use std::time::{Duration, Instant};

use super::Admission;

/// How a shutdown's drain of inspection and writers went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Drained {
    /// Inspections running when the drain began.
    pub inspections: usize,
    /// ...and still running when the deadline came (their verdicts and recordings are lost).
    pub inspections_left: usize,
    /// Writers (violations file, recorder) flushed, and those the deadline cut off.
    pub writers_flushed: usize,
    pub writers_left: usize,
}

impl Drained {
    /// Whether anything was left when the deadline came.
    pub fn complete(&self) -> bool {
        self.inspections_left == 0 && self.writers_left == 0
    }
}

/// The writers are given at least this long, even when the inspections used up the deadline:
/// what the finished inspections queued is not lost to one that did not finish.
pub const WRITERS_FLOOR: Duration = Duration::from_millis(250);

impl Admission {
    /// Waits until `deadline` for the inspections in flight, then flushes the violations file
    /// and the recorder, each until `deadline` (at least [`WRITERS_FLOOR`] from then).
    pub async fn drain(&self, deadline: Instant) -> Drained {
        let inspections = self.in_flight();
        let all = u32::try_from(self.max_concurrent).unwrap_or(u32::MAX);
        let waited = tokio::time::timeout_at(deadline.into(), self.permits.acquire_many(all)).await;
        let inspections_left = match waited {
            // Keep the permits: an exchange that arrives now is not inspected half-way.
            Ok(Ok(permits)) => {
                permits.forget();
                0
            }
            Ok(Err(_closed)) => 0,
            Err(_elapsed) => self.in_flight(),
        };
        let mut drained = Drained {
            inspections,
            inspections_left,
            ..Drained::default()
        };
        let deadline = deadline.max(Instant::now() + WRITERS_FLOOR);
        let inspection = &self.inspection;
        if let Some(sink) = &inspection.violations {
            tally(&mut drained, within(deadline, sink.flush()).await);
        }
        if let Some(recorder) = &inspection.recorder {
            tally(&mut drained, within(deadline, recorder.flush()).await);
        }
        if let Some(spans) = &inspection.otlp {
            tally(&mut drained, within(deadline, spans.flush()).await);
        }
        drained
    }

    /// Inspections holding a permit now.
    fn in_flight(&self) -> usize {
        self.max_concurrent
            .saturating_sub(self.permits.available_permits())
    }
}

async fn within(deadline: Instant, flush: impl std::future::Future<Output = ()>) -> bool {
    tokio::time::timeout_at(deadline.into(), flush)
        .await
        .is_ok()
}

fn tally(drained: &mut Drained, flushed: bool) {
    if flushed {
        drained.writers_flushed += 1;
    } else {
        drained.writers_left += 1;
    }
}

/// The drain's deadline: the end of the grace that began at `began`, but at least `floor`
/// from now, so the inspections of exchanges cut at the end of the grace can still write what
/// they hold (a cut recording ends `client_gone`/`truncated` rather than vanishing).
pub fn deadline(began: Instant, grace: Duration, floor: Duration) -> Instant {
    (began + grace).max(Instant::now() + floor.min(grace))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::{EngineConfig, SchemaCache};
    use crate::inspect::{AnalysisPool, HoldSettings, Inspection};
    use crate::metrics::Metrics;
    use crate::tap::memory::MemoryBudget;
    use crate::violations_file::ViolationsFile;

    /// An inspection still running at the deadline is reported left, and the writers are
    /// flushed all the same (what finished inspections queued reaches the file); once it ends,
    /// a drain is complete.
    #[tokio::test]
    async fn an_inspection_past_the_deadline_is_reported_left_and_the_writers_still_flushed() {
        let dir = crate::test_dir::TestDir::new("drain");
        let path = dir.join("violations.jsonl");
        let metrics = Arc::new(Metrics::default());
        let sink = ViolationsFile::spawn(path.clone(), "violations", metrics.clone());
        let inspection = Arc::new(Inspection {
            engine: Arc::new(EngineConfig::default()),
            schemas: Arc::new(SchemaCache::default()),
            metrics,
            violations: Some(sink.clone()),
            recorder: None,
            hold: HoldSettings::in_memory(1 << 20),
            max_request_body: 1 << 20,
            analysis: AnalysisPool::default(),
            memory: MemoryBudget::new(crate::config::inspect::DEFAULT_MAX_MEMORY),
            mcp: None,
            otlp: None,
        });
        let admission = Admission::with(inspection, 4, 16);
        let running = admission
            .permits
            .clone()
            .try_acquire_owned()
            .expect("a permit");
        sink.append(vec!["{\"exchange\":\"t-1\"}".into()]);
        let drained = admission.drain(Instant::now()).await;
        assert_eq!(
            drained,
            Drained {
                inspections: 1,
                inspections_left: 1,
                writers_flushed: 1,
                writers_left: 0,
            }
        );
        assert!(!drained.complete());
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "{\"exchange\":\"t-1\"}\n"
        );
        drop(running);
        let drained = admission
            .drain(Instant::now() + Duration::from_secs(5))
            .await;
        assert!(drained.complete(), "{drained:?}");
        assert_eq!(drained.inspections, 0);
    }

    #[test]
    fn the_deadline_is_the_grace_but_at_least_the_floor_after_now() {
        let began = Instant::now();
        let grace = Duration::from_secs(30);
        assert_eq!(
            deadline(began, grace, Duration::from_secs(1)),
            began + grace
        );
        let long_ago = began.checked_sub(Duration::from_secs(60)).unwrap_or(began);
        let late = deadline(long_ago, grace, Duration::from_secs(1));
        assert!(
            late >= began + Duration::from_millis(900),
            "the floor after a cut"
        );
        let none = deadline(long_ago, Duration::ZERO, Duration::from_secs(1));
        assert!(none <= Instant::now(), "never more than the grace");
    }
}
