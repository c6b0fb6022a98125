//! The one shape of tooltap's file writers: a named thread that owns its files, fed over a
//! channel whose memory the senders bound, so traffic never waits on a disk.
//!
//! Input: messages, each with a cost against the thread's budget (bytes for the recorder, batches
//! for the violations file), sent from any thread or task without blocking; `flush` from async
//! code. Output: the [`Drain`]'s own writes. The thread takes a message, then everything else
//! already queued, releasing each cost once handled; with a `gather` pause it then sleeps before
//! waiting again, so a busy proxy wakes it once per pause instead of once per message; before
//! that pause (or waiting) the drain is told it is idle. A flush is answered once every message
//! before it is handled and the drain's buffers are flushed.
//! Used by the violations file ([`crate::violations_file`]) and the recorder ([`crate::record`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::time::Duration;

use tokio::sync::oneshot;

/// What a writer thread does with its messages.
pub trait Drain: Send + 'static {
    /// What the senders queue.
    type Msg: Send + 'static;
    /// Handle one message (write it, or fail and count it: the thread goes on either way).
    fn take(&mut self, msg: Self::Msg);
    /// Flush buffered writes, before a flush request is answered.
    fn flush(&mut self);
    /// Called each time the queue is found empty after a burst: write out what must not wait
    /// for the next message (the recorder's segments, so a finished recording reaches its file
    /// within one burst even when the process is killed next).
    fn idle(&mut self) {}
}

/// What travels on the channel.
enum Envelope<M> {
    Msg { msg: M, cost: usize },
    Flush(oneshot::Sender<()>),
}

/// The sending side: cheap to clone, never blocks.
pub struct WriterThread<M> {
    tx: Sender<Envelope<M>>,
    queued: Arc<AtomicUsize>,
    budget: usize,
}

impl<M> Clone for WriterThread<M> {
    fn clone(&self) -> Self {
        WriterThread {
            tx: self.tx.clone(),
            queued: Arc::clone(&self.queued),
            budget: self.budget,
        }
    }
}

impl<M> std::fmt::Debug for WriterThread<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterThread")
            .field("queued", &self.queued.load(Ordering::Relaxed))
            .field("budget", &self.budget)
            .finish()
    }
}

impl<M: Send + 'static> WriterThread<M> {
    /// Start the thread `tooltap-<name>`. A thread that cannot start is logged; every later
    /// send then fails (and its caller counts it): traffic is unaffected either way.
    pub fn spawn<D>(name: &str, budget: usize, gather: Duration, drain: D) -> WriterThread<M>
    where
        D: Drain<Msg = M>,
    {
        let (tx, rx) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let released = Arc::clone(&queued);
        let spawned = std::thread::Builder::new()
            .name(format!("tooltap-{name}"))
            .spawn(move || run(drain, &rx, &released, gather));
        if let Err(error) = spawned {
            tracing::error!(thread = name, %error, "could not start a writer thread; what it would write is dropped and counted");
        }
        WriterThread { tx, queued, budget }
    }

    /// Whether a message of this cost fits in the budget now.
    pub fn fits(&self, cost: usize) -> bool {
        self.queued.load(Ordering::Relaxed) + cost <= self.budget
    }

    /// Queue a message whatever the budget (for the messages that must arrive, like the end of a
    /// recording). `false` when the thread is gone.
    pub fn send(&self, msg: M, cost: usize) -> bool {
        self.queued.fetch_add(cost, Ordering::Relaxed);
        if self.tx.send(Envelope::Msg { msg, cost }).is_err() {
            self.queued.fetch_sub(cost, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Queue a message only if it fits in the budget. `false` when it was dropped.
    pub fn try_send(&self, msg: M, cost: usize) -> bool {
        self.fits(cost) && self.send(msg, cost)
    }

    /// Wait until every message queued so far is handled and flushed (shutdown, tests).
    pub async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.tx.send(Envelope::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
    }
}

/// The thread's loop; ends when every sender is gone.
fn run<D: Drain>(
    mut drain: D,
    rx: &Receiver<Envelope<D::Msg>>,
    queued: &AtomicUsize,
    gather: Duration,
) {
    let take = |drain: &mut D, envelope: Envelope<D::Msg>| match envelope {
        Envelope::Msg { msg, cost } => {
            drain.take(msg);
            queued.fetch_sub(cost, Ordering::Relaxed);
        }
        Envelope::Flush(done) => {
            drain.flush();
            let _ = done.send(());
        }
    };
    while let Ok(envelope) = rx.recv() {
        take(&mut drain, envelope);
        loop {
            match rx.try_recv() {
                Ok(envelope) => take(&mut drain, envelope),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    drain.idle();
                    return;
                }
            }
        }
        drain.idle();
        if !gather.is_zero() {
            std::thread::sleep(gather);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records what it took, slowly enough that messages queue up.
    struct Slow(Arc<Mutex<Vec<u32>>>);

    impl Drain for Slow {
        type Msg = u32;
        fn take(&mut self, msg: u32) {
            std::thread::sleep(Duration::from_millis(5));
            self.0.lock().expect("lock").push(msg);
        }
        fn flush(&mut self) {}
    }

    #[tokio::test]
    async fn the_budget_drops_what_does_not_fit_and_flush_waits_for_the_rest() {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let thread = WriterThread::spawn("test", 10, Duration::ZERO, Slow(Arc::clone(&taken)));
        let accepted: Vec<u32> = (0..40).filter(|&n| thread.try_send(n, 4)).collect();
        assert!(
            accepted.len() < 40,
            "a budget of 10 cannot hold 40 messages of 4"
        );
        assert!(thread.send(99, 4), "send ignores the budget");
        thread.flush().await;
        let mut expected = accepted.clone();
        expected.push(99);
        assert_eq!(
            *taken.lock().expect("lock"),
            expected,
            "in order, none lost"
        );
        assert!(thread.fits(10), "every cost released once handled");
    }
}
