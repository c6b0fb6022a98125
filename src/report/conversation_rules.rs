//! The report's conversation pass: the page's MCP exchanges settled through one conversation
//! store in the order `tooltap check` settles them ([`settle_in_order`]), sharing the page's
//! schema cache (a catalog the exchanges' judging compiled is not compiled again), so the page shows the
//! conversation rules (`engine::mcp_conversation::RULES`) `check` finds. Each such violation
//! is added to its exchange marked with the conversation it belongs to, and to that exchange's
//! row on the conversation's timeline.
//!
//! Input: the shown exchanges, each MCP one's observation (held as a [`Pending`], its `index`
//! the exchange's place in the page) and its conversation [`Entry`]. Output: the violations
//! added, and the bytes they take (charged to the page budget by the caller). Bounded like any
//! exchange's violations: at most the engine's `max_violations` per exchange, the rest dropped
//! as `check` counts them. What waits is bounded by the page budget: each held observation is
//! charged to it (its JSON size) until the pass, with the page's data; past it, or once the
//! budget leaves an MCP exchange out (its conversation would be settled without it), the page
//! holds none and judges no conversation rule, and says how many exchanges that left unjudged.

use std::collections::HashMap;
use std::sync::Arc;

use super::PageCut;
use super::mcp::Entry;
use super::model::{ExchangeView, ViolationView};
use crate::check::conversations::{Pending, Stamp, settle_in_order};
use crate::engine::mcp_observation::McpObservation;
use crate::engine::{EngineConfig, SchemaCache, Severity};

/// The MCP exchanges of a page waiting for the conversation pass.
#[derive(Debug, Default)]
pub struct Waiting {
    pending: Vec<Pending>,
    /// The exchange's place in the page → its entry's place in `entries`.
    entry_of: HashMap<usize, usize>,
    /// The held observations would have passed the page budget: none is held any more and
    /// no conversation rule is judged on this page.
    given_up: bool,
}

impl Waiting {
    /// Adds the MCP exchange shown at `exchange`, whose conversation entry is at `entry`, with
    /// its observation: held until the pass, its weight (its JSON) charged to the page budget
    /// while held (`cut.held`). When it does not fit, every held observation is dropped, and
    /// each MCP exchange shown is counted in `cut.conversations_unjudged`, this and every later
    /// one too: a conversation settled without some of its exchanges would be judged wrong.
    pub fn add(
        &mut self,
        exchange: usize,
        stamp: Stamp,
        observation: Option<Box<McpObservation>>,
        entry: usize,
        cut: &mut PageCut,
    ) {
        let Some(observation) = observation else {
            return;
        };
        if !self.given_up {
            let weight = super::bound::json_size(&*observation);
            if cut.used + cut.held + weight <= cut.budget {
                cut.held += weight;
                cut.most_held = cut.most_held.max(cut.held);
                self.pending.push(stamp.pending(exchange, observation));
                self.entry_of.insert(exchange, entry);
                return;
            }
            self.give_up(cut);
        }
        cut.conversations_unjudged += 1;
    }

    /// An MCP exchange the page budget left out: the conversation pass would settle its
    /// conversation without it, so none is judged (the held ones are counted, and let go).
    pub fn left_out(&mut self, cut: &mut PageCut) {
        if !self.given_up {
            self.give_up(cut);
        }
    }

    fn give_up(&mut self, cut: &mut PageCut) {
        self.given_up = true;
        cut.conversations_unjudged += self.pending.len();
        cut.held = 0;
        self.pending = Vec::new();
        self.entry_of = HashMap::new();
    }

    /// Settles them in order and adds each conversation verdict to its exchange and its
    /// entry; returns the bytes the added violations take.
    pub fn settle(
        self,
        exchanges: &mut [ExchangeView],
        entries: &mut [Entry],
        engine: &EngineConfig,
        cache: &Arc<SchemaCache>,
        docs_base: &str,
    ) -> u64 {
        let Waiting {
            pending, entry_of, ..
        } = self;
        let mut added = 0u64;
        settle_in_order(pending, engine, cache, |index, settled| {
            let entry = entry_of.get(&index).and_then(|at| entries.get_mut(*at));
            let (Some(view), Some(entry)) = (exchanges.get_mut(index), entry) else {
                return;
            };
            let mut found = Vec::new();
            let room = engine.max_violations.saturating_sub(view.violations.len());
            settled.merge_into(&mut found, &mut 0, &mut Vec::new(), room);
            for violation in found {
                entry.add_rule(
                    violation.rule.as_str(),
                    violation.severity == Severity::Error,
                );
                let shown = ViolationView {
                    doc: format!("{docs_base}{}", violation.rule.docs_anchor()),
                    violation,
                    conversation: Some(entry.mark()),
                };
                added += super::bound::json_size(&shown) + 1;
                view.violations.push(shown);
            }
        });
        added
    }
}
