//! The live proxy's half of MCP conversation state: an MCP exchange's place in the settling
//! order, taken as it is admitted (a GET stream's when it ends), and its settlement once
//! the engine's report is ready, merged into that report before it is recorded and reported.
//!
//! Times are the recording's: the request head's wall-clock time to the microsecond (what the
//! recording's `started` keeps) plus the microseconds since, so `tooltap check` orders and
//! compares a recording of the same traffic with the same numbers.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::engine::Dialect;
use crate::engine::Report;
use crate::engine::mcp_conversation::observed::{Context, seen_of};
use crate::tap::tee::TapEnd;

use super::mcp_order::{McpSettle, Ticket};
use super::{ExchangeLabel, Inspection, RecordingSeed, RequestHead};

/// An MCP exchange on its way to settlement.
pub struct Turn {
    settle: Arc<McpSettle>,
    /// `None` for a GET stream, which takes its place when it ends.
    ticket: Option<Ticket>,
    start_us: u64,
    credential: u64,
}

/// The turn of an MCP exchange (`None` for other dialects, or with no store). Taken on the
/// request path, as the exchange is admitted: the order of the tickets is then the order the
/// requests came in, not the order their inspectors' tasks first ran.
pub(super) fn begin(
    shared: &Inspection,
    label: &ExchangeLabel,
    head: &RequestHead,
    seed: Option<&RecordingSeed>,
) -> Option<Turn> {
    if label.dialect != Dialect::Mcp {
        return None;
    }
    let settle = Arc::clone(shared.mcp.as_ref()?);
    let wall = seed.map_or_else(
        || SystemTime::now() - label.started.elapsed(),
        |seed| seed.started,
    );
    let micros = wall
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    let start_us = u64::try_from(micros).unwrap_or(u64::MAX);
    let get = head.method.as_ref() == Some(&http::Method::GET);
    let ticket = (!get).then(|| settle.ticket(start_us, &shared.metrics));
    Some(Turn {
        settle,
        ticket,
        start_us,
        credential: head.credential,
    })
}

/// Settles the exchange in its turn and merges its verdict into `report`.
pub(super) async fn settle(
    shared: &Inspection,
    label: &ExchangeLabel,
    turn: Turn,
    report: &mut Report,
    end: Option<&TapEnd>,
) {
    let Some(observation) = report.mcp.as_deref() else {
        return;
    };
    let ended = end.map_or_else(Instant::now, |end| end.at);
    let since = ended.saturating_duration_since(label.started).as_micros();
    let end_us = turn
        .start_us
        .saturating_add(u64::try_from(since).unwrap_or(u64::MAX));
    let seen = seen_of(
        observation,
        Context {
            upstream: &label.route,
            start_us: turn.start_us,
            end_us,
            credential: turn.credential,
        },
    );
    let ticket = match turn.ticket {
        Some(ticket) => ticket,
        None => turn.settle.ticket(seen.order_us(), &shared.metrics),
    };
    let metrics = &shared.metrics;
    let Some(settled) = turn
        .settle
        .settle(ticket, &shared.analysis, metrics, seen)
        .await
    else {
        return;
    };
    McpSettle::count(metrics, &label.route, &settled);
    settled.merge_into(
        &mut report.violations,
        &mut report.violations_not_listed,
        &mut report.notes,
        shared.engine.max_violations,
    );
}
