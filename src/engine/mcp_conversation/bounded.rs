//! [`Bounded`]: a map that keeps at most `cap` entries, evicting the oldest inserted first.
//!
//! Every table the conversation store grows with traffic (conversations, ended sessions, the
//! session ids minted per credential, a conversation's request ids, progress tokens and SSE
//! event ids) is one of these, so an attacker minting a million session ids or ids costs at
//! most `cap` entries; each eviction is counted by the caller for its metric.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

#[derive(Debug)]
pub struct Bounded<K, V> {
    map: HashMap<K, V>,
    /// Insertion order; may name keys removed since (skipped when evicting, compacted when it
    /// grows past twice the map).
    order: VecDeque<K>,
    cap: usize,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    pub fn new(cap: usize) -> Self {
        Bounded {
            map: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.map.get_mut(key)
    }

    pub fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.map.remove(key)
    }

    /// Inserts (replacing an entry of the same key, which keeps its place); returns how many
    /// entries were evicted to make room (0 or 1).
    pub fn insert(&mut self, key: K, value: V) -> usize {
        if let Some(slot) = self.map.get_mut(&key) {
            *slot = value;
            return 0;
        }
        let evicted = self.make_room(&key);
        self.map.insert(key, value);
        evicted
    }

    /// Evicts the oldest entries until one more fits and puts `key` (about to be inserted)
    /// last in the order; returns how many were evicted.
    fn make_room(&mut self, key: &K) -> usize {
        let mut evicted = 0;
        while self.map.len() >= self.cap {
            match self.order.pop_front() {
                Some(old) => evicted += usize::from(self.map.remove(&old).is_some()),
                None => break,
            }
        }
        if self.order.len() >= 2 * self.cap {
            let map = &self.map;
            self.order.retain(|k| map.contains_key(k));
        }
        self.order.push_back(key.clone());
        evicted
    }

    /// The entry of `key`, inserted from `make` when missing; and how many entries were
    /// evicted to make room.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> (&mut V, usize) {
        let evicted = if self.map.contains_key(&key) {
            0
        } else {
            self.make_room(&key)
        };
        (self.map.entry(key).or_insert_with(make), evicted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_goes_first_and_the_order_stays_bounded() {
        let mut map = Bounded::new(3);
        let mut evicted = 0;
        for k in 0..1000u32 {
            evicted += map.insert(k, k);
            if k % 2 == 0 {
                map.remove(&k);
            }
        }
        assert!(map.len() <= 3);
        assert!(map.order.len() <= 6, "order {}", map.order.len());
        assert!(map.contains(&999) && map.contains(&997));
        assert!(evicted > 400, "evicted {evicted}");
    }
}
