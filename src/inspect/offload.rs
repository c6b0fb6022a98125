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
//! Why not tokio's blocking pool behind a semaphore: a released permit goes to the next
//! waiting inspector *task*, which then has to be scheduled on a worker thread before it can
//! start its job. With the workers busy forwarding (hundreds of streams), the permits sit idle
//! in the run queue and the inspectors fall behind, the frames waiting for them becoming most
//! of the resident memory per stream (see docs/benchmarks.md#analysis-pool). Here a pool
//! thread that finishes a job takes the next one itself. A small trip may run where the
//! inspector is instead ([`AnalysisPool::run_where`]; what a trip is and when it is small is
//! `super::trip`'s). The pool knows nothing of the engine.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use futures_util::future::Either;

type Job = Box<dyn FnOnce() + Send>;

/// The threads for engine work; shared by every inspector. The threads end when the last clone
/// of the pool is dropped.
#[derive(Debug, Clone)]
pub struct AnalysisPool {
    /// `None` when no thread could be started: jobs then go to tokio's blocking pool.
    queue: Option<Arc<Submitter>>,
    threads: usize,
}

/// The jobs waiting, and how many pool threads sleep until one comes. A job wakes one sleeping
/// thread, and none when every thread is busy (a busy thread takes the next job itself). A
/// channel's receiver behind a lock that the waiting thread holds would wake two threads per
/// job, the one that takes it and the one that then takes the lock to wait (see
/// docs/benchmarks.md#analysis-pool).
#[derive(Debug, Default)]
struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

#[derive(Default)]
struct QueueState {
    jobs: VecDeque<Job>,
    sleeping: usize,
    closed: bool,
}

impl std::fmt::Debug for QueueState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueState")
            .field("jobs", &self.jobs.len())
            .field("sleeping", &self.sleeping)
            .field("closed", &self.closed)
            .finish()
    }
}

/// The pool's side of the queue; dropping the last one closes it and the threads end.
#[derive(Debug)]
struct Submitter(Arc<Queue>);

impl Queue {
    /// A job panics outside the lock (`catch_unwind`), so a poisoned lock holds nothing broken.
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, job: Job) {
        let mut state = self.lock();
        state.jobs.push_back(job);
        let wake = state.sleeping > 0;
        drop(state);
        if wake {
            self.ready.notify_one();
        }
    }

    /// The next job, sleeping while there is none; `None` once the pool is gone.
    fn next(&self) -> Option<Job> {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            if state.closed {
                return None;
            }
            state.sleeping += 1;
            state = self
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.sleeping -= 1;
        }
    }
}

impl Drop for Submitter {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.ready.notify_all();
    }
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
        let queue = Arc::new(Queue::default());
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
        // With no thread at all, `run` falls back to tokio's blocking pool: slower under load,
        // never stuck.
        AnalysisPool {
            queue: (started > 0).then(|| Arc::new(Submitter(queue))),
            threads: started.max(1),
        }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `work` right here, on the inspector's own thread, when `here` (a small trip, see
    /// [`super::trip::HERE_BYTES`]): at once, the future ready with its result; else queued to
    /// a pool thread at once ([`AnalysisPool::run`]). `None` if it panicked.
    ///
    /// Not an `async fn`: one would keep `work` (an exchange, a batch, a recording) in its
    /// state twice, as its argument and inside [`AnalysisPool::run`]'s future, and every
    /// inspector's future holds this one's state at each trip.
    pub fn run_where<T: Send + 'static>(
        &self,
        here: bool,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = Option<T>> + '_ {
        if here {
            Either::Left(std::future::ready(
                catch_unwind(AssertUnwindSafe(work)).ok(),
            ))
        } else {
            Either::Right(self.run(work))
        }
    }

    /// Runs `work` on a pool thread, queued at once; the future gives its result, `None` if it
    /// panicked (the panic hook has printed it) or the runtime is shutting down. Not an
    /// `async fn`, for the reason [`AnalysisPool::run_where`] gives: its future holds only the
    /// way back.
    pub fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = Option<T>> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // The inspector may have gone away (shutdown): nobody to tell then.
            let _ = done.send(catch_unwind(AssertUnwindSafe(work)).ok());
        });
        let blocking = match &self.queue {
            Some(queue) => {
                queue.0.push(job);
                None
            }
            None => Some(tokio::task::spawn_blocking(job)),
        };
        async move {
            if let Some(blocking) = blocking {
                blocking.await.ok()?;
            }
            result.await.ok().flatten()
        }
    }
}

/// One pool thread: takes jobs until the pool is gone.
fn serve(queue: &Queue) {
    while let Some(job) = queue.next() {
        job();
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

    #[test]
    fn a_closed_queue_hands_out_what_it_holds_then_ends_its_threads() {
        let queue = Arc::new(Queue::default());
        let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..3 {
            let ran = Arc::clone(&ran);
            queue.push(Box::new(move || {
                ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }));
        }
        let submitter = Submitter(Arc::clone(&queue));
        // A thread sleeping on the empty queue wakes when it closes.
        let sleeper = {
            let queue = Arc::new(Queue::default());
            let thread = std::thread::spawn({
                let queue = Arc::clone(&queue);
                move || serve(&queue)
            });
            while queue.lock().sleeping == 0 {
                std::thread::yield_now();
            }
            drop(Submitter(queue));
            thread
        };
        sleeper.join().expect("the sleeping thread ended");
        drop(submitter);
        serve(&queue);
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 3);
        assert!(queue.next().is_none());
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
