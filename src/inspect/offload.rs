//! Runs the engine's CPU work off the runtime's worker threads, on a few threads of its own.
//!
//! Input: a closure over engine state (compiling a request's schemas, feeding a batch of frames,
//! finishing the report). Output: its result, or `None` when it panicked. [`AnalysisPool`] owns
//! [`AnalysisPool::threads`] named threads that take jobs from one queue, so a slow exchange
//! (bounded by the schema budget) occupies at most one of them and never a worker thread that
//! accepts connections or forwards frames for other exchanges. The queue holds at most one job
//! per inspector (each awaits its job before sending the next), so it is bounded by
//! `inspect.max_concurrent`.
//!
//! Why not tokio's blocking pool behind a semaphore, as before: a released permit went to the
//! next waiting inspector *task*, which then had to be scheduled on a worker thread before it
//! could start its job. With the workers busy forwarding (hundreds of streams), the permits sat
//! idle in the run queue and the inspectors fell behind: measured with `bench_memory` on 300
//! concurrent 200-event streams, 23 to 118 of the 300 were judged when the last client was done,
//! and the frames waiting for them were most of the resident memory per stream. Here a pool
//! thread that finishes a job takes the next one itself. [`Engine`] starts an exchange's engine
//! lazily, on its first trip, so that a buffered response costs one trip.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::recording::Tape;
use crate::engine::{Dialect, EngineConfig, Exchange, ResponseHead, SchemaCache};
use crate::proxy::tee::TapEvent;

type Job = Box<dyn FnOnce() + Send>;

/// The threads for engine work; shared by every inspector. The threads end when the last clone
/// of the pool is dropped.
#[derive(Debug, Clone)]
pub struct AnalysisPool {
    jobs: Sender<Job>,
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
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let mut started = 0;
        for k in 0..threads {
            let queue = Arc::clone(&queue);
            let spawned = std::thread::Builder::new()
                .name(format!("tooltap-analysis-{k}"))
                .spawn(move || serve(&queue));
            match spawned {
                Ok(_) => started += 1,
                Err(error) => tracing::warn!(%error, "could not start an analysis thread"),
            }
        }
        // With no thread at all the queue is dropped here, and `run` falls back to tokio's
        // blocking pool: slower under load, never stuck.
        AnalysisPool {
            jobs,
            threads: started.max(1),
        }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `work` on a pool thread; `None` if it panicked (the panic hook has printed it) or
    /// the runtime is shutting down.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // The inspector may have gone away (shutdown): nobody to tell then.
            let _ = done.send(catch_unwind(AssertUnwindSafe(work)).ok());
        });
        if let Err(unsent) = self.jobs.send(job) {
            tokio::task::spawn_blocking(unsent.0).await.ok()?;
        }
        result.await.ok().flatten()
    }
}

/// One pool thread: takes jobs until every sender is gone.
fn serve(queue: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held while waiting: one thread waits on the queue, the others on the lock.
        let next = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        match next {
            Ok(job) => job(),
            Err(_) => return,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_on_the_pools_own_threads_and_a_panic_costs_only_its_job() {
        let pool = AnalysisPool::new(2);
        assert_eq!(pool.threads(), 2);
        let name = pool
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .flatten();
        assert!(
            name.as_deref()
                .is_some_and(|n| n.starts_with("tooltap-analysis-")),
            "ran on {name:?}"
        );
        assert_eq!(pool.run(|| -> u8 { panic!("a broken job") }).await, None);
        assert_eq!(
            pool.run(|| 7).await,
            Some(7),
            "the thread survived the panic"
        );
    }

    #[tokio::test]
    async fn the_pool_takes_jobs_from_many_inspectors_at_once() {
        let pool = AnalysisPool::new(2);
        let jobs: Vec<_> = (0..64u64)
            .map(|k| {
                let pool = pool.clone();
                tokio::spawn(async move { pool.run(move || k * k).await })
            })
            .collect();
        let mut sum = 0;
        for job in jobs {
            sum += job.await.unwrap().expect("a result");
        }
        assert_eq!(sum, (0..64u64).map(|k| k * k).sum::<u64>());
    }
}
