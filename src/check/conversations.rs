//! `tooltap check`'s MCP conversation pass: the recordings' MCP exchanges settled through one
//! [`ConversationStore`] in the order the live proxy settles them.
//!
//! Input: what [`super::judge`] kept of each MCP recording (its engine report's observation,
//! its route, `started` and end time, its exchange id). Output: each exchange's S-rule verdict,
//! merged into its [`Checked`] item. Order: `SeenOwned::order_us` (the request's start, a
//! GET stream's end, on the recording's clock: `started` to the millisecond plus `t_us`), then
//! the exchange id's number (ids count up as requests arrive), then input order. What the pass
//! holds is one observation per MCP recording, each bounded by the dialect's observation cap;
//! the store's view of one (`SeenOwned`, the messages rebuilt) is built only when its turn
//! comes, and dropped once it has settled.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use crate::engine::mcp_conversation::observed::{Context, seen_of};
use crate::engine::mcp_conversation::{ConversationStore, HttpMethod, Settled, StoreLimits};
use crate::engine::mcp_observation::McpObservation;
use crate::engine::{EngineConfig, Report, SchemaCache};
use crate::record::Recording;

use super::checked::{Checked, Item};

/// What the pass takes from a recording besides its observation: its route, its times on the
/// recording's clock, its credential's digest and its id's number.
#[derive(Debug, Clone)]
pub struct Stamp {
    upstream: String,
    start_us: u64,
    end_us: u64,
    credential: u64,
    id_number: u64,
}

impl Stamp {
    pub fn of(recording: &Recording) -> Stamp {
        let meta = &recording.meta;
        let start_us = humantime::parse_rfc3339_weak(&meta.started)
            .ok()
            .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |since| {
                u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
            });
        let end_us = recording
            .end
            .as_ref()
            .map(|end| end.t_us)
            .or_else(|| recording.frames.last().map(|frame| frame.t_us))
            .unwrap_or(0);
        let id_number = meta
            .id
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(u64::MAX);
        Stamp {
            upstream: meta.route.clone(),
            start_us,
            end_us: start_us.saturating_add(end_us),
            credential: crate::redact::credential_key(meta.credential.as_deref()),
            id_number,
        }
    }

    /// The exchange at `index`, waiting with its observation.
    pub fn pending(self, index: usize, observation: Box<McpObservation>) -> Pending {
        let method = observation.method.as_deref().unwrap_or("POST");
        let get = HttpMethod::from_name(method) == HttpMethod::Get;
        Pending {
            index,
            order_us: if get { self.end_us } else { self.start_us },
            stamp: self,
            observation,
        }
    }
}

/// One MCP exchange waiting for its turn: its observation as the engine kept it (the store's
/// view of it is built when its turn comes, one exchange at a time).
#[derive(Debug)]
pub struct Pending {
    /// Its place among the items of the run (`tooltap report`: among the page's exchanges).
    pub index: usize,
    /// Where it goes in the settling order: its request's start, a GET stream's end (as
    /// `SeenOwned::order_us`).
    order_us: u64,
    stamp: Stamp,
    observation: Box<McpObservation>,
}

impl Pending {
    /// What the pass needs of an MCP recording and its report (`None` for other dialects).
    pub fn of(index: usize, recording: &Recording, report: &Report) -> Option<Pending> {
        let observation = report.mcp.clone()?;
        Some(Stamp::of(recording).pending(index, observation))
    }

    /// Settles it through `store`.
    fn settle(self, store: &mut ConversationStore) -> Settled {
        let Pending {
            stamp, observation, ..
        } = self;
        let seen = seen_of(
            &observation,
            Context {
                upstream: &stamp.upstream,
                start_us: stamp.start_us,
                end_us: stamp.end_us,
                credential: stamp.credential,
            },
        );
        drop(observation);
        store.settle(&seen.seen())
    }
}

/// Settles every pending exchange in order and merges each verdict into its item.
pub fn settle_all(items: &mut [Item], pending: Vec<Pending>, engine: &EngineConfig) {
    settle_in_order(
        pending,
        engine,
        &Arc::new(SchemaCache::default()),
        |index, settled| {
            if let Some(Item::Checked(checked)) = items.get_mut(index) {
                let Checked { violations, .. } = &mut **checked;
                let mut not_listed = 0;
                let mut notes = Vec::new();
                settled.merge_into(
                    violations,
                    &mut not_listed,
                    &mut notes,
                    engine.max_violations,
                );
            }
        },
    );
}

/// Settles every pending exchange through one store in order (see the module doc) and hands
/// each verdict to `each` with the exchange's `index`. `tooltap check` and `tooltap report`
/// both settle this way, so they show the same conversation verdicts.
pub fn settle_in_order(
    mut pending: Vec<Pending>,
    engine: &EngineConfig,
    cache: &Arc<SchemaCache>,
    mut each: impl FnMut(usize, Settled),
) {
    if pending.is_empty() {
        return;
    }
    pending.sort_by_key(|p| (p.order_us, p.stamp.id_number, p.index));
    let mut store = ConversationStore::new(
        StoreLimits::default(),
        Arc::clone(cache),
        engine.severity.clone(),
        engine.max_violations,
    );
    for pending in pending {
        let index = pending.index;
        each(index, pending.settle(&mut store));
    }
}

/// The engine's report of one recording, as `tooltap check` makes it.
pub fn engine_report(
    recording: &Recording,
    engine: &Arc<EngineConfig>,
    cache: &SchemaCache,
) -> Report {
    super::checked::engine_report(recording, engine, cache)
}

/// Each recording's violations: its report's (`reports[i]` is `recordings[i]`'s), then what
/// the MCP exchanges' conversation settles add, settled through one store in order as
/// `tooltap check` settles them. What a property test drives the store with, offline.
pub fn settled_in_order(
    recordings: &[Recording],
    reports: &[Report],
    engine: &EngineConfig,
) -> Vec<Vec<crate::engine::Violation>> {
    let mut pending = Vec::new();
    let mut found: Vec<Vec<crate::engine::Violation>> = recordings
        .iter()
        .zip(reports)
        .enumerate()
        .map(|(index, (recording, report))| {
            pending.extend(Pending::of(index, recording, report));
            report.violations.clone()
        })
        .collect();
    settle_in_order(
        pending,
        engine,
        &Arc::new(SchemaCache::default()),
        |index, settled| {
            if let Some(violations) = found.get_mut(index) {
                settled.merge_into(violations, &mut 0, &mut Vec::new(), engine.max_violations);
            }
        },
    );
    found
}
