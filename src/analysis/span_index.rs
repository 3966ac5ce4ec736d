//! Finding verbatim spans that a text shares with a set of other texts, in time that does not
//! grow with the texts' length once their fingerprints are known.
//!
//! A *window* is a run of `min_chars` consecutive characters (Unicode scalar values), hashed by a
//! rolling polynomial hash modulo the Mersenne prime 2⁶¹ − 1 with a fixed base, so results are the
//! same in every run. Two texts share a span of at least `min_chars` characters exactly when they
//! share a window, and a hash hit is always confirmed by comparing the two windows, so a reported
//! window is always real.
//!
//! Hashing every window of every probed text on every call costs time linear in the texts (the
//! rolling context probed each tool output twice per call, 17 ms for a 1,000-message session).
//! So each text is first reduced to its [`Marks`]: the *winnowed* fingerprints of its
//! `k`-character substrings (Schleimer, Wilkerson and Aiken, 2003). With `k + w − 1 =
//! min_chars`, every window contains exactly `w` consecutive `k`-grams, and the text marks the
//! one of them with the smallest hash (the rightmost on ties). That choice depends only on the
//! window's characters, so a window shared by two texts is marked at the same place in both:
//! **two texts share a window only if they share a mark**, and the window then starts at most
//! `w − 1` characters before that mark. About 2/(w + 1) of a text's positions are marks (1 in 11
//! for the default 40 characters), and marks are computed once per text: the binding memoises
//! them in each message ([`crate::analysis::memo::span_marks`]).
//!
//! [`SpanIndex::matches`] then only hashes windows around the marks that the probed texts and
//! the indexed texts have in common: the candidates. The result is exactly the set of shared
//! windows that hashing every window of every text would find (the tests check it against a
//! naive scan), at a cost proportional to the number of marks and candidates.
//!
//! Every indexed text carries a *tag* (a step or a message index), and each distinct window keeps
//! the tags of the indexed texts containing it, so that a caller can ask "which spans does this
//! output share with calls made after it?".
//!
//! ```
//! use context_trim::analysis::span_index::SpanIndex;
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

/// The sizes derived from a minimum span length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sizes {
  /// Characters per window (`min_chars`, at least 1).
  window: usize,
  /// Characters per fingerprinted substring (`k`): half the window, rounded up.
  gram: usize,
  /// Substrings per window (`w = window − gram + 1`).
  per_window: usize,
  /// `BASE^(window − 1)` and `BASE^(gram − 1)`, for rolling.
  window_power: u64,
  gram_power: u64,
}

impl Sizes {
  fn new(min_chars: usize) -> Sizes {
    let window = min_chars.max(1);
    let gram = window.div_ceil(2);
    Sizes {
      window,
      gram,
      per_window: window - gram + 1,
      window_power: power(window),
      gram_power: power(gram),
    }
  }
}

/// `BASE^(size − 1)`.
fn power(size: usize) -> u64 {
  let mut p = 1;
  for _ in 1..size {
    p = mul_mod(p, BASE);
  }
  p
}

/// One mark: a fingerprinted substring's hash (its top 32 bits) and its byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
  hash: u32,
  at: u32,
}

/// The winnowed fingerprints of a text for one minimum span length (see the [module
/// docs](self)): the positions where a shared span can be found. About 8 bytes for every 11
/// characters of text at the default 40 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marks {
  min_chars: usize,
  /// Sorted by hash, then offset: an index of many texts merges their sorted marks instead of
  /// sorting them all again on every call.
  marks: Vec<Mark>,
  /// The text is too long for 32-bit offsets (over 4 GiB): every window is hashed instead.
  whole: bool,
}

impl Marks {
  /// The marks of `text` for spans of at least `min_chars` characters (0 is taken as 1).
  pub fn new(text: &str, min_chars: usize) -> Marks {
    let sizes = Sizes::new(min_chars);
    let mut marks = Vec::new();
    let whole = u32::try_from(text.len()).is_err();
    if !whole && text.len() >= sizes.window {
      winnow(text, sizes, |hash, at| {
        // Offsets fit: the text is under 4 GiB.
        marks.push(Mark { hash: (hash >> 32) as u32, at: at as u32 });
      });
    }
    marks.sort_unstable_by_key(|m| (m.hash, m.at));
    marks.shrink_to_fit();
    Marks { min_chars: sizes.window, marks, whole }
  }

  /// The minimum span length these marks are for.
  pub fn min_chars(&self) -> usize {
    self.min_chars
  }

  /// The number of marks.
  pub fn len(&self) -> usize {
    self.marks.len()
  }

  /// Whether there is no mark (the text is shorter than the minimum span).
  pub fn is_empty(&self) -> bool {
    self.marks.is_empty()
  }
}

/// Calls `f(mixed hash, byte offset)` for each winnowed substring of `text` in order, each once:
/// of every `per_window` consecutive `gram`-character substrings, the one with the smallest mixed
/// hash, the rightmost on ties.
fn winnow(text: &str, sizes: Sizes, mut f: impl FnMut(u64, usize)) {
  // Candidates for the minimum of the current run of substrings: (mixed hash, index, offset),
  // hashes increasing from the front.
  let mut queue: std::collections::VecDeque<(u64, usize, usize)> =
    std::collections::VecDeque::with_capacity(sizes.per_window + 1);
  let mut index = 0usize;
  let mut last = None;
  windows(text, sizes.gram, sizes.gram_power, |hash, start, _| {
    let mixed = mix(hash);
    while queue.back().is_some_and(|&(h, _, _)| h >= mixed) {
      queue.pop_back();
    }
    queue.push_back((mixed, index, start));
    while queue.front().is_some_and(|&(_, i, _)| i + sizes.per_window <= index) {
      queue.pop_front();
    }
    if index + 1 >= sizes.per_window {
      if let Some(&(h, i, at)) = queue.front() {
        if last != Some(i) {
          last = Some(i);
          f(h, at);
        }
      }
    }
    index += 1;
    true
  });
}

/// Spreads a rolling hash over the whole word, so that "the smallest" is a fair draw.
fn mix(hash: u64) -> u64 {
  let h = (hash ^ (hash >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
  h ^ (h >> 29)
}

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

/// An indexed text.
#[derive(Debug, Clone)]
struct Indexed<'a> {
  text: Cow<'a, str>,
  tag: usize,
  marks: Cow<'a, Marks>,
}

/// A set of texts, each with a tag, for finding the spans other texts share with them.
#[derive(Debug, Clone)]
pub struct SpanIndex<'a> {
  sizes: Sizes,
  texts: Vec<Indexed<'a>>,
}

/// What [`SpanIndex::matches`] found: for each probed text, the windows it shares with the
/// indexed texts, and for each window the tags of the indexed texts containing it.
#[derive(Debug, Clone, Default)]
pub struct Matches {
  shared: Vec<Vec<usize>>,
  tags: Vec<Tags>,
}

impl Matches {
  /// The ids of the windows that probe `probe` shares with the indexed texts, ascending, without
  /// repeats: each is a verbatim span of at least `min_chars` characters. Ids are dense from 0,
  /// and equal ids are equal windows.
  pub fn shared(&self, probe: usize) -> &[usize] {
    self.shared.get(probe).map_or(&[], Vec::as_slice)
  }

  /// The tags of the indexed texts containing window `id`, ascending, without repeats (empty
  /// for an unknown id).
  pub fn tags(&self, id: usize) -> &[usize] {
    self.tags.get(id).map_or(&[], Tags::as_slice)
  }

  /// The number of distinct windows hashed on the indexed side (those around common marks).
  pub fn windows_indexed(&self) -> usize {
    self.tags.len()
  }
}

/// The exact windows hashed on the indexed side: hash → id, where each id was first seen, and
/// its tags.
struct Table<'t> {
  ids: HashMap<u64, usize, BuildHasherDefault<MixHasher>>,
  windows: Vec<Window>,
  texts: &'t [Indexed<'t>],
  tags: Vec<Tags>,
}

impl Table<'_> {
  fn window_text(&self, id: usize) -> Option<&str> {
    let w = self.windows.get(id)?;
    self.texts.get(w.text)?.text.get(w.start..w.end)
  }
}

impl<'a> SpanIndex<'a> {
  /// An empty index of spans of at least `min_chars` characters (Unicode scalar values; 0 is
  /// taken as 1).
  pub fn new(min_chars: usize) -> Self {
    SpanIndex { sizes: Sizes::new(min_chars), texts: Vec::new() }
  }

  /// The minimum span length, in characters.
  pub fn min_chars(&self) -> usize {
    self.sizes.window
  }

  /// The number of texts added.
  pub fn len(&self) -> usize {
    self.texts.len()
  }

  /// Whether no text has been added.
  pub fn is_empty(&self) -> bool {
    self.texts.is_empty()
  }

  /// Adds `text`, tagged `tag`.
  pub fn add(&mut self, text: impl Into<Cow<'a, str>>, tag: usize) {
    let text = text.into();
    let marks = Marks::new(&text, self.sizes.window);
    self.add_marked(text, tag, Cow::Owned(marks));
  }

  /// Adds `text`, tagged `tag`, with its marks already computed (e.g. memoised). Marks for
  /// another minimum length are computed again.
  pub fn add_marked(&mut self, text: impl Into<Cow<'a, str>>, tag: usize, marks: Cow<'a, Marks>) {
    let text = text.into();
    if text.len() < self.sizes.window {
      return;
    }
    let marks = if marks.min_chars == self.sizes.window {
      marks
    } else {
      Cow::Owned(Marks::new(&text, self.sizes.window))
    };
    self.texts.push(Indexed { text, tag, marks });
  }

  /// Whether `text` shares a verbatim span of at least [`min_chars`](Self::min_chars)
  /// characters with an indexed text whose tag is above `bound`.
  pub fn shares_span_above(&self, text: &str, bound: usize) -> bool {
    let marks = Marks::new(text, self.sizes.window);
    let found = self.matches(&[(text, &marks)]);
    found.shared(0).iter().any(|&w| found.tags(w).last().is_some_and(|&t| t > bound))
  }

  /// The windows each of `probes` (a text and its marks for [`min_chars`](Self::min_chars))
  /// shares with the indexed texts. Marks for another length are computed again.
  pub fn matches(&self, probes: &[(&str, &Marks)]) -> Matches {
    let sizes = self.sizes;
    let mut found = Matches { shared: vec![Vec::new(); probes.len()], tags: Vec::new() };
    if self.texts.is_empty() || probes.is_empty() {
      return found;
    }
    let recomputed: Vec<Option<Marks>> = probes
      .iter()
      .map(|&(text, marks)| {
        (marks.min_chars != sizes.window).then(|| Marks::new(text, sizes.window))
      })
      .collect();
    let probe_marks = |p: usize| -> Option<&Marks> {
      match recomputed.get(p) {
        Some(Some(m)) => Some(m),
        _ => probes.get(p).map(|&(_, m)| m),
      }
    };

    // The indexed side's marks, by hash: (hash, text, offset).
    let mut entries: Vec<(u32, u32, u32)> = Vec::new();
    let mut whole_texts = Vec::new();
    for (t, indexed) in self.texts.iter().enumerate() {
      if indexed.marks.whole {
        whole_texts.push(t);
        continue;
      }
      let t = u32::try_from(t).unwrap_or(u32::MAX);
      entries.extend(indexed.marks.marks.iter().map(|m| (m.hash, t, m.at)));
    }
    // One sorted run per text, in text order: a stable sort finds the runs and merges them.
    entries.sort();
    let filter = Filter::new(entries.iter().map(|e| e.0), entries.len());
    let lookup = |hash: u32| -> Option<usize> {
      if !filter.may_hold(hash) {
        return None;
      }
      let at = entries.partition_point(|e| e.0 < hash);
      entries.get(at).is_some_and(|e| e.0 == hash).then_some(at)
    };

    // A text too long for marks (over 4 GiB) on either side: hash every window, as without marks.
    let every =
      !whole_texts.is_empty() || (0..probes.len()).any(|p| probe_marks(p).is_some_and(|m| m.whole));

    // Candidates: the probes' marks the indexed side has too; and the indexed marks needed.
    let mut needed = vec![false; entries.len()];
    let mut candidates: Vec<Vec<usize>> = vec![Vec::new(); probes.len()];
    for (p, list) in candidates.iter_mut().enumerate() {
      if every {
        list.push(usize::MAX);
        continue;
      }
      let Some(marks) = probe_marks(p) else { continue };
      for m in &marks.marks {
        if let Some(group) = lookup(m.hash) {
          list.push(m.at as usize);
          mark_group(&entries, &mut needed, group);
        }
      }
      // In text order, as `around_marks` takes them (marks come by hash).
      list.sort_unstable();
    }

    // The indexed side's windows around the needed marks, in the order of the texts.
    let mut around: Vec<Vec<usize>> = vec![Vec::new(); self.texts.len()];
    for (e, &(_, t, at)) in entries.iter().enumerate() {
      if needed.get(e) == Some(&true) {
        if let Some(list) = around.get_mut(t as usize) {
          list.push(at as usize);
        }
      }
    }
    if every {
      around.iter_mut().for_each(|list| list.push(usize::MAX));
    }
    let mut table =
      Table { ids: HashMap::default(), windows: Vec::new(), texts: &self.texts, tags: Vec::new() };
    for (t, (indexed, offsets)) in self.texts.iter().zip(around.iter_mut()).enumerate() {
      offsets.sort_unstable();
      offsets.dedup();
      let text: &str = &indexed.text;
      around_marks(text, offsets, sizes, |hash, start, end| match table.ids.get(&hash) {
        // Same hash: the same window (a different one would be a 2⁻⁶¹ collision, in which case
        // the first window seen keeps the slot).
        Some(&w) => {
          if table.window_text(w) == text.get(start..end) {
            if let Some(tags) = table.tags.get_mut(w) {
              tags.insert(indexed.tag);
            }
          }
        }
        None => {
          table.ids.insert(hash, table.windows.len());
          table.windows.push(Window { text: t, start, end });
          table.tags.push(Tags::One(indexed.tag));
        }
      });
    }

    // The probes' windows around their candidate marks, looked up.
    for (p, &(text, _)) in probes.iter().enumerate() {
      let (Some(offsets), Some(shared)) = (candidates.get(p), found.shared.get_mut(p)) else {
        continue;
      };
      around_marks(text, offsets, sizes, |hash, start, end| {
        if let Some(&w) = table.ids.get(&hash) {
          if table.window_text(w) == text.get(start..end) {
            shared.push(w);
          }
        }
      });
      shared.sort_unstable();
      shared.dedup();
    }
    found.tags = table.tags;
    found
  }
}

/// Marks as needed every entry of the group of equal hashes starting at `first`.
fn mark_group(entries: &[(u32, u32, u32)], needed: &mut [bool], first: usize) {
  let Some(&(hash, _, _)) = entries.get(first) else { return };
  if needed.get(first) == Some(&true) {
    return;
  }
  for (e, flag) in entries.iter().zip(needed.iter_mut()).skip(first) {
    if e.0 != hash {
      break;
    }
    *flag = true;
  }
}

/// Calls `f(hash, start, end)` for every window of `text` that contains one of the marked
/// substrings at `offsets` (ascending byte offsets; `usize::MAX` means every window) within its
/// first `per_window` substrings: the windows starting at most `per_window − 1` characters before
/// a mark. Overlapping stretches are hashed once.
fn around_marks(text: &str, offsets: &[usize], sizes: Sizes, mut f: impl FnMut(u64, usize, usize)) {
  if offsets.last() == Some(&usize::MAX) {
    windows(text, sizes.window, sizes.window_power, |hash, start, end| {
      f(hash, start, end);
      true
    });
    return;
  }
  let mut stretch: Option<(usize, usize)> = None;
  for &at in offsets {
    let (Some(head), Some(tail)) = (text.get(..at), text.get(at..)) else { continue };
    // The window starting `per_window − 1` characters before the mark (or the text's start)…
    let from = match sizes.per_window.checked_sub(2) {
      None => at,
      Some(back) => head.char_indices().rev().nth(back).map_or(0, |(i, _)| i),
    };
    // … to the end of the window starting at the mark (or the text's end).
    let to = tail.char_indices().nth(sizes.window).map_or(text.len(), |(i, _)| at + i);
    stretch = match stretch {
      Some((s, e)) if from <= e => Some((s, e.max(to))),
      Some((s, e)) => {
        hash_stretch(text, s, e, sizes, &mut f);
        Some((from, to))
      }
      None => Some((from, to)),
    };
  }
  if let Some((s, e)) = stretch {
    hash_stretch(text, s, e, sizes, &mut f);
  }
}

fn hash_stretch(
  text: &str,
  s: usize,
  e: usize,
  sizes: Sizes,
  f: &mut impl FnMut(u64, usize, usize),
) {
  if let Some(part) = text.get(s..e) {
    windows(part, sizes.window, sizes.window_power, |hash, start, end| {
      f(hash, s + start, s + end);
      true
    });
  }
}

/// A one-bit-per-slot filter of 32-bit hashes: most probes miss, and a bit test answers them
/// without a search.
struct Filter {
  bits: Vec<u64>,
  mask: usize,
}

impl Filter {
  fn new(hashes: impl Iterator<Item = u32>, count: usize) -> Filter {
    let slots = (count.max(1) * 16).next_power_of_two().max(64);
    let mut filter = Filter { bits: vec![0; slots / 64], mask: slots - 1 };
    for h in hashes {
      let bit = (h as usize) & filter.mask;
      if let Some(w) = filter.bits.get_mut(bit / 64) {
        *w |= 1 << (bit % 64);
      }
    }
    filter
  }

  fn may_hold(&self, hash: u32) -> bool {
    let bit = (hash as usize) & self.mask;
    self.bits.get(bit / 64).is_some_and(|w| w & (1 << (bit % 64)) != 0)
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
    assert_eq!(index.len(), 3);
    // "abcdef", "bcdefg", "cdefgh" in all three texts.
    let probe = "abcdefgh";
    let found = index.matches(&[(probe, &Marks::new(probe, 6))]);
    assert_eq!(found.shared(0).len(), 3);
    assert!(found.shared(0).iter().all(|&w| found.tags(w) == [1, 2, 4]));
    assert_eq!(found.tags(usize::MAX), &[] as &[usize]);
    assert_eq!(found.shared(1), &[] as &[usize]);
  }

  #[test]
  fn texts_shorter_than_the_minimum_index_nothing() {
    let mut index = SpanIndex::new(40);
    index.add("a short argument", 1);
    assert!(index.is_empty());
    assert!(!index.shares_span_above("a short argument", 0));
    assert_eq!(SpanIndex::new(0).min_chars(), 1);
    assert!(Marks::new("a short argument", 40).is_empty());
  }

  /// A small deterministic generator (xorshift), for texts over tiny alphabets where spans of
  /// every length repeat.
  struct Rng(u64);

  impl Rng {
    fn next(&mut self) -> u64 {
      self.0 ^= self.0 << 13;
      self.0 ^= self.0 >> 7;
      self.0 ^= self.0 << 17;
      self.0
    }

    fn text(&mut self, alphabet: &[char], max_len: u64) -> String {
      let len = self.next() % max_len.max(1);
      (0..len).map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize]).collect()
    }
  }

  /// Every shared window, by content, with the tags of the indexed texts containing it.
  fn naive_windows(
    indexed: &[(String, usize)],
    probe: &str,
    min: usize,
  ) -> Vec<(String, Vec<usize>)> {
    let chars: Vec<char> = probe.chars().collect();
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for w in chars.windows(min.max(1)) {
      let span: String = w.iter().collect();
      let mut tags: Vec<usize> =
        indexed.iter().filter(|(t, _)| t.contains(span.as_str())).map(|&(_, tag)| tag).collect();
      tags.sort_unstable();
      tags.dedup();
      if !tags.is_empty() && !out.iter().any(|(s, _)| *s == span) {
        out.push((span, tags));
      }
    }
    out.sort();
    out
  }

  #[test]
  fn marks_find_exactly_the_windows_a_full_scan_finds() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let alphabets: [&[char]; 4] =
      [&['a', 'b'], &['a', 'b', 'c', ' '], &['x', 'é', '東', '🚀'], &['a', 'a', 'a', 'b']];
    for round in 0..400 {
      let min = [1, 2, 3, 4, 5, 7, 8, 12, 13, 40][round % 10];
      let alphabet = alphabets[(round / 10) % alphabets.len()];
      let indexed: Vec<(String, usize)> =
        (0..1 + rng.next() % 4).map(|i| (rng.text(alphabet, 120), (i as usize) * 3 % 5)).collect();
      let probes: Vec<String> = (0..1 + rng.next() % 4)
        .map(|_| {
          // Some probes copy a stretch of an indexed text into noise.
          let mut p = rng.text(alphabet, 90);
          if let Some((t, _)) = indexed.get((rng.next() % 4) as usize) {
            let cs: Vec<char> = t.chars().collect();
            let from = (rng.next() as usize) % (cs.len() + 1);
            let to = (from + (rng.next() as usize) % 60).min(cs.len());
            p.extend(&cs[from..to]);
            p.push_str(&rng.text(alphabet, 30));
          }
          p
        })
        .collect();
      let mut index = SpanIndex::new(min);
      for (t, tag) in &indexed {
        index.add(t.as_str(), *tag);
      }
      let marks: Vec<Marks> = probes.iter().map(|p| Marks::new(p, min)).collect();
      let pairs: Vec<(&str, &Marks)> = probes.iter().map(String::as_str).zip(&marks).collect();
      let found = index.matches(&pairs);
      let expected: Vec<Vec<(String, Vec<usize>)>> =
        probes.iter().map(|probe| naive_windows(&indexed, probe, min)).collect();
      for (p, probe) in probes.iter().enumerate() {
        // The same windows, with the same tags: compared as sorted lists of tag lists…
        let mut got: Vec<Vec<usize>> =
          found.shared(p).iter().map(|&w| found.tags(w).to_vec()).collect();
        got.sort();
        let mut want: Vec<Vec<usize>> = expected[p].iter().map(|(_, tags)| tags.clone()).collect();
        want.sort();
        assert_eq!(got, want, "round {round}, min {min}, probe {probe:?}");
        // … and one id per content: probes share as many ids as they share windows.
        for (q, other) in expected.iter().enumerate() {
          let ids = found.shared(p).iter().filter(|w| found.shared(q).contains(w)).count();
          let spans = expected[p].iter().filter(|(s, _)| other.iter().any(|(o, _)| o == s)).count();
          assert_eq!(ids, spans, "round {round}, probes {p} and {q}");
        }
      }
    }
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
