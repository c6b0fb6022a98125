//! The report's conversation pass: the page's MCP exchanges settled through one conversation
//! store in the order `tooltap check` settles them ([`settle_in_order`]), so the page shows the
//! conversation rules (`engine::mcp_conversation::RULES`) `check` finds. Each such violation
//! is added to its exchange marked with the conversation it belongs to, and to that exchange's
//! row on the conversation's timeline.
//!
//! Input: the shown exchanges, each MCP one's [`Pending`] (its `index` the exchange's place in
//! the page) and its conversation [`Entry`]. Output: the violations added, and the bytes they
//! take (charged to the page budget by the caller). Bounded like any exchange's violations:
//! at most the engine's `max_violations` per exchange, the rest dropped as `check` counts them.

use std::collections::HashMap;

use super::mcp::Entry;
use super::model::{ExchangeView, ViolationView};
use crate::check::conversations::{Pending, settle_in_order};
use crate::engine::{EngineConfig, Severity};

/// The MCP exchanges of a page waiting for the conversation pass.
#[derive(Debug, Default)]
pub struct Waiting {
    pending: Vec<Pending>,
    /// The exchange's place in the page → its entry's place in `entries`.
    entry_of: HashMap<usize, usize>,
}

impl Waiting {
    /// Adds the MCP exchange shown at `exchange` (`pending` made with that index), whose
    /// conversation entry is at `entry`.
    pub fn add(&mut self, exchange: usize, pending: Option<Pending>, entry: usize) {
        if let Some(pending) = pending {
            self.pending.push(pending);
            self.entry_of.insert(exchange, entry);
        }
    }

    /// Settles them in order and adds each conversation verdict to its exchange and its
    /// entry; returns the bytes the added violations take.
    pub fn settle(
        self,
        exchanges: &mut [ExchangeView],
        entries: &mut [Entry],
        engine: &EngineConfig,
        docs_base: &str,
    ) -> u64 {
        let Waiting { pending, entry_of } = self;
        let mut added = 0u64;
        settle_in_order(pending, engine, |index, settled| {
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
