//! Settles MCP exchanges in the order their requests started, live: [`McpSettle`].
//!
//! Input: each MCP exchange takes a [`Ticket`] as it is admitted, on the request path, so that
//! the tickets follow the order the requests came in (a GET stream takes one when it ends, so
//! that a stream open for the whole session never holds the others back); its inspector, once
//! the engine report is ready, awaits its turn and settles the exchange in the shared
//! [`ConversationStore`]. Output: the exchange's S-rule verdict.
//!
//! The store's lock is taken on the analysis pool, never on the client path and never across an
//! await; the order's lock, taken for a ticket, guards an insert or a removal. Bounds: at most
//! `inspect.mcp.pending` tickets wait in the order (past it an exchange settles unordered,
//! counted), and no exchange waits longer than `inspect.mcp.settle_wait` for those before it:
//! a hung exchange is then passed over (counted, settled late when it ends), so it cannot
//! stall the store.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::engine::mcp_conversation::{ConversationStore, SeenOwned, Settled};
use crate::metrics::Metrics;
use crate::redact::Redactor;

use super::AnalysisPool;

/// The place of an exchange in the order: its order time (µs, [`SeenOwned::order_us`], the
/// numbers `tooltap check` sorts by), then who came first.
type Place = (u64, u64);

#[derive(Debug, Default)]
struct Order {
    next: u64,
    /// Tickets that block the ones after them.
    waiting: BTreeSet<Place>,
}

/// The live store and its order; one per proxy, shared by every inspector.
pub struct McpSettle {
    store: Arc<Mutex<ConversationStore>>,
    order: Mutex<Order>,
    turn: Notify,
    max_pending: usize,
    settle_wait: Duration,
    /// Names the credential headers whose digest keys 2026-07-28 conversations: the recorder's
    /// redaction settings, so the live key and `tooltap check`'s (from the recording's
    /// `credential`) come from the same headers.
    credentials: Redactor,
}

/// An exchange's place in the order; dropping it (settled, or the inspection ended early)
/// lets the next one go.
pub struct Ticket {
    place: Option<Place>,
    owner: Arc<McpSettle>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(place) = self.place.take() {
            self.owner.lock_order().waiting.remove(&place);
            self.owner.turn.notify_waiters();
        }
    }
}

impl McpSettle {
    pub fn new(store: ConversationStore, max_pending: usize, settle_wait: Duration) -> McpSettle {
        McpSettle {
            store: Arc::new(Mutex::new(store)),
            order: Mutex::new(Order::default()),
            turn: Notify::new(),
            max_pending: max_pending.max(1),
            settle_wait,
            credentials: Redactor::default(),
        }
    }

    /// The live store for these settings, its schemas compiled through `schemas`, credentials
    /// named by `credentials` (the recorder's redactor).
    pub fn for_settings(
        settings: crate::config::mcp_state::McpStateSettings,
        schemas: Arc<crate::engine::SchemaCache>,
        severity: crate::engine::SeverityOverrides,
        max_violations: usize,
        credentials: Redactor,
    ) -> Arc<McpSettle> {
        let store = ConversationStore::new(settings.limits, schemas, severity, max_violations);
        let mut settle = McpSettle::new(store, settings.pending, settings.settle_wait);
        settle.credentials = credentials;
        Arc::new(settle)
    }

    /// The conversation store's credential key of a request: the first 64 bits of the digest
    /// its recording keeps as `credential` (`0` without a credential header).
    pub fn credential_key(&self, headers: &http::HeaderMap) -> u64 {
        crate::redact::credential_key(self.credentials.credential_digest(headers).as_deref())
    }

    fn lock_order(&self) -> MutexGuard<'_, Order> {
        self.order.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place in the order at `at_us`; unordered (counted) when `inspect.mcp.pending` wait
    /// already.
    pub fn ticket(self: &Arc<Self>, at_us: u64, metrics: &Metrics) -> Ticket {
        let mut order = self.lock_order();
        let place = if order.waiting.len() >= self.max_pending {
            metrics.limit_hits("mcp_pending", "inspect", 1);
            None
        } else {
            let place = (at_us, order.next);
            order.next += 1;
            order.waiting.insert(place);
            Some(place)
        };
        drop(order);
        Ticket {
            place,
            owner: Arc::clone(self),
        }
    }

    /// Waits until no earlier ticket waits (at most `inspect.mcp.settle_wait`, after which the
    /// earlier ones are passed over), then settles `seen` on the analysis pool.
    pub async fn settle(
        &self,
        ticket: Ticket,
        pool: &AnalysisPool,
        metrics: &Metrics,
        seen: SeenOwned,
    ) -> Option<Settled> {
        if let Some(place) = ticket.place {
            self.wait_turn(place, metrics).await;
        }
        let store = Arc::clone(&self.store);
        let settled = pool
            .run(move || {
                store
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .settle(&seen.seen())
            })
            .await;
        drop(ticket);
        settled
    }

    /// Counts what settling cut and left unjudged.
    pub fn count(metrics: &Metrics, route: &str, settled: &Settled) {
        let cuts = settled.cuts;
        metrics.limit_hits("mcp_conversations", "inspect", cuts.conversations_evicted);
        metrics.limit_hits("mcp_catalog_bytes", "inspect", cuts.catalogs_too_large);
        metrics.limit_hits("mcp_ids", "inspect", cuts.ids_evicted);
        for why in &settled.unjudged {
            metrics.mcp_unjudged(route, why.as_str());
        }
    }

    async fn wait_turn(&self, place: Place, metrics: &Metrics) {
        let deadline = tokio::time::Instant::now() + self.settle_wait;
        loop {
            let turn = self.turn.notified();
            tokio::pin!(turn);
            turn.as_mut().enable();
            if self.lock_order().waiting.range(..place).next().is_none() {
                return;
            }
            if tokio::time::timeout_at(deadline, turn).await.is_err() {
                // Those before this one are passed over: they no longer block anyone.
                let mut order = self.lock_order();
                let passed: Vec<Place> = order.waiting.range(..place).copied().collect();
                for earlier in &passed {
                    order.waiting.remove(earlier);
                }
                drop(order);
                metrics.limit_hits("mcp_settle_wait", "inspect", passed.len() as u64);
                self.turn.notify_waiters();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::mcp_conversation::{HttpMethod, MsgOwned, StoreLimits};
    use crate::engine::{SchemaCache, SeverityOverrides};
    use serde_json::json;

    fn settle_with(wait: Duration) -> Arc<McpSettle> {
        let store = ConversationStore::new(
            StoreLimits::default(),
            Arc::new(SchemaCache::default()),
            SeverityOverrides::default(),
            100,
        );
        Arc::new(McpSettle::new(store, 16, wait))
    }

    fn exchange(start_us: u64, initialize: bool) -> SeenOwned {
        let (sent, received) = if initialize {
            (
                json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}),
                vec![
                    json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}),
                ],
            )
        } else {
            (json!({"jsonrpc":"2.0","id":1,"method":"ping"}), vec![])
        };
        let msg = |value| MsgOwned {
            value,
            path: String::new(),
            seq: None,
            event_id: None,
        };
        SeenOwned {
            upstream: "u".into(),
            method: HttpMethod::Post,
            status: 200,
            start_us,
            end_us: start_us + 1,
            request_session: None,
            response_session: initialize.then(|| "s".to_owned()),
            protocol_header: None,
            credential: 0,
            resumed: false,
            last_event_id: None,
            param_headers: Vec::new(),
            sent: vec![msg(sent)],
            received: received.into_iter().map(msg).collect(),
            whole: true,
        }
    }

    fn rules(settled: Option<Settled>) -> Vec<&'static str> {
        settled
            .map(|s| s.violations.iter().map(|v| v.rule.as_str()).collect())
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn a_later_exchange_that_ends_first_waits_for_the_earlier_one() {
        let settle = settle_with(Duration::from_secs(30));
        let pool = AnalysisPool::new(1);
        let metrics = Arc::new(Metrics::default());
        let first = settle.ticket(1, &metrics);
        let second = settle.ticket(2, &metrics);
        let later = tokio::spawn({
            let (settle, pool, metrics) = (Arc::clone(&settle), pool.clone(), Arc::clone(&metrics));
            async move {
                settle
                    .settle(second, &pool, &metrics, exchange(2, false))
                    .await
            }
        });
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(
            !later.is_finished(),
            "it settled before the exchange that started first"
        );
        let settled = settle
            .settle(first, &pool, &metrics, exchange(1, true))
            .await;
        assert!(rules(settled).is_empty());
        let later = tokio::time::timeout(Duration::from_secs(10), later)
            .await
            .expect("settled once the first was")
            .expect("no panic");
        // Only the initialize settled first makes this a request without the minted id.
        assert_eq!(rules(later), ["mcp.session.id_missing_on_request"]);
    }

    #[tokio::test]
    async fn a_hung_exchange_is_passed_over_once_not_by_everyone() {
        let settle = settle_with(Duration::from_millis(300));
        let pool = AnalysisPool::new(1);
        let metrics = Metrics::default();
        let _hung = settle.ticket(1, &metrics);
        let second = settle.ticket(2, &metrics);
        let waited = std::time::Instant::now();
        let settled = tokio::time::timeout(
            Duration::from_secs(10),
            settle.settle(second, &pool, &metrics, exchange(2, false)),
        )
        .await
        .expect("the wait is bounded");
        assert!(settled.is_some());
        assert!(waited.elapsed() >= Duration::from_millis(300));
        assert!(metrics.render().contains("limit=\"mcp_settle_wait\""));
        let third = settle.ticket(3, &metrics);
        let quick = std::time::Instant::now();
        settle
            .settle(third, &pool, &metrics, exchange(3, false))
            .await;
        assert!(
            quick.elapsed() < Duration::from_millis(250),
            "{:?}",
            quick.elapsed()
        );
    }

    #[tokio::test]
    async fn past_the_pending_bound_exchanges_settle_unordered() {
        let store = ConversationStore::new(
            StoreLimits::default(),
            Arc::new(SchemaCache::default()),
            SeverityOverrides::default(),
            100,
        );
        let settle = Arc::new(McpSettle::new(store, 2, Duration::from_secs(30)));
        let pool = AnalysisPool::new(1);
        let metrics = Metrics::default();
        let _a = settle.ticket(1, &metrics);
        let _b = settle.ticket(1, &metrics);
        let c = settle.ticket(2, &metrics);
        assert!(c.place.is_none());
        let settled = tokio::time::timeout(
            Duration::from_secs(10),
            settle.settle(c, &pool, &metrics, exchange(3, false)),
        )
        .await
        .expect("not held back by the two before it");
        assert!(settled.is_some());
        assert!(metrics.render().contains("limit=\"mcp_pending\""));
    }

    #[test]
    fn what_settling_cut_and_left_unjudged_is_counted() {
        use crate::engine::mcp_conversation::{Cuts, Unjudged};
        let metrics = Metrics::default();
        let settled = Settled {
            cuts: Cuts {
                conversations_evicted: 2,
                catalogs_too_large: 1,
                ids_evicted: 3,
            },
            unjudged: vec![Unjudged::NoCatalog],
            ..Settled::default()
        };
        McpSettle::count(&metrics, "default", &settled);
        let text = metrics.render();
        for line in [
            "tooltap_limit_hits_total{limit=\"mcp_conversations\",scope=\"inspect\"} 2",
            "tooltap_limit_hits_total{limit=\"mcp_catalog_bytes\",scope=\"inspect\"} 1",
            "tooltap_limit_hits_total{limit=\"mcp_ids\",scope=\"inspect\"} 3",
            "tooltap_mcp_unjudged_total{route=\"default\",reason=\"no_catalog\"} 1",
        ] {
            assert!(text.contains(line), "{line} not in {text}");
        }
    }

    /// Resident memory of the conversation store per conversation (debug build), with
    /// minted session ids: run with `--ignored --nocapture`; the figure is in
    /// docs/reliability.md. Here, not in the engine, because it reads `/proc`.
    #[test]
    #[ignore]
    fn measure_memory_per_conversation() {
        fn rss_kib() -> u64 {
            let text = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
            let pages: u64 = text
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            pages * 4
        }
        for cap in [1_000usize, 100_000] {
            let mut store = ConversationStore::new(
                StoreLimits {
                    max_conversations: cap,
                    ..StoreLimits::default()
                },
                Arc::new(SchemaCache::default()),
                SeverityOverrides::default(),
                100,
            );
            let before = rss_kib();
            let started = std::time::Instant::now();
            for k in 0..200_000u64 {
                let mut seen = exchange(k, false);
                seen.request_session = Some(format!("attacker-{k}"));
                store.settle(&seen.seen());
            }
            println!(
                "cap {cap}: {} kept, +{} KiB resident, {:?} for 200,000 exchanges",
                store.len(),
                rss_kib().saturating_sub(before),
                started.elapsed()
            );
        }
    }
}
