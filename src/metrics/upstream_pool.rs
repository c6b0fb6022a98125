//! The upstream pools' counters (`tooltap_upstream_connections_*`): atomics the pools in
//! `upstream` update and the registry renders, kept here so the registry imports no
//! proxy code.

use std::sync::atomic::{AtomicU64, Ordering};

/// Why the pool closed a connection it held idle (`tooltap_upstream_connections_closed_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// Idle for `timeouts.pool_idle`.
    IdleTimeout,
    /// Handed back while `proxy.upstream_max_idle` were idle already.
    IdleCap,
    /// Found closed by the upstream while idle.
    Stale,
}

impl Closed {
    pub const ALL: [Closed; 3] = [Closed::IdleTimeout, Closed::IdleCap, Closed::Stale];

    pub fn as_str(self) -> &'static str {
        match self {
            Closed::IdleTimeout => "idle_timeout",
            Closed::IdleCap => "idle_cap",
            Closed::Stale => "stale",
        }
    }
}

/// The pool counters the metrics registry renders.
#[derive(Default)]
pub struct PoolCounters {
    pub opened: AtomicU64,
    pub reused: AtomicU64,
    pub idle: AtomicU64,
    pub closed: [AtomicU64; 3],
}

impl PoolCounters {
    /// Counts `count` idle connections closed for `why`.
    pub fn closed(&self, why: Closed, count: u64) {
        if count > 0 {
            let index = Closed::ALL.iter().position(|c| *c == why).unwrap_or(0);
            self.closed[index].fetch_add(count, Ordering::Relaxed);
        }
    }
}
