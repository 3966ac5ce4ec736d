//! A bounded map in two generations, the eviction policy of the addon's caches (token counts,
//! parsed messages).
//!
//! Inserts go to the `new` generation; a lookup that finds its key in `old` moves it to `new`.
//! When `new` reaches half the bound (in entries or in weight) it becomes `old` and the previous
//! `old` is dropped whole. So the map never holds more than its bounds, every operation is O(1)
//! amortised, and what was used since the last swap survives the next one: close to LRU without
//! its per-lookup bookkeeping.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

/// A map bounded in entries and in total weight (e.g. bytes), evicting by generation.
#[derive(Debug, Clone)]
pub struct GenerationalMap<K, V, S> {
  new: HashMap<K, (V, usize), S>,
  old: HashMap<K, (V, usize), S>,
  new_weight: usize,
  old_weight: usize,
  max_entries: usize,
  max_weight: usize,
}

impl<K: Hash + Eq, V, S: BuildHasher + Default> GenerationalMap<K, V, S> {
  /// An empty map holding at most `max_entries` entries of total weight at most `max_weight`.
  /// A bound of 0 makes every insert a no-op.
  pub fn new(max_entries: usize, max_weight: usize) -> Self {
    GenerationalMap {
      new: HashMap::default(),
      old: HashMap::default(),
      new_weight: 0,
      old_weight: 0,
      max_entries,
      max_weight,
    }
  }

  /// A copy of the value of `key`, if held (moved to the new generation if it was in the old
  /// one). A hit in the new generation, the common case, is one lookup.
  pub fn get(&mut self, key: &K) -> Option<V>
  where
    K: Clone,
    V: Clone,
  {
    if let Some((value, _)) = self.new.get(key) {
      return Some(value.clone());
    }
    let (value, weight) = self.old.remove(key)?;
    self.old_weight -= weight;
    self.make_room(weight);
    self.new_weight += weight;
    self.new.insert(key.clone(), (value.clone(), weight));
    Some(value)
  }

  /// Removes `key`, returning its value and weight if it was held.
  pub fn remove(&mut self, key: &K) -> Option<(V, usize)> {
    if let Some((value, weight)) = self.new.remove(key) {
      self.new_weight -= weight;
      return Some((value, weight));
    }
    let (value, weight) = self.old.remove(key)?;
    self.old_weight -= weight;
    Some((value, weight))
  }

  /// Whether an entry of `weight` can be held at all: the bounds are not 0 and the weight is
  /// at most half the weight bound (a generation's share).
  pub fn admits(&self, weight: usize) -> bool {
    self.max_entries > 0 && weight <= self.max_weight / 2
  }

  /// Stores `value` under `key`; returns false, storing nothing, when [`Self::admits`] refuses
  /// its weight. A key already held is replaced.
  pub fn insert(&mut self, key: K, value: V, weight: usize) -> bool {
    self.insert_evicting(key, value, weight, |_| {})
  }

  /// [`Self::insert`], calling `evicted` with the key of every entry the insert drops.
  pub fn insert_evicting(
    &mut self,
    key: K,
    value: V,
    weight: usize,
    mut evicted: impl FnMut(K),
  ) -> bool {
    if !self.admits(weight) {
      return false;
    }
    if let Some((_, w)) = self.old.remove(&key) {
      self.old_weight -= w;
    }
    if let Some((_, w)) = self.new.remove(&key) {
      self.new_weight -= w;
    }
    if let Some(dropped) = self.make_room(weight) {
      dropped.into_keys().for_each(&mut evicted);
    }
    self.new_weight += weight;
    self.new.insert(key, (value, weight));
    true
  }

  /// Makes room for one more entry of `weight` (at most half the weight bound): swaps the
  /// generations if it would take `new` past half a bound, then drops `old` if the map as a
  /// whole would still pass a bound (an odd or tiny entry bound). Returns what it dropped.
  fn make_room(&mut self, weight: usize) -> Option<HashMap<K, (V, usize), S>> {
    let mut dropped = None;
    let full = self.new.len() >= self.max_entries.div_ceil(2)
      || self.new_weight + weight > self.max_weight / 2;
    if full && !self.new.is_empty() {
      dropped = Some(std::mem::replace(&mut self.old, std::mem::take(&mut self.new)));
      self.old_weight = std::mem::replace(&mut self.new_weight, 0);
    }
    if self.len() >= self.max_entries || self.weight() + weight > self.max_weight {
      let old = std::mem::take(&mut self.old);
      self.old_weight = 0;
      match &mut dropped {
        Some(d) => d.extend(old),
        None => dropped = Some(old),
      }
    }
    dropped.filter(|d| !d.is_empty())
  }

  /// Entries held.
  pub fn len(&self) -> usize {
    self.new.len() + self.old.len()
  }

  /// Whether nothing is held.
  pub fn is_empty(&self) -> bool {
    self.len() == 0
  }

  /// The total weight held.
  pub fn weight(&self) -> usize {
    self.new_weight + self.old_weight
  }

  /// The bound on entries.
  pub fn max_entries(&self) -> usize {
    self.max_entries
  }

  /// The bound on the total weight.
  pub fn max_weight(&self) -> usize {
    self.max_weight
  }

  /// Empties the map and sets new bounds.
  pub fn reset(&mut self, max_entries: usize, max_weight: usize) {
    *self = GenerationalMap::new(max_entries, max_weight);
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use proptest::prelude::*;
  use std::hash::RandomState;

  type Map = GenerationalMap<u32, u32, RandomState>;

  #[test]
  fn an_insert_names_the_keys_it_evicts() {
    let mut map: GenerationalMap<u32, (), std::hash::RandomState> = GenerationalMap::new(4, 100);
    let mut evicted = Vec::new();
    for k in 0..9 {
      map.insert_evicting(k, (), 1, |key| evicted.push(key));
    }
    evicted.sort_unstable();
    // Two entries a generation: every insert past the fourth drops a generation of two.
    assert_eq!(evicted, [0, 1, 2, 3, 4, 5]);
    assert_eq!(map.len() + evicted.len(), 9);
    // A key held is replaced, not evicted.
    let mut again = Vec::new();
    map.insert_evicting(8, (), 1, |key| again.push(key));
    assert!(again.is_empty());
  }

  #[test]
  fn a_looked_up_entry_survives_the_next_swap() {
    let mut m = Map::new(4, usize::MAX);
    for k in 0..2 {
      assert!(m.insert(k, k * 10, 1));
    }
    // `new` holds 2 = half the bound: the next insert swaps, 0 and 1 become old.
    assert!(m.insert(2, 20, 1));
    assert_eq!(m.get(&0), Some(0));
    // 2 and 0 are new: the next insert swaps again and drops 1, never looked up.
    assert!(m.insert(3, 30, 1));
    assert_eq!(m.get(&1), None);
    assert_eq!(m.get(&0), Some(0));
    assert_eq!(m.get(&3), Some(30));
  }

  #[test]
  fn the_weight_bound_holds_and_an_entry_too_heavy_is_refused() {
    let mut m = Map::new(1_000, 100);
    assert!(!m.insert(1, 1, 51));
    assert_eq!(m.get(&1), None);
    assert!(m.insert(1, 1, 50));
    assert!(m.insert(2, 2, 30));
    assert!(m.insert(3, 3, 30));
    assert!(m.weight() <= 100);
    assert_eq!(m.get(&1), None, "dropped with the first old generation");
    assert_eq!(m.get(&2), Some(2));
    assert_eq!(m.get(&3), Some(3));
  }

  #[test]
  fn zero_bounds_store_nothing() {
    let mut m = Map::new(0, usize::MAX);
    assert!(!m.insert(1, 1, 0));
    assert!(m.is_empty());
    let mut m = Map::new(10, 0);
    assert!(m.insert(1, 1, 0), "weightless entries fit a weight bound of 0");
    assert!(!m.insert(2, 2, 1));
  }

  #[test]
  fn replacing_a_key_keeps_the_weight_exact() {
    let mut m = Map::new(10, 1_000);
    m.insert(7, 1, 100);
    m.insert(7, 2, 40);
    assert_eq!((m.len(), m.weight(), m.get(&7)), (1, 40, Some(2)));
  }

  proptest! {
    /// Under any sequence of inserts, lookups and removals the bounds hold, the recorded weight
    /// is the sum of what is held, and what the map returns is what was last stored under the
    /// key (and nothing once removed).
    #[test]
    fn bounds_and_contents_hold(
      max_entries in 0usize..12,
      max_weight in 0usize..200,
      ops in prop::collection::vec((0u8..3, 0u32..16, 0usize..60), 0..200),
    ) {
      let mut m = Map::new(max_entries, max_weight);
      let mut last = std::collections::HashMap::new();
      for (i, (op, key, weight)) in ops.into_iter().enumerate() {
        if op == 2 {
          let removed = m.remove(&key).map(|(v, _)| v);
          let held = m.len();
          prop_assert_eq!(removed, last.remove(&key).and_then(|(v, _)| removed.and(Some(v))));
          prop_assert!(m.get(&key).is_none());
          prop_assert_eq!(held, m.len());
        } else if op == 0 {
          let stored = m.insert(key, i as u32, weight);
          prop_assert_eq!(stored, max_entries > 0 && weight <= max_weight / 2);
          if stored {
            last.insert(key, (i as u32, weight));
          }
        } else if let Some(v) = m.get(&key) {
          prop_assert_eq!(Some(v), last.get(&key).map(|&(v, _)| v));
        }
        prop_assert!(m.len() <= max_entries);
        prop_assert!(m.weight() <= max_weight);
        let held: usize = (0..16u32)
          .filter(|k| m.new.contains_key(k) || m.old.contains_key(k))
          .map(|k| last[&k].1)
          .sum();
        prop_assert_eq!(held, m.weight());
      }
    }
  }
}
