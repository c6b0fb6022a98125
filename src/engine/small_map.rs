//! An ordered map for the few keys a stream usually has (choices, tool-call indexes): a short
//! sorted `Vec` until it holds more than [`FEW`] entries, then a `BTreeMap`.
//!
//! A `BTreeMap` allocates a whole leaf (eleven slots) for its first entry: for the one choice
//! and one or two tool calls of a typical stream that is mostly empty slots (see
//! docs/benchmarks.md#small-map). The `Vec`
//! holds what is there. Past [`FEW`] keys the map becomes a `BTreeMap`, so a stream that sends
//! thousands of indexes in any order costs O(log n) per key, never a quadratic shuffle.
//! Iteration is in key order either way.

use std::collections::BTreeMap;

/// Entries kept in the sorted `Vec` before switching to a `BTreeMap`.
const FEW: usize = 8;

#[derive(Debug)]
pub enum SmallMap<K, V> {
    Few(Vec<(K, V)>),
    Many(BTreeMap<K, V>),
}

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap::Few(Vec::new())
    }
}

impl<K: Ord + Copy, V> SmallMap<K, V> {
    pub fn get(&self, key: &K) -> Option<&V> {
        match self {
            SmallMap::Few(entries) => entries
                .binary_search_by(|(k, _)| k.cmp(key))
                .ok()
                .map(|at| &entries[at].1),
            SmallMap::Many(map) => map.get(key),
        }
    }

    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        match self {
            SmallMap::Few(entries) => match entries.binary_search_by(|(k, _)| k.cmp(key)) {
                Ok(at) => Some(&mut entries[at].1),
                Err(_) => None,
            },
            SmallMap::Many(map) => map.get_mut(key),
        }
    }

    pub fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    /// Puts `value` under `key`, replacing what was there.
    pub fn insert(&mut self, key: K, value: V) {
        match self {
            SmallMap::Few(entries) => match entries.binary_search_by(|(k, _)| k.cmp(&key)) {
                Ok(at) => entries[at].1 = value,
                Err(at) if entries.len() < FEW => entries.insert(at, (key, value)),
                Err(_) => {
                    let mut map: BTreeMap<K, V> = std::mem::take(entries).into_iter().collect();
                    map.insert(key, value);
                    *self = SmallMap::Many(map);
                }
            },
            SmallMap::Many(map) => {
                map.insert(key, value);
            }
        }
    }

    /// The value under `key`, inserted as `V::default()` when missing.
    pub fn get_or_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        if !self.contains_key(&key) {
            self.insert(key, V::default());
        }
        match self {
            SmallMap::Few(entries) => {
                let at = entries
                    .binary_search_by(|(k, _)| k.cmp(&key))
                    .unwrap_or_else(|at| at);
                &mut entries[at].1
            }
            SmallMap::Many(map) => map.entry(key).or_default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            SmallMap::Few(entries) => entries.is_empty(),
            SmallMap::Many(map) => map.is_empty(),
        }
    }

    /// Entries in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        match self {
            SmallMap::Few(entries) => Iter::Few(entries.iter()),
            SmallMap::Many(map) => Iter::Many(map.iter()),
        }
    }

    /// The greatest key, in O(log n).
    pub fn last_key(&self) -> Option<&K> {
        match self {
            SmallMap::Few(entries) => entries.last().map(|(k, _)| k),
            SmallMap::Many(map) => map.last_key_value().map(|(k, _)| k),
        }
    }

    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.iter().map(|(k, _)| k)
    }
}

/// A [`SmallMap`]'s entries in key order.
pub enum Iter<'a, K, V> {
    Few(std::slice::Iter<'a, (K, V)>),
    Many(std::collections::btree_map::Iter<'a, K, V>),
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Few(entries) => entries.next().map(|(k, v)| (k, v)),
            Iter::Many(entries) => entries.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inserts `keys` (with their value = key * 10, the last write winning) into a `SmallMap`
    /// and a `BTreeMap`, and checks both agree on everything the map offers.
    fn agrees_with_a_btree_map(keys: &[i64]) {
        let mut small = SmallMap::default();
        let mut reference = BTreeMap::new();
        for (n, key) in keys.iter().enumerate() {
            assert_eq!(small.contains_key(key), reference.contains_key(key));
            small.insert(*key, n);
            reference.insert(*key, n);
            *small.get_or_default(key + 1000) += 1;
            *reference.entry(key + 1000).or_default() += 1;
        }
        let listed: Vec<_> = small.iter().map(|(k, v)| (*k, *v)).collect();
        let expected: Vec<_> = reference.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(listed, expected);
        assert_eq!(
            small.keys().copied().collect::<Vec<_>>(),
            reference.keys().copied().collect::<Vec<_>>()
        );
        for probe in -2..2_100 {
            assert_eq!(small.get(&probe), reference.get(&probe), "key {probe}");
            if let (Some(a), Some(b)) = (small.get_mut(&probe), reference.get_mut(&probe)) {
                *a += 7;
                *b += 7;
            }
        }
        assert_eq!(small.iter().count(), reference.len());
        assert_eq!(small.last_key(), reference.keys().next_back());
        assert_eq!(small.is_empty(), reference.is_empty());
    }

    #[test]
    fn few_keys_stay_in_a_vec_and_agree_with_a_btree_map() {
        agrees_with_a_btree_map(&[]);
        agrees_with_a_btree_map(&[0]);
        agrees_with_a_btree_map(&[1, 0, 1]);
        let mut map = SmallMap::default();
        for key in [3, 1, 2] {
            map.insert(key, ());
        }
        assert!(matches!(map, SmallMap::Few(ref entries) if entries.len() == 3));
    }

    #[test]
    fn many_keys_in_any_order_move_to_a_btree_map_and_still_agree() {
        let descending: Vec<i64> = (0..500).rev().collect();
        agrees_with_a_btree_map(&descending);
        let scattered: Vec<i64> = (0..300).map(|i| (i * 7919) % 311 - 5).collect();
        agrees_with_a_btree_map(&scattered);
        let mut map = SmallMap::default();
        for key in 0..=FEW as i64 {
            map.insert(key, ());
        }
        assert!(matches!(map, SmallMap::Many(_)), "past {FEW} keys");
    }
}
