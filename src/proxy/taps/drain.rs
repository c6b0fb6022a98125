//! Draining inspection at shutdown: the inspections still running, then every writer.
//!
//! Input: the [`Watch`] of a proxy or replay server whose listener has stopped and whose
//! connections are closed (finished or cut), and a deadline. Output: a [`Drained`] report. The
//! in-flight inspections are those holding a permit of the watch's semaphore, so waiting for
//! every permit waits for every inspection, the verdicts, violations lines and recordings it
//! sends included; then the violations file and the recorder (both layouts, held recordings'
//! spill read back on the way) are flushed, each waiting until what was queued before it is on
//! disk. Without this the process exited with inspections and queued writes still in memory.

use std::time::{Duration, Instant};

use super::Watch;

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

impl Watch {
    /// Waits until `deadline` for the inspections in flight, then flushes the violations file
    /// and the recorder, each until `deadline` too.
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
        let inspection = &self.inspection;
        if let Some(sink) = &inspection.violations {
            tally(&mut drained, within(deadline, sink.flush()).await);
        }
        if let Some(recorder) = &inspection.recorder {
            tally(&mut drained, within(deadline, recorder.flush()).await);
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
