//! Runs the engine's CPU work off the runtime's worker threads, a bounded number at a time.
//!
//! Input: a closure over engine state (compiling a request's schemas, feeding a batch of frames,
//! finishing the report). Output: its result, or `None` when it panicked. The work runs on
//! tokio's blocking pool behind a semaphore of [`AnalysisPool::threads`] permits, so a slow
//! exchange (bounded by the schema budget) occupies at most one of them and never a worker
//! thread that accepts connections or forwards frames for other exchanges. [`Engine`] starts an
//! exchange's engine lazily, on its first trip, so that a buffered response costs one trip.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::Semaphore;

use super::recording::Tape;
use crate::engine::{Dialect, EngineConfig, Exchange, ResponseHead, SchemaCache};
use crate::proxy::tee::TapEvent;

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

pub(super) fn feed(exchange: &mut Exchange, batch: Vec<TapEvent>, tape: &mut Option<Tape>) {
    for event in batch {
        #[cfg(test)]
        super::tests::panic_on_marker(&event.bytes);
        if let Some(tape) = tape.as_mut() {
            tape.frame(&event.bytes, event.at);
        }
        exchange.feed(&event.bytes);
    }
}

/// What the engine needs to start, until the first trip to the analysis pool starts it.
pub(super) struct Start {
    pub engine: Arc<EngineConfig>,
    pub schemas: Arc<SchemaCache>,
    pub dialect: Dialect,
    pub request_body: Option<Bytes>,
    pub head: ResponseHead,
}

/// The engine for one exchange: not started yet, or started (on a pool thread).
pub(super) enum Engine {
    Pending(Start),
    Started(Box<Exchange>),
}

impl Engine {
    /// The started exchange; starts it first when needed. Call on a pool thread only.
    pub(super) fn get(self) -> Exchange {
        match self {
            Engine::Started(exchange) => *exchange,
            Engine::Pending(start) => {
                let mut exchange = Exchange::with_dialect(
                    &start.engine,
                    &start.schemas,
                    start.dialect,
                    start.request_body.as_deref().unwrap_or_default(),
                );
                exchange.response_head(start.head);
                exchange
            }
        }
    }
}
