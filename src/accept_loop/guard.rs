//! The accept loop's guards against clients that hold resources without using them: the wait
//! for a connection's first bytes, throttled warnings, the accept-error backoff and the file
//! descriptor budget that bounds the default connection cap.
//!
//! Input: an accepted socket, clock readings, `/proc/self/limits`. Output: the protocol the
//! opening bytes choose, or why there is none ([`Opening`]), whether a warning is due
//! ([`Throttle`]), the next pause ([`Backoff`]) and the soft `RLIMIT_NOFILE` when the platform
//! tells it ([`open_files_limit`]).

use std::time::{Duration, Instant};

use tokio::net::TcpStream;

/// The HTTP/2 connection preface: a connection that opens with its 24 bytes speaks h2c.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// How often a socket that sent part of the h2 preface is peeked again.
const PREFACE_POLL: Duration = Duration::from_millis(10);

/// How a connection opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// A byte that is not the h2 preface's arrived: HTTP/1.1, whose header timeout takes over.
    Http1,
    /// The whole h2 preface arrived: HTTP/2 with prior knowledge (h2c).
    Http2,
    /// Nothing decisive arrived within the header-read timeout.
    Silent,
    /// The client closed (or the socket failed) before sending anything decisive.
    Closed,
}

/// Wait until the client has sent enough for the protocol choice (one byte that is not the
/// start of the h2 preface, or the whole preface), at most `deadline`, and say which. The bytes
/// are peeked, not read: hyper's connection reads them as the start of its first request (or
/// its preface), so the connection is served by hyper's own HTTP/1.1 or HTTP/2 builder with no
/// rewinding layer under every later read. Without this wait a socket that never sends a byte
/// would be held open forever, since neither builder times out before the first byte.
pub async fn first_bytes(stream: &TcpStream, deadline: Duration) -> Opening {
    let wait = async {
        let mut buf = [0u8; H2_PREFACE.len()];
        loop {
            let n = match stream.peek(&mut buf).await {
                Ok(0) | Err(_) => return Opening::Closed,
                Ok(n) => n,
            };
            let seen = buf.get(..n).unwrap_or_default();
            if !H2_PREFACE.starts_with(seen) {
                return Opening::Http1;
            }
            if n == H2_PREFACE.len() {
                return Opening::Http2;
            }
            // Part of the h2 preface: peek returns at once while it sits there, so poll slowly.
            tokio::time::sleep(PREFACE_POLL).await;
        }
    };
    tokio::time::timeout(deadline, wait)
        .await
        .unwrap_or(Opening::Silent)
}

/// Lets a warning through at most once per `every`, counting what it held back.
#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    pub fn new(every: Duration) -> Throttle {
        Throttle {
            every,
            last: None,
            suppressed: 0,
        }
    }

    /// `Some(held back since the last one)` when a line may be logged now.
    pub fn due(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < self.every)
        {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// Exponential pause after accept errors (EMFILE, ENFILE, ENOBUFS): 10 ms doubling to 1 s,
/// back to the start after a successful accept.
#[derive(Debug, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_secs(1);

    pub fn next(&mut self) -> Duration {
        let pause = Self::FIRST.saturating_mul(1u32 << self.failures.min(7));
        self.failures = self.failures.saturating_add(1);
        pause.min(Self::MAX)
    }

    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// The soft limit on open files (`ulimit -n`), read from `/proc/self/limits`; `None` where
/// that file does not exist or says `unlimited`.
pub fn open_files_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The largest connection cap that leaves room for one upstream socket per client connection
/// plus `reserve` descriptors (admin listener, files, the runtime) under `limit`.
pub fn cap_for_fds(limit: u64, reserve: u64) -> usize {
    let cap = limit.saturating_sub(reserve) / 2;
    usize::try_from(cap).unwrap_or(usize::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_to_a_second_and_resets() {
        let mut backoff = Backoff::default();
        let pauses: Vec<_> = (0..10).map(|_| backoff.next().as_millis()).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        backoff.reset();
        assert_eq!(backoff.next(), Duration::from_millis(10));
    }

    #[test]
    fn the_throttle_lets_one_line_through_per_interval_and_counts_the_rest() {
        let mut throttle = Throttle::new(Duration::from_secs(3600));
        assert_eq!(throttle.due(), Some(0));
        assert_eq!((0..1000).filter_map(|_| throttle.due()).count(), 0);
        throttle.last = Some(Instant::now() - Duration::from_secs(3601));
        assert_eq!(throttle.due(), Some(1000));
    }

    #[test]
    fn the_fd_budget_leaves_room_for_upstream_sockets() {
        assert_eq!(cap_for_fds(1024, 128), 448);
        assert_eq!(cap_for_fds(100, 128), 1);
        assert!(open_files_limit().is_none_or(|n| n > 0));
    }
}
