//! One global budget for the bytes inspection holds: request bodies (charged by their tee as it
//! keeps them, [`crate::tap::whole`]), and what an inspector holds of the response (held
//! recording frames, framing and reassembly buffers), not the bytes it has seen. It lives in the
//! leaf `tap` because both sides charge it: the client path's request copy and the inspector.
//!
//! Input: each inspector's [`Charge`], taken when it starts and grown as it holds more. Output:
//! whether a new exchange may be inspected at all; past the budget it is forwarded uninspected
//! and counted (`tooltap_inspection_incomplete_total{reason="memory_budget"}`), and a request
//! body that would cross it is not held (the exchange is reported `memory_budget`). A charge is
//! released when its inspector ends, whatever way it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The global budget; cheap to clone.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    used: Arc<AtomicUsize>,
    max: usize,
}

impl MemoryBudget {
    pub fn new(max: usize) -> MemoryBudget {
        MemoryBudget {
            used: Arc::new(AtomicUsize::new(0)),
            max: max.max(1),
        }
    }

    /// A charge that holds nothing yet, whatever the budget holds: for a copy that charges its
    /// bytes as it keeps them ([`Charge::try_add`]), refused once the budget is spent.
    pub fn empty_charge(&self) -> Charge {
        Charge {
            budget: self.clone(),
            held: 0,
        }
    }

    /// A charge for one new exchange, or `None` when the budget is already spent.
    pub fn charge(&self) -> Option<Charge> {
        (self.used() < self.max).then(|| Charge {
            budget: self.clone(),
            held: 0,
        })
    }

    /// Bytes held right now by every inspection.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// What one inspection holds; released on drop.
#[derive(Debug)]
pub struct Charge {
    budget: MemoryBudget,
    held: usize,
}

impl Charge {
    /// Holds `bytes` more if that stays within the budget; `false` (nothing charged) otherwise.
    pub fn try_add(&mut self, bytes: usize) -> bool {
        let used = &self.budget.used;
        let mut current = used.load(Ordering::Relaxed);
        loop {
            let next = current.saturating_add(bytes);
            if next > self.budget.max {
                return false;
            }
            match used.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
        self.held = self.held.saturating_add(bytes);
        true
    }

    /// Counts `bytes` that are held whatever the budget (already bounded per exchange), so
    /// that new exchanges see them.
    pub fn add(&mut self, bytes: usize) {
        self.budget.used.fetch_add(bytes, Ordering::Relaxed);
        self.held = self.held.saturating_add(bytes);
    }
}

impl Charge {
    /// Bytes this charge holds.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Moves this charge to `target` bytes: down always; up only if that stays within the
    /// budget (`false`, nothing changed, otherwise).
    pub fn try_set(&mut self, target: usize) -> bool {
        match target.checked_sub(self.held) {
            Some(more) => self.try_add(more),
            None => {
                self.lower(self.held - target);
                true
            }
        }
    }

    /// Moves this charge to `target` bytes whatever the budget: what its exchange already
    /// holds, so that new exchanges see it.
    pub fn set(&mut self, target: usize) {
        match target.checked_sub(self.held) {
            Some(more) => self.add(more),
            None => self.lower(self.held - target),
        }
    }

    fn lower(&mut self, bytes: usize) {
        self.budget.used.fetch_sub(bytes, Ordering::Relaxed);
        self.held -= bytes;
    }

    /// Takes over what `other`, a charge on the same budget, holds: the bytes stay charged, now
    /// to this one.
    pub fn absorb(&mut self, mut other: Charge) {
        debug_assert!(Arc::ptr_eq(&self.budget.used, &other.budget.used));
        self.held = self.held.saturating_add(other.held);
        other.held = 0;
    }

    /// Gives back everything this charge holds (its exchange dropped its buffers).
    pub fn release(&mut self) {
        self.budget.used.fetch_sub(self.held, Ordering::Relaxed);
        self.held = 0;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_bounded_and_released() {
        let budget = MemoryBudget::new(100);
        let mut first = budget.charge().expect("room");
        assert!(first.try_add(60));
        assert!(!first.try_add(50), "would cross the budget");
        first.add(40);
        assert_eq!(budget.used(), 100);
        assert!(
            budget.charge().is_none(),
            "spent: new exchanges are not inspected"
        );
        assert!(first.try_set(30), "falling always succeeds");
        assert_eq!(budget.used(), 30);
        assert!(!first.try_set(101), "rising past the budget does not");
        assert_eq!(first.held(), 30);
        first.set(120);
        assert_eq!(
            budget.used(),
            120,
            "what is held is counted whatever the budget"
        );
        drop(first);
        assert_eq!(budget.used(), 0);
        assert!(budget.charge().is_some());
    }

    #[test]
    fn an_absorbed_charge_stays_counted_until_its_new_holder_releases_it() {
        let budget = MemoryBudget::new(100);
        let mut copy = budget.empty_charge();
        assert!(copy.try_add(40));
        let mut inspector = budget.charge().expect("room");
        assert!(inspector.try_add(10));
        inspector.absorb(copy);
        assert_eq!((inspector.held(), budget.used()), (50, 50));
        drop(inspector);
        assert_eq!(budget.used(), 0);
        let mut spent = budget.empty_charge();
        spent.add(100);
        assert!(
            !budget.empty_charge().try_add(1),
            "an empty charge is made even when the budget is spent, and refused there"
        );
    }
}
