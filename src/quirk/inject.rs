//! Which quirks to inject into which live exchange: `--inject ID[:RATE][,...]` and its seed.
//!
//! Input: the `--inject` text (or a route's `inject` config key) and `--inject-seed`. Output:
//! an [`InjectPlan`] that, per exchange, draws which quirks apply. The draw is deterministic:
//! the n-th exchange a plan sees gets the same quirks for the same seed (splitmix64 over seed,
//! n and the quirk's position), so a failing run can be reproduced.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::catalogue::{QuirkId, UnknownQuirk};

/// One `ID[:RATE]` item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InjectSpec {
    pub quirk: QuirkId,
    /// Probability in 0..=1 that an exchange gets the quirk; 1 when not given.
    pub rate: f64,
}

/// A malformed `--inject` or `--quirk` list.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InjectError {
    #[error(transparent)]
    Unknown(#[from] UnknownQuirk),
    #[error("bad rate {0:?} in the quirk list: use a number from 0 to 1, e.g. args-as-object:0.25")]
    Rate(String),
    #[error("the quirk list is empty")]
    Empty,
}

/// `ID,ID,...` as quirks (for `replay --quirk`).
pub fn parse_quirk_list(text: &str) -> Result<Vec<QuirkId>, InjectError> {
    let quirks = items(text)
        .map(str::parse)
        .collect::<Result<Vec<QuirkId>, UnknownQuirk>>()?;
    if quirks.is_empty() {
        return Err(InjectError::Empty);
    }
    Ok(quirks)
}

fn items(text: &str) -> impl Iterator<Item = &str> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

/// `ID[:RATE],...` as specs (for `proxy --inject` and `[routes.X] inject`).
pub fn parse_inject(text: &str) -> Result<Vec<InjectSpec>, InjectError> {
    let mut specs = Vec::new();
    for item in items(text) {
        let (id, rate) = match item.split_once(':') {
            Some((id, rate)) => {
                let parsed = rate.trim().parse::<f64>().ok();
                match parsed.filter(|r| (0.0..=1.0).contains(r)) {
                    Some(rate) => (id, rate),
                    None => return Err(InjectError::Rate(rate.to_owned())),
                }
            }
            None => (item, 1.0),
        };
        specs.push(InjectSpec {
            quirk: id.parse()?,
            rate,
        });
    }
    if specs.is_empty() {
        return Err(InjectError::Empty);
    }
    Ok(specs)
}

/// The quirks of one route and the deterministic draw over its exchanges.
#[derive(Debug)]
pub struct InjectPlan {
    specs: Vec<InjectSpec>,
    seed: u64,
    next: AtomicU64,
}

impl InjectPlan {
    pub fn new(specs: Vec<InjectSpec>, seed: u64) -> InjectPlan {
        InjectPlan {
            specs,
            seed,
            next: AtomicU64::new(0),
        }
    }

    pub fn specs(&self) -> &[InjectSpec] {
        &self.specs
    }

    /// The quirks for the next exchange (possibly none).
    pub fn draw(&self) -> Vec<QuirkId> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.specs
            .iter()
            .enumerate()
            .filter(|(position, spec)| {
                let mixed =
                    splitmix64(self.seed ^ splitmix64(n) ^ splitmix64(*position as u64 + 1));
                // 53 random bits as a float in [0, 1).
                ((mixed >> 11) as f64 / (1u64 << 53) as f64) < spec.rate
            })
            .map(|(_, spec)| spec.quirk)
            .collect()
    }
}

/// Bytes a live quirk may hold by default (an event cut across frames, a buffered body).
pub const DEFAULT_MAX_HOLD: usize = 1024 * 1024;

/// The validated `[inject]` settings: a plan for every route, or one per route.
#[derive(Debug, Clone, Default)]
pub struct InjectSettings {
    seed: u64,
    pub max_hold: usize,
    default: Option<Arc<InjectPlan>>,
    routes: HashMap<String, Option<Arc<InjectPlan>>>,
}

impl InjectSettings {
    pub fn new(seed: Option<u64>, max_hold: Option<usize>) -> InjectSettings {
        InjectSettings {
            seed: seed.unwrap_or(0),
            max_hold: max_hold.unwrap_or(DEFAULT_MAX_HOLD),
            default: None,
            routes: HashMap::new(),
        }
    }

    /// `inject.quirks` / `--inject`: every route without its own list.
    pub fn set_default(&mut self, list: &str) -> Result<(), InjectError> {
        self.default = Some(Arc::new(InjectPlan::new(parse_inject(list)?, self.seed)));
        Ok(())
    }

    /// `[[routes]] inject`: this route's own list; `""` injects nothing on it.
    pub fn set_route(&mut self, route: &str, list: &str) -> Result<(), InjectError> {
        let plan = match list.trim() {
            "" => None,
            list => Some(Arc::new(InjectPlan::new(parse_inject(list)?, self.seed))),
        };
        self.routes.insert(route.to_owned(), plan);
        Ok(())
    }

    /// The plan for `route`, if anything is injected there.
    pub fn plan(&self, route: &str) -> Option<&Arc<InjectPlan>> {
        match self.routes.get(route) {
            Some(plan) => plan.as_ref(),
            None => self.default.as_ref(),
        }
    }
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_bad_items_are_named() {
        let specs = parse_inject("args-as-object:0.25, done-missing").expect("valid");
        assert_eq!(specs[0].quirk, QuirkId::ArgsAsObject);
        assert_eq!(specs[0].rate, 0.25);
        assert_eq!(specs[1].rate, 1.0);
        assert!(matches!(
            parse_inject("args-as-object:2"),
            Err(InjectError::Rate(_))
        ));
        assert!(matches!(parse_inject("nope"), Err(InjectError::Unknown(_))));
        assert!(matches!(parse_quirk_list(" , "), Err(InjectError::Empty)));
    }

    #[test]
    fn draws_are_deterministic_per_seed_and_follow_the_rate() {
        let specs =
            parse_inject("args-as-object:0.3,done-missing:1,finish-missing:0").expect("valid");
        let draws = |seed| {
            let plan = InjectPlan::new(specs.clone(), seed);
            (0..1000).map(|_| plan.draw()).collect::<Vec<_>>()
        };
        let (a, b, c) = (draws(7), draws(7), draws(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
        let hits = a
            .iter()
            .filter(|d| d.contains(&QuirkId::ArgsAsObject))
            .count();
        assert!((240..360).contains(&hits), "{hits} of 1000 at rate 0.3");
        assert!(a.iter().all(|d| d.contains(&QuirkId::DoneMissing)));
        assert!(a.iter().all(|d| !d.contains(&QuirkId::FinishMissing)));
    }
}
