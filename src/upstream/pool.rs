//! The connections to one upstream (scheme, host, port): idle HTTP/1.1 connections kept for
//! reuse, one shared HTTP/2 connection when ALPN picked h2, and the bound on how many are open.
//!
//! Input: checkouts from [`super::UpstreamClient::send`] and HTTP/1.1 connections handed back by
//! [`super::body::ResponseBody`] when their exchange is done. Output: a connection ready for one
//! request. Bounds: at most `proxy.upstream_max_connections` open (each connection's task holds
//! a semaphore permit until the connection closes; a checkout at the cap waits up to
//! `timeouts.connect` for a connection to be handed back or closed, and is then refused); at most
//! `proxy.upstream_max_idle` idle (past it a handed-back connection is closed); an idle one is
//! closed after `timeouts.pool_idle` by a reaper task that runs only while the pool holds idle
//! connections. The idle list is a stack: the most recently used connection is reused first, so
//! the oldest ones expire.
//!
//! The pool's locks guard a push or a pop, never an await; they are taken by the request's own
//! task (checkout) and when a response body is dropped, never inside `poll_frame`.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::RequestBody;
use super::connect::{Target, connect};
use super::error::UpstreamError;
use crate::metrics::Metrics;
use crate::metrics::upstream_pool::{Closed, PoolCounters};

/// Response headers accepted from an upstream (hyper's default is 100, which some gateways
/// exceed; a direct client would get the answer, so tooltap must too). Bounded all the same, and
/// not higher: hyper allocates and fills this many header slots for every response it parses.
pub const UPSTREAM_MAX_HEADERS: usize = 256;
/// Bytes the upstream's response head may take (hyper's default is ~400 KiB, less than one
/// 500 KiB header). The read buffer grows to this only when a head needs it: reads are capped
/// at [`crate::read_cap::READ_CAP`], so a late reader does not grow it either.
pub const UPSTREAM_MAX_HEAD_BYTES: usize = 1024 * 1024;

/// What every pool of one client shares.
pub(super) struct Shared {
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_idle: usize,
    pub max_connections: usize,
    pub tls: TlsConnector,
    pub metrics: OnceLock<Arc<Metrics>>,
}

impl Shared {
    fn metrics(&self) -> Option<&Metrics> {
        self.metrics.get().map(Arc::as_ref)
    }
}

/// A connection checked out for one request.
pub(super) enum Conn {
    H1(http1::SendRequest<RequestBody>),
    H2(http2::SendRequest<RequestBody>),
}

/// A checked-out connection and whether it had served a request before.
pub(super) struct Checkout {
    pub conn: Conn,
    pub reused: bool,
}

struct Idle {
    sender: http1::SendRequest<RequestBody>,
    since: Instant,
}

struct IdleSet {
    /// Oldest first; reuse takes from the back.
    conns: VecDeque<Idle>,
    /// Whether a reaper task is running for this pool.
    reaping: bool,
}

pub struct Pool {
    target: Target,
    shared: Arc<Shared>,
    idle: Mutex<IdleSet>,
    h2: Mutex<Option<http2::SendRequest<RequestBody>>>,
    permits: Arc<Semaphore>,
    /// Signalled when a connection is handed back, for checkouts waiting at the cap.
    handed_back: Notify,
    me: Weak<Pool>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pool {
    pub(super) fn new(target: Target, shared: Arc<Shared>) -> Arc<Pool> {
        let permits = Arc::new(Semaphore::new(shared.max_connections));
        Arc::new_cyclic(|me| Pool {
            target,
            shared,
            idle: Mutex::new(IdleSet {
                conns: VecDeque::new(),
                reaping: false,
            }),
            h2: Mutex::new(None),
            permits,
            handed_back: Notify::new(),
            me: me.clone(),
        })
    }

    pub(super) fn target(&self) -> &Target {
        &self.target
    }

    fn counters(&self) -> Option<&PoolCounters> {
        self.shared.metrics().map(Metrics::upstream_pool)
    }

    /// A connection for one request: a pooled one unless `fresh`, else a new one, waiting at
    /// the cap (see the module doc).
    pub(super) async fn checkout(&self, fresh: bool) -> Result<Checkout, UpstreamError> {
        if !fresh && let Some(reused) = self.reuse() {
            return Ok(reused);
        }
        // Opening and waiting are boxed: inline, their futures would be most of every
        // request's service future, which hyper moves whole into its slot for each request,
        // while a request on a kept-alive connection (the common case) takes neither.
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Box::pin(self.open(permit)).await;
        }
        Box::pin(self.wait(fresh)).await
    }

    async fn wait(&self, fresh: bool) -> Result<Checkout, UpstreamError> {
        if let Some(metrics) = self.shared.metrics() {
            metrics.limit_hit("upstream_connections_max", "proxy");
        }
        let started = Instant::now();
        let deadline = started + self.shared.connect_timeout;
        loop {
            let handed_back = self.handed_back.notified();
            tokio::pin!(handed_back);
            handed_back.as_mut().enable();
            if !fresh && let Some(reused) = self.reuse() {
                return Ok(reused);
            }
            tokio::select! {
                () = &mut handed_back => {}
                permit = self.permits.clone().acquire_owned() => {
                    if let Ok(permit) = permit {
                        return self.open(permit).await;
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    if let Some(metrics) = self.shared.metrics() {
                        metrics.limit_hit("upstream_connections_wait_timeout", "proxy");
                    }
                    return Err(UpstreamError::Busy {
                        open: self.shared.max_connections,
                        waited: started.elapsed(),
                    });
                }
            }
        }
    }

    /// The shared HTTP/2 connection, or the most recently idle HTTP/1.1 one still usable.
    fn reuse(&self) -> Option<Checkout> {
        let conn = self
            .shared_h2()
            .map(Conn::H2)
            .or_else(|| self.take_idle().map(Conn::H1))?;
        if let Some(counters) = self.counters() {
            counters.reused.fetch_add(1, Ordering::Relaxed);
        }
        Some(Checkout { conn, reused: true })
    }

    fn shared_h2(&self) -> Option<http2::SendRequest<RequestBody>> {
        if !self.target.https {
            return None;
        }
        let mut slot = lock(&self.h2);
        match slot.as_ref() {
            Some(sender) if !sender.is_closed() => Some(sender.clone()),
            Some(_) => {
                *slot = None;
                None
            }
            None => None,
        }
    }

    fn take_idle(&self) -> Option<http1::SendRequest<RequestBody>> {
        let now = Instant::now();
        let (mut taken, mut stale, mut expired) = (0, 0, 0);
        let mut found = None;
        {
            let mut idle = lock(&self.idle);
            while let Some(conn) = idle.conns.pop_back() {
                taken += 1;
                if conn.since + self.shared.idle_timeout <= now {
                    expired += 1;
                } else if !conn.sender.is_ready() {
                    stale += 1;
                } else {
                    found = Some(conn.sender);
                    break;
                }
            }
        }
        if let Some(counters) = self.counters() {
            counters.idle.fetch_sub(taken, Ordering::Relaxed);
            counters.closed(Closed::Stale, stale);
            counters.closed(Closed::IdleTimeout, expired);
        }
        found
    }

    /// Hand back an HTTP/1.1 connection ready for its next request.
    pub(super) fn put_idle(&self, sender: http1::SendRequest<RequestBody>) {
        let start_reaper = {
            let mut idle = lock(&self.idle);
            if idle.conns.len() >= self.shared.max_idle {
                None
            } else {
                idle.conns.push_back(Idle {
                    sender,
                    since: Instant::now(),
                });
                Some(!std::mem::replace(&mut idle.reaping, true))
            }
        };
        let Some(start_reaper) = start_reaper else {
            if let Some(counters) = self.counters() {
                counters.closed(Closed::IdleCap, 1);
            }
            return;
        };
        if let Some(counters) = self.counters() {
            counters.idle.fetch_add(1, Ordering::Relaxed);
        }
        self.handed_back.notify_one();
        if start_reaper {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(reap(self.me.clone()));
                }
                // No runtime (its shutdown): nothing will be reused either.
                Err(_) => lock(&self.idle).reaping = false,
            }
        }
    }

    /// Close the idle connections past their time (and those the upstream closed); the next
    /// expiry, or `None` (and the reaper stops) when nothing is idle.
    fn expire(&self) -> Option<Instant> {
        let now = Instant::now();
        let (mut stale, mut expired) = (0, 0);
        let next = {
            let mut idle = lock(&self.idle);
            let timeout = self.shared.idle_timeout;
            idle.conns.retain(|conn| {
                if conn.since + timeout <= now {
                    expired += 1;
                    false
                } else if conn.sender.is_closed() {
                    stale += 1;
                    false
                } else {
                    true
                }
            });
            match idle.conns.front() {
                Some(oldest) => Some(oldest.since + timeout),
                None => {
                    idle.reaping = false;
                    None
                }
            }
        };
        if let Some(counters) = self.counters() {
            counters.idle.fetch_sub(stale + expired, Ordering::Relaxed);
            counters.closed(Closed::Stale, stale);
            counters.closed(Closed::IdleTimeout, expired);
        }
        next
    }

    /// Connect, handshake, and spawn the connection's task (which holds `permit` until the
    /// connection closes).
    async fn open(&self, permit: OwnedSemaphorePermit) -> Result<Checkout, UpstreamError> {
        let shared = &self.shared;
        let connected = connect(&self.target, shared.connect_timeout, &shared.tls).await?;
        if let Some(counters) = self.counters() {
            counters.opened.fetch_add(1, Ordering::Relaxed);
        }
        let io = TokioIo::new(connected.stream);
        let conn = if connected.h2 {
            let (sender, connection) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(io)
                .await
                .map_err(UpstreamError::Handshake)?;
            drive(connection, permit, "HTTP/2");
            *lock(&self.h2) = Some(sender.clone());
            Conn::H2(sender)
        } else {
            let (sender, connection) = http1::Builder::new()
                .max_headers(UPSTREAM_MAX_HEADERS)
                .max_buf_size(UPSTREAM_MAX_HEAD_BYTES)
                .handshake(io)
                .await
                .map_err(UpstreamError::Handshake)?;
            drive(connection, permit, "HTTP/1.1");
            Conn::H1(sender)
        };
        Ok(Checkout {
            conn,
            reused: false,
        })
    }
}

/// Run a connection's task, holding `permit` until the connection ends.
fn drive(
    connection: impl std::future::Future<Output = hyper::Result<()>> + Send + 'static,
    permit: OwnedSemaphorePermit,
    protocol: &'static str,
) {
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, protocol, "upstream connection ended");
        }
        drop(permit);
    });
}

/// The pool's reaper: closes idle connections as they expire, and ends when none is idle (or
/// the pool is gone).
async fn reap(pool: Weak<Pool>) {
    loop {
        let next = match pool.upgrade() {
            Some(pool) => pool.expire(),
            None => return,
        };
        match next {
            Some(at) => tokio::time::sleep_until(at).await,
            None => return,
        }
    }
}
