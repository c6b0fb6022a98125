//! The per-exchange context: one request/response pair's identity, created when the request
//! arrives and passed down through forwarding (and, in later issues, the tee and inspector).
//!
//! Input: the request head and the matched route. Output: an [`ExchangeCtx`] whose `id` is
//! unique across processes and hosts and short enough to grep: a prefix fixed at the first
//! exchange — base-36 Unix seconds, then six base-36 characters drawn from the OS's randomness —
//! plus a process-wide counter, e.g. `t6b2xq-k3z09a-42`. Ids sort by start time across processes
//! (the seconds come first) and by arrival within one; two processes that start in the same
//! second collide only if they also draw the same 31 random bits (about one in two billion).

use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The response header that names the exchange in logs, the violations file and recordings.
pub const EXCHANGE_HEADER: &str = "x-tooltap-exchange";

use http::Method;

use crate::engine::Dialect;

/// Unique across processes and hosts, and within one process even with several proxies in it
/// (as in the tests).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExchangeId(Arc<str>);

impl ExchangeId {
    pub fn next() -> ExchangeId {
        static PREFIX: OnceLock<String> = OnceLock::new();
        static COUNTER: AtomicU64 = AtomicU64::new(1);
        let prefix = PREFIX.get_or_init(|| {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            prefix(now.as_secs(), process_random(now.subsec_nanos()))
        });
        let number = COUNTER.fetch_add(1, Ordering::Relaxed);
        ExchangeId(Arc::from(join(prefix, number).as_str()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id's text, shared rather than copied (an exchange's label keeps it).
    pub fn shared(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }
}

impl fmt::Display for ExchangeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `<prefix>-<number>` on the stack: one allocation per id (the `Arc`), no formatting machinery.
fn join(prefix: &str, number: u64) -> IdText {
    let mut text = IdText {
        bytes: [0; ID_MAX],
        len: 0,
    };
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = number;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for part in [prefix.as_bytes(), b"-", &digits[at..]] {
        let end = (text.len + part.len()).min(ID_MAX);
        text.bytes[text.len..end].copy_from_slice(&part[..end - text.len]);
        text.len = end;
    }
    text
}

/// Longest id kept: the prefix is 14 characters today and a `u64` has at most 20 digits.
const ID_MAX: usize = 64;

/// An id's text before it moves into its `Arc`.
struct IdText {
    bytes: [u8; ID_MAX],
    len: usize,
}

impl IdText {
    fn as_str(&self) -> &str {
        // Only ASCII (base-36 digits, `t`, `-`, decimal digits) is ever written.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

/// `t<seconds>-<six random base-36 characters>`.
fn prefix(seconds: u64, random: u64) -> String {
    let random = base36(random % 36u64.pow(6));
    format!("t{}-{random:0>6}", base36(seconds))
}

/// 64 bits no other process draws: std's `RandomState` is keyed from the OS's randomness once
/// per process; the pid and the clock's nanoseconds are mixed in for good measure.
fn process_random(nanos: u32) -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u32(nanos);
    hasher.finish()
}

fn base36(mut value: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut reversed = Vec::new();
    loop {
        reversed.push(DIGITS[(value % 36) as usize]);
        value /= 36;
        if value == 0 {
            break;
        }
    }
    reversed.iter().rev().map(|&digit| digit as char).collect()
}

/// Who and what one exchange is. Cheap to clone (two `Arc`s and a small string).
#[derive(Debug, Clone)]
pub struct ExchangeCtx {
    pub id: ExchangeId,
    pub route: Arc<str>,
    pub started: Instant,
    pub method: Method,
    /// The client's path without the query: queries can carry credentials (`?key=`), and this
    /// value goes into logs.
    pub path: String,
    /// The dialect the exchange is judged as, decided once: the route's `dialect`, else the one
    /// the path names (the proxy), or the matched recording's (replay). `None`: no dialect names
    /// it, and it is not judged.
    pub dialect: Option<Dialect>,
}

impl ExchangeCtx {
    pub fn begin(
        route: Arc<str>,
        method: &Method,
        path: &str,
        dialect: Option<Dialect>,
    ) -> ExchangeCtx {
        ExchangeCtx {
            id: ExchangeId::next(),
            route,
            started: Instant::now(),
            method: method.clone(),
            path: path.to_owned(),
            dialect,
        }
    }

    /// The exchange's span, the one the proxy and the replay server open alike: `exchange`,
    /// with its id, route, method and path, and an empty `quirk` an injected quirk fills. At
    /// `info` when `at_info` (where the exchange's own lines need it), else at `debug`.
    pub fn span(&self, at_info: bool) -> tracing::Span {
        // A `tracing` level must be a constant where the span is made.
        macro_rules! exchange_span {
            ($level:expr, $ctx:expr) => {
                tracing::span!(
                    $level,
                    "exchange",
                    id = %$ctx.id,
                    route = %$ctx.route,
                    method = %$ctx.method,
                    path = %$ctx.path,
                    quirk = tracing::field::Empty,
                )
            };
        }
        if at_info {
            exchange_span!(tracing::Level::INFO, self)
        } else {
            exchange_span!(tracing::Level::DEBUG, self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_threads() {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| (0..500).map(|_| ExchangeId::next()).collect::<Vec<_>>())
            })
            .collect();
        let mut seen = HashSet::new();
        for handle in handles {
            for id in handle.join().expect("thread") {
                assert!(seen.insert(id.clone()), "duplicate id {id}");
                assert!(
                    id.as_str().starts_with('t') && id.as_str().len() < 28,
                    "{id}"
                );
            }
        }
    }

    #[test]
    fn prefixes_of_one_second_differ_by_their_random_part_and_sort_by_time() {
        let (a, b) = (process_random(7), process_random(7));
        assert_ne!(a, b, "each draw is keyed anew");
        assert_ne!(prefix(1_700_000_000, a), prefix(1_700_000_000, b));
        assert!(prefix(1_700_000_000, u64::MAX) < prefix(1_700_000_001, 0));
        assert_eq!(prefix(36, 0), "t10-000000");
    }

    #[test]
    fn ids_join_prefix_and_counter() {
        assert_eq!(join("t10-000000", 0).as_str(), "t10-000000-0");
        assert_eq!(join("t10-000000", 42).as_str(), "t10-000000-42");
        assert_eq!(
            join("tabc-zzzzzz", u64::MAX).as_str(),
            format!("tabc-zzzzzz-{}", u64::MAX)
        );
    }

    #[test]
    fn base36_round_numbers() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }
}
