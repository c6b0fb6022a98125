//! Runs the engine's CPU work off the runtime's worker threads, a bounded number at a time.
//!
//! Input: a closure over engine state (compiling a request's schemas, feeding a batch of frames,
//! finishing the report). Output: its result, or `None` when it panicked. The work runs on
//! tokio's blocking pool behind a semaphore of [`AnalysisPool::threads`] permits, so a slow
//! exchange (bounded by the schema budget) occupies at most one of them and never a worker
//! thread that accepts connections or forwards frames for other exchanges.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tokio::sync::Semaphore;

/// The permits for engine work; shared by every inspector.
#[derive(Debug, Clone)]
pub struct AnalysisPool {
    permits: Arc<Semaphore>,
    threads: usize,
}

impl Default for AnalysisPool {
    /// One thread per core, at least two.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        AnalysisPool::new(cores.max(2))
    }
}

impl AnalysisPool {
    pub fn new(threads: usize) -> AnalysisPool {
        let threads = threads.max(1);
        AnalysisPool {
            permits: Arc::new(Semaphore::new(threads)),
            threads,
        }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `work` on the blocking pool once a permit is free; `None` if it panicked (the panic
    /// hook has printed it) or the pool is shutting down.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let permit = Arc::clone(&self.permits).acquire_owned().await.ok()?;
        let task = tokio::task::spawn_blocking(move || {
            let result = catch_unwind(AssertUnwindSafe(work)).ok();
            drop(permit);
            result
        });
        task.await.ok().flatten()
    }
}
