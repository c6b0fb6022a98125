//! Inspector tasks kept between exchanges: an admitted exchange's inspection is handed to a crew
//! member that waits for one, and gets a task of its own only when none waits.
//!
//! Why: a spawned task's cell is aligned to a cache line, and glibc serves an aligned allocation
//! on its slow path, never from its per-thread cache; spawning one task per exchange paid that,
//! the task list's lock and the cell's release on every exchange (see
//! docs/benchmarks.md#inspector-crew). A hand-over costs a one-shot channel and two short locks.
//!
//! Input: each admitted exchange's inspection, boxed ([`Crew::run`]). Output: the inspection run
//! to its end on a member's task. A member whose inspection ended offers itself for the next one,
//! unless [`MAX_IDLE`] members already wait: then its task ends. So the crew is at most the
//! inspections at work (each holds one of `inspect.max_concurrent` permits) plus [`MAX_IDLE`]
//! idle members. A member whose runtime ended (its task dropped with its receiver) refuses the
//! hand-over, and the inspection is offered to the next one or gets a task of its own. A member
//! runs one inspection at a time, and the inspection ends its own work (permit, verdict) as it
//! did on a task of its own; the idle list's lock guards a push or a pop, never an await.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

/// One exchange's inspection, with its end (permit returned, verdict posted) mapped on.
pub type InspectionTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The most members kept waiting for an inspection; past it, a member whose inspection ended
/// ends too.
pub const MAX_IDLE: usize = 64;

/// The members waiting for an inspection, each by the sender of its hand-over channel.
#[derive(Default)]
pub struct Crew {
    idle: Mutex<Vec<oneshot::Sender<InspectionTask>>>,
}

impl Crew {
    /// Runs `inspection` on a waiting member, or on a new member's task when none waits.
    pub fn run(self: &Arc<Crew>, mut inspection: InspectionTask) {
        loop {
            // Popped in a statement of its own: the lock is released before the hand-over (a
            // `while let` would hold its guard through the loop's body).
            let Some(member) = self.lock().pop() else {
                break;
            };
            match member.send(inspection) {
                Ok(()) => return,
                // Its task was dropped (its runtime ended): offer the next one.
                Err(refused) => inspection = refused,
            }
        }
        tokio::spawn(member(Arc::clone(self), inspection));
    }

    /// How many members wait for an inspection now.
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.lock().len()
    }

    /// Puts a member's hand-over on the idle list; `false` when [`MAX_IDLE`] already wait.
    fn offer(&self, hand_over: oneshot::Sender<InspectionTask>) -> bool {
        let mut idle = self.lock();
        if idle.len() >= MAX_IDLE {
            return false;
        }
        idle.push(hand_over);
        true
    }

    fn lock(&self) -> MutexGuard<'_, Vec<oneshot::Sender<InspectionTask>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A member's task: its first inspection, then each one handed over, until it is not kept.
async fn member(crew: Arc<Crew>, mut inspection: InspectionTask) {
    loop {
        inspection.await;
        let (hand_over, next) = oneshot::channel();
        if !crew.offer(hand_over) {
            return;
        }
        match next.await {
            Ok(handed) => inspection = handed,
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The id of the task an inspection ran on, sent when it ends.
    fn probe(ran_on: oneshot::Sender<tokio::task::Id>) -> InspectionTask {
        Box::pin(async move {
            let _ = ran_on.send(tokio::task::id());
        })
    }

    async fn idle_count_reaches(crew: &Crew, expected: usize) {
        for _ in 0..1000 {
            if crew.idle() == expected {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(crew.idle(), expected, "idle members");
    }

    #[tokio::test]
    async fn an_inspection_after_another_runs_on_the_same_members_task() {
        let crew = Arc::new(Crew::default());
        let (first, first_ran) = oneshot::channel();
        crew.run(probe(first));
        let first_task = first_ran.await.expect("the first inspection ran");
        idle_count_reaches(&crew, 1).await;
        let (second, second_ran) = oneshot::channel();
        crew.run(probe(second));
        let second_task = second_ran.await.expect("the second inspection ran");
        assert_eq!(first_task, second_task, "no task spawned for the second");
        idle_count_reaches(&crew, 1).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn inspections_at_once_each_get_a_member_and_at_most_max_idle_stay() {
        let crew = Arc::new(Crew::default());
        let at_once = MAX_IDLE + 20;
        let (release, released) = tokio::sync::watch::channel(false);
        let (ran_on, mut ran) = tokio::sync::mpsc::unbounded_channel();
        for _ in 0..at_once {
            let (mut released, ran_on) = (released.clone(), ran_on.clone());
            crew.run(Box::pin(async move {
                let _ = released.wait_for(|go| *go).await;
                let _ = ran_on.send(tokio::task::id());
            }));
        }
        drop(ran_on);
        release.send(true).expect("the inspections wait");
        let mut tasks = std::collections::HashSet::new();
        while let Some(task) = ran.recv().await {
            tasks.insert(task);
        }
        assert_eq!(tasks.len(), at_once, "one member per inspection at work");
        idle_count_reaches(&crew, MAX_IDLE).await;
    }

    #[test]
    fn a_member_whose_runtime_ended_is_passed_over() {
        let crew = Arc::new(Crew::default());
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("runtime")
        };
        let first = runtime();
        first.block_on(async {
            let (ran_on, ran) = oneshot::channel();
            crew.run(probe(ran_on));
            ran.await.expect("the first inspection ran");
            idle_count_reaches(&crew, 1).await;
        });
        drop(first);
        runtime().block_on(async {
            let (ran_on, ran) = oneshot::channel();
            crew.run(probe(ran_on));
            tokio::time::timeout(Duration::from_secs(10), ran)
                .await
                .expect("the inspection ran on a new member")
                .expect("it ended");
            idle_count_reaches(&crew, 1).await;
        });
    }
}
