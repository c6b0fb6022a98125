//! Graceful shutdown of served connections, at the price of one flag read per poll.
//!
//! Input: a hyper server connection (HTTP/1.1 or HTTP/2) and a [`Watcher`] taken from the
//! listener's [`Shutdown`]. Output: the connection's own result; once [`Shutdown::begin`] has
//! been called, the connection is told to shut down gracefully (hyper finishes the exchange in
//! flight and closes, or closes at once when idle) and runs to its end.
//!
//! hyper-util's `GracefulShutdown` polls a `watch` channel's `changed()` each time the
//! connection is polled, which takes the channel's waiter lock every time (a few times per
//! request). Here the waker is registered once, on the first poll, and every later poll reads an
//! atomic flag; [`Shutdown::begin`] sets the flag before it wakes the registered waiters. The
//! one registration is enough because the connection future is the whole body of its own task
//! (the accept loop spawns it so), so every poll comes with a waker of that same task.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

/// The listener's half: begins the shutdown of every watched connection.
#[derive(Debug, Default)]
pub struct Shutdown {
    begun: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

/// One connection's half, taken before the connection's task is spawned.
#[derive(Debug)]
pub struct Watcher {
    begun: Arc<AtomicBool>,
    /// Made with the watcher, so a shutdown begun before the first poll still reaches it
    /// (`Notify::notify_waiters` completes every `Notified` made before it).
    notified: OwnedNotified,
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    pub fn watcher(&self) -> Watcher {
        Watcher {
            begun: self.begun.clone(),
            notified: self.notify.clone().notified_owned(),
        }
    }

    /// Tell every watched connection to shut down gracefully, now or at its next poll.
    pub fn begin(&self) {
        self.begun.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }
}

/// Runs `connection` to its end, calling `shut_down` on it once when the shutdown begins.
/// `connection` must be polled only from the task that runs this future (see the module doc).
pub async fn watched<C, F>(connection: C, watcher: Watcher, mut shut_down: F) -> C::Output
where
    C: Future,
    F: FnMut(Pin<&mut C>),
{
    let Watcher { begun, notified } = watcher;
    let mut connection = pin!(connection);
    let mut notified = pin!(notified);
    let mut registered = false;
    let mut told = false;
    std::future::poll_fn(|cx| {
        if !told {
            let begun = if registered {
                begun.load(Ordering::Acquire)
            } else {
                registered = true;
                notified.as_mut().poll(cx).is_ready()
            };
            if begun {
                told = true;
                shut_down(connection.as_mut());
            }
        }
        connection.as_mut().poll(cx)
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    /// A connection that stays pending until told to shut down, then ends; it counts both.
    struct Connection {
        polls: Arc<AtomicUsize>,
        told: Arc<AtomicUsize>,
    }

    impl Future for Connection {
        type Output = usize;

        fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<usize> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            match self.told.load(Ordering::SeqCst) {
                0 => {
                    // Asks to be polled again, as a connection with traffic would be.
                    cx.waker().wake_by_ref();
                    std::task::Poll::Pending
                }
                told => std::task::Poll::Ready(told),
            }
        }
    }

    fn connection() -> (Connection, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let (polls, told) = (Arc::default(), Arc::default());
        let connection = Connection {
            polls: Arc::clone(&polls),
            told: Arc::clone(&told),
        };
        (connection, polls, told)
    }

    fn tell(connection: Pin<&mut Connection>) {
        connection.told.fetch_add(1, Ordering::SeqCst);
    }

    #[tokio::test]
    async fn a_shutdown_begun_while_a_connection_runs_tells_it_once_and_it_ends() {
        let shutdown = Shutdown::new();
        let (connection, polls, _told) = connection();
        let task = tokio::spawn(watched(connection, shutdown.watcher(), tell));
        while polls.load(Ordering::SeqCst) < 50 {
            tokio::task::yield_now().await;
        }
        assert!(
            !task.is_finished(),
            "nothing told the connection to stop yet"
        );
        shutdown.begin();
        let told = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the connection ends once told")
            .expect("the task does not panic");
        assert_eq!(told, 1, "told exactly once");
    }

    #[tokio::test]
    async fn a_shutdown_begun_before_the_first_poll_still_reaches_the_connection() {
        let shutdown = Shutdown::new();
        let watcher = shutdown.watcher();
        shutdown.begin();
        let (connection, _polls, _told) = connection();
        let told = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::spawn(watched(connection, watcher, tell)),
        )
        .await
        .expect("the connection ends once told")
        .expect("the task does not panic");
        assert_eq!(told, 1);
    }

    /// The flag is what later polls read: a connection that only waits (no wake of its own)
    /// is woken by the shutdown through the waker its first poll registered.
    #[tokio::test]
    async fn an_idle_connection_is_woken_by_the_shutdown() {
        struct Idle(Arc<AtomicUsize>);
        impl Future for Idle {
            type Output = usize;
            fn poll(
                self: Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<usize> {
                match self.0.load(Ordering::SeqCst) {
                    0 => std::task::Poll::Pending,
                    told => std::task::Poll::Ready(told),
                }
            }
        }
        let shutdown = Shutdown::new();
        let told = Arc::new(AtomicUsize::new(0));
        let idle = Idle(Arc::clone(&told));
        let task = tokio::spawn(watched(idle, shutdown.watcher(), |idle: Pin<&mut Idle>| {
            idle.0.fetch_add(1, Ordering::SeqCst);
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!task.is_finished());
        shutdown.begin();
        let told = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the shutdown wakes the idle connection")
            .expect("the task does not panic");
        assert_eq!(told, 1);
    }
}
