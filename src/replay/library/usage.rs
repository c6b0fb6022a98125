//! What a replay server's recordings were used for: hits per recording, misses per cassette, and
//! the recordings no request ever matched (a fixture whose test is gone or no longer sends it).
//!
//! Input: the counters [`Library::next_for_sent`] keeps (an atomic per recording and per
//! cassette, one for requests without a cassette) and, for cassettes no recording belongs to,
//! a map bounded at [`MAX_UNKNOWN_CASSETTES`] names (later names are counted in
//! `unknown_cassettes_left_out`): so the table grows with the recordings, not with traffic.
//! Output: a [`Usage`], served as JSON on `GET /__tooltap/usage` and logged at exit; a recording
//! captured while serving (`--on-miss forward`) is never listed as unused.

use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use serde::Serialize;

use super::{Cassette, Library, natural_cmp};

/// The most cassettes without recordings whose misses are counted by name.
pub const MAX_UNKNOWN_CASSETTES: usize = 1024;

/// Misses of requests naming cassettes no recording belongs to.
#[derive(Debug, Default)]
pub(super) struct UnknownCassettes {
    misses: BTreeMap<String, u64>,
    left_out: u64,
}

/// The whole server's usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub recordings: usize,
    pub hits: u64,
    pub misses: u64,
    /// Recordings no request matched (captured ones aside).
    pub unused: usize,
    /// By cassette: `null` first (recordings without a cassette, requests without the header),
    /// then by name; cassettes without recordings appear when they missed.
    pub cassettes: Vec<CassetteUsage>,
    /// Misses of cassettes without recordings past the first [`MAX_UNKNOWN_CASSETTES`] names.
    pub unknown_cassettes_left_out: u64,
}

/// One cassette's usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CassetteUsage {
    pub cassette: Option<String>,
    pub recordings: usize,
    pub hits: u64,
    pub misses: u64,
    /// The names of its recordings no request matched, in natural order.
    pub unused: Vec<String>,
}

impl CassetteUsage {
    fn empty(cassette: Option<String>) -> CassetteUsage {
        CassetteUsage {
            cassette,
            recordings: 0,
            hits: 0,
            misses: 0,
            unused: Vec::new(),
        }
    }
}

impl UnknownCassettes {
    fn count(&mut self, name: &str) {
        if let Some(misses) = self.misses.get_mut(name) {
            *misses += 1;
        } else if self.misses.len() < MAX_UNKNOWN_CASSETTES {
            self.misses.insert(name.to_owned(), 1);
        } else {
            self.left_out += 1;
        }
    }
}

impl Library {
    /// Counts a miss against the request's cassette (`found` when it has recordings).
    pub(super) fn count_miss(&self, cassette: Option<&str>, found: Option<&Cassette>) {
        match (cassette, found) {
            (None, _) => {
                self.unscoped_misses.fetch_add(1, Ordering::Relaxed);
            }
            (Some(_), Some(found)) => {
                found.misses.fetch_add(1, Ordering::Relaxed);
            }
            (Some(name), None) => self
                .unknown
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .count(name),
        }
    }

    /// Hits, misses and unused recordings so far, by cassette.
    pub fn usage(&self) -> Usage {
        let mut by_cassette: BTreeMap<Option<String>, CassetteUsage> = BTreeMap::new();
        for entry in &self.entries {
            let usage = group(
                &mut by_cassette,
                entry.cassette.as_deref().map(str::to_owned),
            );
            let hits = entry.hits.load(Ordering::Relaxed);
            usage.recordings += 1;
            usage.hits += hits;
            if hits == 0 && !entry.captured {
                usage.unused.push(entry.name.clone());
            }
        }
        for (name, cassette) in &self.cassettes {
            group(&mut by_cassette, Some(name.to_string())).misses +=
                cassette.misses.load(Ordering::Relaxed);
        }
        let unscoped = self.unscoped_misses.load(Ordering::Relaxed);
        if unscoped > 0 {
            group(&mut by_cassette, None).misses += unscoped;
        }
        let unknown = self.unknown.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, misses) in &unknown.misses {
            group(&mut by_cassette, Some(name.clone())).misses += misses;
        }
        let left_out = unknown.left_out;
        drop(unknown);
        let mut cassettes: Vec<CassetteUsage> = by_cassette.into_values().collect();
        for usage in &mut cassettes {
            usage.unused.sort_by(|a, b| natural_cmp(a, b));
        }
        Usage {
            recordings: self.entries.len(),
            hits: cassettes.iter().map(|c| c.hits).sum(),
            misses: cassettes.iter().map(|c| c.misses).sum::<u64>() + left_out,
            unused: cassettes.iter().map(|c| c.unused.len()).sum(),
            cassettes,
            unknown_cassettes_left_out: left_out,
        }
    }
}

fn group(
    by_cassette: &mut BTreeMap<Option<String>, CassetteUsage>,
    cassette: Option<String>,
) -> &mut CassetteUsage {
    by_cassette
        .entry(cassette.clone())
        .or_insert_with(|| CassetteUsage::empty(cassette))
}
