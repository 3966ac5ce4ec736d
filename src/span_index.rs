//! Finding verbatim spans that a text shares with a set of other texts, in linear time.
//!
//! A [`SpanIndex`] holds every window of `min_chars` consecutive characters of the texts added
//! to it, keyed by a rolling polynomial hash (modulo the Mersenne prime 2⁶¹ − 1, with a fixed
//! base, so results are the same in every run). Probing a text hashes each of its windows once
//! and looks it up, so the cost is linear in the lengths of the texts, never a substring scan of
//! one text per window of another. A hash hit is confirmed by comparing the two windows, so a
//! reported span is always real.
//!
//! Every text carries a *tag* (a step or a message index), and each distinct window keeps the
//! tags of the texts containing it, so that a caller can ask "which spans does this output share
//! with calls made after it?".
//!
//! ```
//! use context_trim::span_index::SpanIndex;
//! let mut index = SpanIndex::new(10);
//! index.add("please look at: the quick brown fox", 7);
//! assert!(index.shares_span_above("it said the quick brown fox jumped", 6));
//! assert!(!index.shares_span_above("it said the quick brown fox jumped", 7));
//! assert!(!index.shares_span_above("the quick", 0));
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The modulus of the rolling hash: the Mersenne prime 2⁶¹ − 1.
const MODULUS: u64 = (1 << 61) - 1;
/// The base of the rolling hash (any fixed value below the modulus; a large odd one spreads
/// characters well).
const BASE: u64 = 0x1f3d_5b79_a2c4_e607 % MODULUS;

/// Where a distinct window was first seen.
#[derive(Debug, Clone, Copy)]
struct Window {
  text: usize,
  start: usize,
  end: usize,
}

/// The tags of the texts containing a window, ascending, without repeats.
#[derive(Debug, Clone)]
enum Tags {
  One(usize),
  Many(Vec<usize>),
}

impl Tags {
  fn as_slice(&self) -> &[usize] {
    match self {
      Tags::One(t) => std::slice::from_ref(t),
      Tags::Many(ts) => ts,
    }
  }

  fn insert(&mut self, tag: usize) {
    match self {
      Tags::One(t) if *t == tag => {}
      Tags::One(t) => *self = Tags::Many(if *t < tag { vec![*t, tag] } else { vec![tag, *t] }),
      Tags::Many(ts) => {
        if let Err(at) = ts.binary_search(&tag) {
          ts.insert(at, tag);
        }
      }
    }
  }
}

/// Verbatim windows of a set of texts, for finding spans another text shares with them.
///
/// Each distinct window gets an id (dense, from 0, in the order first seen), so that a caller
/// can keep its own state per window.
#[derive(Debug, Clone)]
pub struct SpanIndex<'a> {
  min_chars: usize,
  power: u64,
  texts: Vec<Cow<'a, str>>,
  ids: HashMap<u64, usize, BuildHasherDefault<MixHasher>>,
  windows: Vec<Window>,
  tags: Vec<Tags>,
  /// One bit per hash value modulo [`FILTER_BITS`], set for every indexed window: most probes
  /// miss, and a bit test answers them without touching the table.
  filter: Vec<u64>,
}

/// The size of [`SpanIndex::filter`] in bits (128 KiB).
const FILTER_BITS: usize = 1 << 20;

fn filter_slot(hash: u64) -> (usize, u64) {
  let bit = (hash as usize) & (FILTER_BITS - 1);
  (bit / 64, 1 << (bit % 64))
}

impl<'a> SpanIndex<'a> {
  /// An empty index of spans of at least `min_chars` characters (Unicode scalar values; 0 is
  /// taken as 1).
  pub fn new(min_chars: usize) -> Self {
    let min_chars = min_chars.max(1);
    let mut power = 1;
    for _ in 1..min_chars {
      power = mul_mod(power, BASE);
    }
    SpanIndex {
      min_chars,
      power,
      texts: Vec::new(),
      ids: HashMap::default(),
      windows: Vec::new(),
      tags: Vec::new(),
      filter: Vec::new(),
    }
  }

  /// The minimum span length, in characters.
  pub fn min_chars(&self) -> usize {
    self.min_chars
  }

  /// The number of distinct windows indexed.
  pub fn len(&self) -> usize {
    self.windows.len()
  }

  /// Whether no window has been indexed (every text added so far was shorter than the minimum).
  pub fn is_empty(&self) -> bool {
    self.windows.is_empty()
  }

  /// Adds every window of `text`, tagged `tag`.
  pub fn add(&mut self, text: impl Into<Cow<'a, str>>, tag: usize) {
    let text = text.into();
    if text.len() < self.min_chars {
      return;
    }
    let id = self.texts.len();
    let mut found = Vec::new();
    windows(&text, self.min_chars, self.power, |hash, start, end| {
      found.push((hash, start, end));
      true
    });
    for (hash, start, end) in found {
      match self.ids.get(&hash) {
        // Same hash: the same window (a different one would be a 2⁻⁶¹ collision, in which case
        // the first window seen keeps the slot).
        Some(&w) => {
          if self.window_text(w) == text.get(start..end) {
            if let Some(tags) = self.tags.get_mut(w) {
              tags.insert(tag);
            }
          }
        }
        None => {
          if self.filter.is_empty() {
            self.filter = vec![0; FILTER_BITS / 64];
          }
          let (word, bit) = filter_slot(hash);
          if let Some(w) = self.filter.get_mut(word) {
            *w |= bit;
          }
          self.ids.insert(hash, self.windows.len());
          self.windows.push(Window { text: id, start, end });
          self.tags.push(Tags::One(tag));
        }
      }
    }
    self.texts.push(text);
  }

  /// The ids of the indexed windows that occur in `text`, ascending, without repeats: each is a
  /// verbatim span of at least [`min_chars`](Self::min_chars) characters that `text` shares
  /// with an indexed text.
  pub fn shared_windows(&self, text: &str) -> Vec<usize> {
    let mut shared = Vec::new();
    if self.windows.is_empty() || text.len() < self.min_chars {
      return shared;
    }
    windows(text, self.min_chars, self.power, |hash, start, end| {
      let (word, bit) = filter_slot(hash);
      if self.filter.get(word).is_some_and(|w| w & bit == 0) {
        return true;
      }
      if let Some(&w) = self.ids.get(&hash) {
        if self.window_text(w) == text.get(start..end) {
          shared.push(w);
        }
      }
      true
    });
    shared.sort_unstable();
    shared.dedup();
    shared
  }

  /// The tags of the texts containing window `id`, ascending, without repeats (empty for an
  /// unknown id).
  pub fn tags(&self, id: usize) -> &[usize] {
    self.tags.get(id).map_or(&[], Tags::as_slice)
  }

  /// Whether `text` shares a verbatim span of at least [`min_chars`](Self::min_chars)
  /// characters with an indexed text whose tag is above `bound`.
  pub fn shares_span_above(&self, text: &str, bound: usize) -> bool {
    self.shared_windows(text).into_iter().any(|w| self.tags(w).last().is_some_and(|&t| t > bound))
  }

  fn window_text(&self, id: usize) -> Option<&str> {
    let w = self.windows.get(id)?;
    self.texts.get(w.text)?.get(w.start..w.end)
  }
}

/// Calls `f(hash, start, end)` for every window of `size` characters of `text` (byte offsets),
/// in order, until `f` returns false. `power` is `BASE^(size - 1)`.
fn windows(text: &str, size: usize, power: u64, mut f: impl FnMut(u64, usize, usize) -> bool) {
  // Two cursors over the same text: `head` adds characters, `tail` removes them `size` later.
  let mut tail = text.char_indices();
  let mut len = 0;
  let mut hash = 0;
  for (at, c) in text.char_indices() {
    if len == size {
      if let Some((_, old)) = tail.next() {
        hash = sub_mod(hash, mul_mod(u64::from(old) + 1, power));
      }
    } else {
      len += 1;
    }
    hash = add_mod(mul_mod(hash, BASE), u64::from(c) + 1);
    if len == size && !f(hash, tail.offset(), at + c.len_utf8()) {
      return;
    }
  }
}

fn reduce(x: u64) -> u64 {
  let x = (x & MODULUS) + (x >> 61);
  if x >= MODULUS {
    x - MODULUS
  } else {
    x
  }
}

fn mul_mod(a: u64, b: u64) -> u64 {
  let p = u128::from(a) * u128::from(b);
  // p = hi·2⁶¹ + lo ≡ hi + lo (mod 2⁶¹ − 1); both parts are below 2⁶¹ for a, b < 2⁶¹.
  let lo = (p as u64) & MODULUS;
  let hi = (p >> 61) as u64;
  reduce(lo + hi)
}

fn add_mod(a: u64, b: u64) -> u64 {
  reduce(a + b)
}

fn sub_mod(a: u64, b: u64) -> u64 {
  reduce(a + MODULUS - b)
}

/// A hasher for keys that are already hashes: one multiplication spreads their bits over the
/// whole word (the table uses the top bits).
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
  fn finish(&self) -> u64 {
    self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)
  }

  fn write(&mut self, bytes: &[u8]) {
    for &b in bytes {
      self.0 = self.0.rotate_left(8) ^ u64::from(b);
    }
  }

  fn write_u64(&mut self, n: u64) {
    self.0 = n;
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// The obvious quadratic answer, to check the index against.
  fn naive(haystacks: &[(&str, usize)], text: &str, min: usize, bound: usize) -> bool {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    (0..chars.len()).any(|i| {
      let Some(&(start, _)) = chars.get(i) else { return false };
      let Some(&(last, c)) = chars.get(i + min - 1) else { return false };
      let span = &text[start..last + c.len_utf8()];
      haystacks.iter().any(|&(h, tag)| tag > bound && h.contains(span))
    })
  }

  #[test]
  fn finds_exactly_the_spans_the_naive_scan_finds() {
    let later = [
      ("fn main() { println!(\"héllo wörld\"); } // 東京 🚀 end", 5),
      ("line one\nline two\nline three", 9),
      ("short", 12),
    ];
    let probes = [
      "xx println!(\"héllo wörld\"); yy",
      "zz line two\nline three zz",
      "line",
      "東京 🚀 end",
      "nothing in common at all, none whatsoever",
      "short",
    ];
    for min in [1, 4, 8, 12, 20] {
      let mut index = SpanIndex::new(min);
      for &(t, tag) in &later {
        index.add(t, tag);
      }
      for probe in probes {
        for bound in [0, 5, 8, 9, 11, 12] {
          assert_eq!(
            index.shares_span_above(probe, bound),
            naive(&later, probe, min, bound),
            "min {min}, bound {bound}, probe {probe:?}"
          );
        }
      }
    }
  }

  #[test]
  fn a_repeated_window_keeps_every_tag() {
    let mut index = SpanIndex::new(6);
    index.add("abcdefgh", 1);
    index.add(String::from("--abcdefgh--"), 4);
    index.add("abcdefgh", 2);
    assert!(index.shares_span_above("xabcdefx", 3));
    assert!(!index.shares_span_above("xabcdefx", 4));
    assert_eq!(index.min_chars(), 6);
    // "abcdef", "bcdefg", "cdefgh" in all three texts; "-abcde", "--abcd"… in the second only.
    let shared = index.shared_windows("abcdefgh");
    assert_eq!(shared.len(), 3);
    assert!(shared.iter().all(|&w| index.tags(w) == [1, 2, 4]));
    assert_eq!(index.tags(usize::MAX), &[] as &[usize]);
    assert_eq!(index.len(), 3 + 4);
  }

  #[test]
  fn texts_shorter_than_the_minimum_index_nothing() {
    let mut index = SpanIndex::new(40);
    index.add("a short argument", 1);
    assert!(index.is_empty());
    assert!(!index.shares_span_above("a short argument", 0));
    assert_eq!(SpanIndex::new(0).min_chars(), 1);
  }

  #[test]
  fn modular_arithmetic_stays_canonical() {
    assert_eq!(reduce(MODULUS), 0);
    assert_eq!(add_mod(MODULUS - 1, 1), 0);
    assert_eq!(sub_mod(0, 1), MODULUS - 1);
    assert_eq!(mul_mod(MODULUS - 1, MODULUS - 1), 1);
  }

  #[test]
  fn a_megabyte_probe_is_linear() {
    // 1 MB of text against 100 KB of indexed text: a quadratic scan would take minutes.
    let big: String = (0..40_000).map(|i| format!("line {i:06} of the log\n")).collect();
    let mut index = SpanIndex::new(40);
    index.add(big[500_000..600_000].to_string(), 3);
    assert!(index.shares_span_above(&big, 2));
    let other: String = (0..40_000).map(|i| format!("entry {i:06} of a log\n")).collect();
    assert!(!index.shares_span_above(&other, 0));
  }
}
