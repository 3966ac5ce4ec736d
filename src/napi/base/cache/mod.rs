//! The message cache: its Rust side here, plain Rust (tested with the core, without napi): the
//! bounded maps from cache id, from content and from JSON text to parsed messages, with their
//! probation maps and ghosts; the outlines of recent JSON bodies; the kept layouts and analyses
//! of recent conversations ([`LayoutMemo`]). Its JavaScript side (the `WeakMap` snapshots, the
//! content index, the finds by position) is `helpers.rs`; each environment's cache is held by
//! `instance.rs`.
//!
//! # The message cache
//!
//! An agent calls the trimmer every turn on a history that only grows. Reading every message
//! across the boundary each time costs more than the trimming itself (strings are copied out
//! of V8 one by one), so each message object read once is remembered:
//!
//! - JavaScript side, a `WeakMap` from the caller's message object to its cache id and a
//!   snapshot of every value the reader reads (the fields, and inside content parts and tool
//!   calls the fields the formats use), compared by identity (`===`) on the next call. Any
//!   replaced string, part, call or array, or a changed length, makes the message read afresh.
//!   The snapshot holds no copy: strings are compared by identity, which V8 does in O(1). The
//!   entry dies with the message object.
//! - Rust side, a bounded two-generation map from cache id to the parsed message (with its
//!   memoised token counts), [`DEFAULT_MESSAGE_CACHE_CAPACITY`] messages by default.
//! - By content, a second map from each parsed message's [`Message::fingerprint`] (and format) to
//!   it: a new object equal to a message read before (a server parses the same history afresh
//!   on every request) is read across the boundary, then shares the held message, with the
//!   values memoised on it (token counts, file facts, cuts). Compared in full on a hit.
//! - JavaScript side, a content index of the messages whose content came back (found by the
//!   map above): what the reader reads from each (strings, numbers, flags, the shape of its
//!   parts and calls, object-valued arguments as their JSON text; no object of the caller's),
//!   found by a probe (its first text) and compared by value. A new object equal to one of them
//!   is not read across the boundary at all: the scan gives its message's id, negated. Two
//!   generations, each holding at most a quarter of the cache's byte bound in strings. The
//!   finds of the last four scans are kept by position too: the next request of a
//!   conversation holds the same messages at the same places, so each new object is first
//!   compared with the find at its place there (no probe to build, no map to look in, and no
//!   limit of a few messages per probe), then looked up.
//!
//! - For JSON bodies (the API floor's `json.rs`), a map from each message's text to its parsed message,
//!   and the last few bodies outlined ([`RecentBody`]): where each message sat, with a copy of
//!   the body's text. The next request of a conversation starts with the same bytes as its
//!   previous one, so its leading messages are found in place after one comparison of the two
//!   texts, without scanning, hashing or comparing them one by one; the messages rewritten then
//!   (a cut, a placeholder) are written again from the same text when their decision did not
//!   change.
//!
//! Admission: a message object seen for the first time goes to a probation map, an eighth of
//! the bounds; it moves to the main map (the rest of the bounds) when the same object comes
//! back. A server that parses every request afresh brings objects that never come back: they
//! churn the probation map only, so they neither hold more than an eighth of the bounds nor
//! evict the working set of the callers that do reuse their objects. The content map has the
//! same bounds and policy: content seen once waits in its probation part, content that comes
//! back (the next request's copy of the same history) moves to its main part; the JavaScript
//! index takes only content that came back. The keys probation evicts before they come back are
//! remembered alone, so a working set larger than probation (a long history seen whole at
//! once) is admitted when it comes back instead of evicting itself forever.
//!
//! A message mutated in place deeper than what is snapshotted (e.g. a key inside a tool call's
//! `arguments` object, or a field added to an existing content part or tool call) is not
//! noticed: replace the object, or empty the cache with `setMessageCacheCapacity`. Changing or
//! deleting a field the reader read is noticed at any depth it reads.
#![cfg_attr(test, allow(dead_code))]

#[cfg(not(test))]
pub(crate) mod helpers;

use std::sync::Arc;

use crate::model::format::{Format, Signals};
use crate::model::generations::GenerationalMap;
use crate::model::json_body::{Body, Outline};
use crate::model::message::Message;

/// Default bound of the message cache, in messages.
pub(crate) const DEFAULT_MESSAGE_CACHE_CAPACITY: usize = 100_000;

/// Default bound of the message cache, in bytes of [`Message::footprint`].
pub(crate) const DEFAULT_MESSAGE_CACHE_BYTES: usize = 64 << 20;

/// A parsed message in the cache.
pub(crate) struct Cached {
  /// The format it was parsed in.
  pub format: Format,
  /// The format-specific shapes it shows, for `auto` detection.
  pub signals: Signals,
  /// The parsed message, with its memoised counts.
  pub message: Message,
}

/// A main map and its probation map: an entry seen for the first time goes to probation (an
/// eighth of the bounds) and moves to the main map when it is asked for again (see the module
/// docs). The keys probation evicted before they were asked for again are remembered alone
/// (ghosts, a key each, at most a quarter of the entry bound): one stored again is admitted to
/// the main map, since it came back. A working set larger than probation (a long history
/// first seen whole, e.g. by a server started mid-conversation) evicts itself from probation
/// before any of it comes back; without the ghosts it would never be admitted.
pub(crate) struct Admission<K, V> {
  main: GenerationalMap<K, V, rustc_hash::FxBuildHasher>,
  probation: GenerationalMap<K, V, rustc_hash::FxBuildHasher>,
  /// `None` for keys that are never stored twice (the identity map's ids).
  ghosts: Option<GenerationalMap<K, (), rustc_hash::FxBuildHasher>>,
}

/// The ghosts' share of the entry bound: one part in this many.
const GHOST_SHARE: usize = 4;

impl<K: std::hash::Hash + Eq + Clone, V: Clone> Admission<K, V> {
  /// An empty admission; `ghosts` when a key evicted from probation may be stored again (a
  /// text, a content fingerprint), not for keys made once (ids).
  fn new(ghosts: bool) -> Self {
    Admission {
      main: GenerationalMap::new(0, 0),
      probation: GenerationalMap::new(0, 0),
      ghosts: ghosts.then(|| GenerationalMap::new(0, 0)),
    }
  }

  /// The value of `key`, if held (moved out of probation: it came back).
  fn get(&mut self, key: &K) -> Option<V> {
    self.main.get(key).or_else(|| {
      let (value, weight) = self.probation.remove(key)?;
      self.main.insert(key.clone(), value.clone(), weight);
      Some(value)
    })
  }

  /// Stores a value; `seen` sends it to the main map (it was read before), else it goes to
  /// probation unless it is too heavy for it. False when nothing was stored.
  fn insert(&mut self, key: K, value: V, weight: usize, seen: bool) -> bool {
    let seen = seen || self.ghosts.as_mut().is_some_and(|g| g.remove(&key).is_some());
    // A key is held in one map only: a stale value in the other would shadow this one (the
    // main map is looked in first) or come back after it.
    if !seen && self.probation.admits(weight) {
      self.main.remove(&key);
      match &mut self.ghosts {
        Some(ghosts) => self.probation.insert_evicting(key, value, weight, |k| {
          ghosts.insert(k, (), 1);
        }),
        None => self.probation.insert(key, value, weight),
      }
    } else {
      self.probation.remove(&key);
      self.main.insert(key, value, weight)
    }
  }

  fn reset(&mut self, capacity: usize, max_bytes: usize) {
    let (probation_entries, probation_bytes) =
      (capacity / PROBATION_SHARE, max_bytes / PROBATION_SHARE);
    self.probation.reset(probation_entries, probation_bytes);
    self.main.reset(capacity - probation_entries, max_bytes - probation_bytes);
    if let Some(ghosts) = &mut self.ghosts {
      let bound = if max_bytes == 0 { 0 } else { capacity / GHOST_SHARE };
      ghosts.reset(bound, bound);
    }
  }

  fn len(&self) -> usize {
    self.main.len() + self.probation.len()
  }

  fn weight(&self) -> usize {
    self.main.weight() + self.probation.weight()
  }
}

/// The bounded map from cache id to parsed message, weighed by [`Message::footprint`], with
/// its probation map for objects seen once (see the module docs).
pub(crate) struct MessageCache {
  entries: Admission<u64, Arc<Cached>>,
  /// The messages of JSON bodies, by their text (see [`ContentKey`]).
  bodies: Admission<ContentKey, Arc<BodyEntry>>,
  /// The JSON bodies read last, the most recent first (at most [`RECENT_BODIES`]).
  recent: Vec<RecentBody>,
  /// The messages read from objects, by their content ([`Message::fingerprint`]) and format (an
  /// equal message read in another format would displace it): a fresh object equal to one
  /// read before (a history parsed afresh on every request) reuses its parsed message and
  /// everything memoised on it.
  contents: Admission<(u64, Format), Arc<Cached>>,
  capacity: usize,
  max_bytes: usize,
  next_id: u64,
  hits: u64,
  misses: u64,
  body_hits: u64,
  body_misses: u64,
  recent_body_hits: u64,
  content_hits: u64,
}

/// How many recent JSON bodies the cache outlines ([`RecentBody`]): a server interleaving the
/// requests of a few conversations finds each one's previous body.
const RECENT_BODIES: usize = 4;

/// A JSON body read lately: where its messages were, with a copy of its text, and the messages
/// read there. The next request of its conversation starts with the same bytes, so its leading
/// messages are found in place, without scanning, hashing or comparing them one by one
/// ([`Body::parse_after`](crate::model::json_body::Body::parse_after)).
pub(crate) struct RecentBody {
  pub outline: Outline,
  /// Its messages, in order.
  pub messages: Vec<BodyMessage>,
  /// Its rewritten messages, by index: the next body rewrites the same message the same way
  /// when its decision did not change.
  pub rewrites: Vec<Rewrite>,
}

/// A message of a body as read.
#[derive(Clone)]
pub(crate) struct BodyMessage {
  /// The message, parsed.
  pub cached: Arc<Cached>,
  /// Its text's key in the cache.
  pub key: ContentKey,
  /// Whether the cache holds it in its main map: it came back since it was first read. A
  /// message found in place in a recent body is not looked up by its text, so the first such
  /// find moves it there ([`MessageCache::came_back`]): the next request of its conversation
  /// finds it by its text even once the recent bodies no longer hold its body.
  pub came_back: bool,
}

/// A message of a body rewritten with a replacement ([`crate::output::json_body::rewrite`]).
pub(crate) struct Rewrite {
  /// Its index in the body.
  pub index: usize,
  /// The format it was written in.
  pub format: Format,
  /// The replacement's content.
  pub content: std::sync::Arc<str>,
  /// The replacement's texts of the message's tool results, when replaced one by one.
  pub results: Option<crate::plan::ResultTexts>,
  /// The message written.
  pub json: String,
}

/// The probation map's share of the bounds: one part in this many.
const PROBATION_SHARE: usize = 8;

/// A message of a JSON body, found by its text: a fast hash of the bytes and their length.
/// The entry holds the bytes, compared in full on every hit, so a collision is a miss, never a
/// wrong message.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ContentKey {
  hash: u64,
  len: usize,
}

impl ContentKey {
  pub fn of(text: &str) -> ContentKey {
    use std::hash::{BuildHasher, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(text.as_bytes());
    ContentKey { hash: h.finish(), len: text.len() }
  }
}

/// A parsed message of a JSON body, with its text.
pub(crate) struct BodyEntry {
  /// The message's JSON text.
  pub text: Box<str>,
  /// The message, parsed in `cached.format`.
  pub cached: Arc<Cached>,
}

impl MessageCache {
  /// An empty cache holding nothing until [`Instance::reset_cache`] sets its bounds.
  pub(crate) fn new() -> Self {
    MessageCache {
      entries: Admission::new(false),
      bodies: Admission::new(true),
      recent: Vec::new(),
      contents: Admission::new(true),
      capacity: 0,
      max_bytes: 0,
      next_id: 1,
      hits: 0,
      misses: 0,
      body_hits: 0,
      body_misses: 0,
      recent_body_hits: 0,
      content_hits: 0,
    }
  }

  /// The entry of `id`, if still held (moved out of probation: it came back), counted as found
  /// by content when `by_content` (a new object the content index found equal to its message),
  /// else as found by identity.
  pub fn get(&mut self, id: u64, by_content: bool) -> Option<Arc<Cached>> {
    let entry = self.entries.get(&id);
    if entry.is_some() {
      *(if by_content { &mut self.content_hits } else { &mut self.hits }) += 1;
    }
    entry
  }

  /// Stores an entry and returns its new id (0 when it is not kept: the cache is disabled or
  /// the message alone weighs more than half the main map's byte bound). `seen` says that its
  /// object was read before (on an earlier call, then evicted, or in another format): it goes
  /// to the main map; a first sighting goes to probation, unless it is too heavy for it.
  pub fn insert(&mut self, entry: Arc<Cached>, seen: bool) -> u64 {
    self.misses += 1;
    let id = self.next_id;
    let bytes = entry.message.footprint();
    if !self.entries.insert(id, entry, bytes, seen) {
      return 0;
    }
    self.next_id += 1;
    id
  }

  /// A held message equal to `message`, parsed in `format` from an object showing `signals`,
  /// if any (a hit in probation moves it to the main map: the same content came back). The
  /// messages are compared in full, so a fingerprint collision is a miss, never a wrong message.
  pub fn get_content(
    &mut self,
    format: Format,
    signals: Signals,
    message: &Message,
  ) -> Option<Arc<Cached>> {
    let entry = self
      .contents
      .get(&(message.fingerprint(), format))
      .filter(|e| e.signals == signals && e.message == *message);
    if entry.is_some() {
      self.content_hits += 1;
    }
    entry
  }

  /// Holds `entry` by its content, for [`MessageCache::get_content`]; `seen` when its object
  /// was read before.
  pub fn insert_content(&mut self, entry: Arc<Cached>, seen: bool) {
    let bytes = entry.message.footprint();
    self.contents.insert((entry.message.fingerprint(), entry.format), entry, bytes, seen);
  }

  /// The message of a JSON body whose text is `text`, if held (a hit in probation moves it to
  /// the main map: the same text came back).
  pub fn get_text(&mut self, key: ContentKey, text: &str) -> Option<Arc<BodyEntry>> {
    let entry = self.bodies.get(&key).filter(|e| &*e.text == text);
    match entry {
      Some(_) => self.body_hits += 1,
      None => self.body_misses += 1,
    }
    entry
  }

  /// Moves the message of a JSON body whose text's key is `key` out of probation, if it is
  /// there: it came back, found in place in a recent body.
  pub fn came_back(&mut self, key: ContentKey) {
    self.bodies.get(&key);
  }

  /// Stores the message of a JSON body; `seen` when its text was held before in another
  /// format (it came back).
  pub fn insert_text(&mut self, key: ContentKey, entry: Arc<BodyEntry>, seen: bool) {
    let bytes = entry.text.len() + entry.cached.message.footprint();
    self.bodies.insert(key, entry, bytes, seen);
  }

  /// Takes out the recent body sharing the most leading messages with `text`, if any, with
  /// the body parsed ([`Body::parse_after`](crate::model::json_body::Body::parse_after)) and
  /// how many messages it gave; [`MessageCache::keep_recent`] puts it back.
  ///
  /// # Errors
  ///
  /// Those of [`Body::parse`](crate::model::json_body::Body::parse).
  pub fn parse_body<'t>(
    &mut self,
    text: &'t str,
  ) -> crate::error::Result<(Body<'t>, Option<(RecentBody, usize)>)> {
    let outlines: Vec<&Outline> = self.recent.iter().map(|r| &r.outline).collect();
    let (body, used) = Body::parse_after(text, &outlines)?;
    Ok((
      body,
      used.map(|(which, shared)| {
        self.recent_body_hits += shared as u64;
        (self.recent.remove(which), shared)
      }),
    ))
  }

  /// Outlines `body`, whose messages are `messages` and rewritten ones `rewrites`, as the most
  /// recent body, in the slot [`MessageCache::parse_body`] took out (with the messages it
  /// shared) or in the least recent one. Nothing is kept while the cache is disabled, or for a
  /// body over an eighth of its byte bound.
  pub fn keep_recent(
    &mut self,
    body: &Body<'_>,
    messages: Vec<BodyMessage>,
    rewrites: Vec<Rewrite>,
    slot: Option<(RecentBody, usize)>,
  ) {
    if self.capacity == 0 || body.text_len() > self.max_bytes / PROBATION_SHARE {
      return;
    }
    let (mut slot, shared) = match slot {
      Some(slot) => slot,
      None if self.recent.len() >= RECENT_BODIES => {
        (self.recent.pop().expect("at least one held"), 0)
      }
      None => {
        (RecentBody { outline: Outline::default(), messages: Vec::new(), rewrites: Vec::new() }, 0)
      }
    };
    slot.outline.set(body, shared);
    slot.messages = messages;
    slot.rewrites = rewrites;
    self.recent.insert(0, slot);
  }

  /// Its statistics (the main and probation maps together).
  pub fn stats(&self) -> MessageCacheFigures {
    MessageCacheFigures {
      entries: self.entries.len(),
      capacity: self.capacity,
      bytes: self.entries.weight(),
      max_bytes: self.max_bytes,
      hits: self.hits,
      misses: self.misses,
      body_entries: self.bodies.len(),
      body_bytes: self.bodies.weight(),
      body_hits: self.body_hits,
      body_misses: self.body_misses,
      recent_body_hits: self.recent_body_hits,
      recent_bodies: self.recent.len(),
      recent_body_bytes: self.recent.iter().map(|r| r.outline.text_len()).sum(),
      content_entries: self.contents.len(),
      content_bytes: self.contents.weight(),
      content_hits: self.content_hits,
    }
  }

  /// Sets the bounds and empties the cache.
  pub fn reset(&mut self, capacity: usize, max_bytes: usize) {
    self.entries.reset(capacity, max_bytes);
    self.bodies.reset(capacity, max_bytes);
    self.contents.reset(capacity, max_bytes);
    self.capacity = capacity;
    self.max_bytes = max_bytes;
    self.hits = 0;
    self.misses = 0;
    self.body_hits = 0;
    self.body_misses = 0;
    self.recent.clear();
    self.recent_body_hits = 0;
    self.content_hits = 0;
  }
}

/// What [`MessageCache::stats`] reports.
pub(crate) struct MessageCacheFigures {
  pub entries: usize,
  pub capacity: usize,
  pub bytes: usize,
  pub max_bytes: usize,
  pub hits: u64,
  pub misses: u64,
  pub body_entries: usize,
  pub body_bytes: usize,
  pub body_hits: u64,
  pub body_misses: u64,
  pub recent_body_hits: u64,
  pub recent_bodies: usize,
  pub recent_body_bytes: usize,
  pub content_entries: usize,
  pub content_bytes: usize,
  pub content_hits: u64,
}

/// The layouts of the conversations the last synchronous strategy calls analysed (their
/// tokens, steps, tool-call pairs and units), the last used first, one extended in place when
/// the next call's messages start with its messages, as an agent loop's growing history does:
/// the history is not paired and grouped again on every turn, and a server answering a few
/// conversations in turn keeps each one's. Each holds its conversation's parsed messages (shared
/// with the message cache), so a message matched by pointer is the very message it analysed;
/// emptying the message cache empties it.
#[derive(Default)]
pub(crate) struct LayoutMemo {
  kept: Vec<KeptLayout>,
  /// Calls whose layout was a kept one, extended, since the last [`LayoutMemo::clear`].
  pub extensions: u64,
}

/// How many conversations' layouts a [`LayoutMemo`] keeps (as many as the recent JSON bodies).
pub(crate) const LAYOUT_MEMO_CONVERSATIONS: usize = 4;

/// One conversation's layout, with the messages it was made of, and what the strategies read of
/// each message that depends only on the messages up to it (its file operation, the results it
/// supersedes), extended when a call asks for them ([`LayoutMemo::analysed`]).
struct KeptLayout {
  encoding: crate::model::tokens::Encoding,
  messages: Vec<Arc<Cached>>,
  layout: crate::model::conversation::Layout,
  analysis: crate::analysis::growing::GrowingAnalysis,
}

/// A kept conversation's layout with its file operations and supersessions, for exactly the
/// messages of the call: what `task::conversation` gives the strategies, so that a
/// history trimmed turn after turn is not searched for file operations and supersessions again.
#[derive(Clone, Copy)]
pub(crate) struct Kept<'a> {
  /// The layout.
  pub layout: &'a crate::model::conversation::Layout,
  /// Each message's file operation and the results a newer one supersedes.
  pub analysis: &'a crate::analysis::growing::GrowingAnalysis,
}

impl KeptLayout {
  /// Whether `messages` are this layout's messages (the same ones), then maybe more.
  fn extends_to<M: HoldsCached>(
    &self,
    messages: &[M],
    encoding: crate::model::tokens::Encoding,
  ) -> bool {
    self.encoding == encoding
      && self.messages.len() <= messages.len()
      && self.messages.iter().zip(messages).all(|(held, m)| Arc::ptr_eq(held, m.cached()))
  }
}

/// What holds a parsed message of the cache: the messages of an object call
/// (`Arc<Cached>`) or of a JSON body ([`BodyMessage`]), which a [`LayoutMemo`] reads alike.
pub(crate) trait HoldsCached {
  /// The parsed message.
  fn cached(&self) -> &Arc<Cached>;
}

impl HoldsCached for Arc<Cached> {
  fn cached(&self) -> &Arc<Cached> {
    self
  }
}

impl HoldsCached for BodyMessage {
  fn cached(&self) -> &Arc<Cached> {
    &self.cached
  }
}

impl LayoutMemo {
  /// The layout of `messages` counted in `encoding`: the longest kept one that they extend,
  /// extended by the messages after it, else one built anew (in place of the least recently
  /// used when [`LAYOUT_MEMO_CONVERSATIONS`] are kept).
  pub fn layout<M: HoldsCached>(
    &mut self,
    messages: &[M],
    encoding: crate::model::tokens::Encoding,
  ) -> &crate::model::conversation::Layout {
    let extended = (0..self.kept.len())
      .filter(|&k| self.kept[k].extends_to(messages, encoding))
      .max_by_key(|&k| self.kept[k].messages.len());
    let mut kept = match extended {
      Some(k) => {
        self.extensions += 1;
        self.kept.remove(k)
      }
      None => {
        self.kept.truncate(LAYOUT_MEMO_CONVERSATIONS - 1);
        KeptLayout {
          encoding,
          messages: Vec::new(),
          layout: Default::default(),
          analysis: Default::default(),
        }
      }
    };
    for m in &messages[kept.messages.len()..] {
      let cached = m.cached();
      let tokens = crate::model::tokens::message_tokens(&cached.message, encoding);
      kept.layout.push(&cached.message, tokens);
      kept.messages.push(Arc::clone(cached));
    }
    self.kept.insert(0, kept);
    &self.kept[0].layout
  }

  /// [`LayoutMemo::layout`] with the file operations and supersessions of `messages`, found
  /// for the messages the kept conversation had not analysed yet.
  pub fn analysed<M: HoldsCached>(
    &mut self,
    messages: &[M],
    encoding: crate::model::tokens::Encoding,
  ) -> Kept<'_> {
    self.layout(messages, encoding);
    let KeptLayout { messages: held, layout, analysis, .. } = &mut self.kept[0];
    if analysis.len() < held.len() {
      let refs: Vec<&crate::model::message::Message> = held.iter().map(|c| &c.message).collect();
      let conv = crate::model::conversation::Conversation::with_layout(refs, encoding, layout);
      analysis.extend(&conv);
    }
    Kept { layout, analysis }
  }

  /// Forgets the layouts, lets their messages go, and counts from 0.
  pub fn clear(&mut self) {
    *self = LayoutMemo::default();
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::analysis::file_ops::file_operations;
  use crate::model::conversation::Conversation;
  use crate::model::tokens::Encoding;
  use crate::testing::{call, result, user};

  fn cached(message: Message) -> Arc<Cached> {
    Arc::new(Cached { format: Format::OpenAi, signals: Signals::default(), message })
  }

  /// A key seen once waits in probation (an eighth of the bounds) and moves to the main map
  /// when asked for again; the keys probation evicted are remembered and admitted when stored
  /// again.
  #[test]
  fn admission_holds_first_sightings_in_probation() {
    let mut a: Admission<u64, u64> = Admission::new(true);
    a.reset(80, 80_000);
    for k in 0..10 {
      assert!(a.insert(k, k * 10, 1, false));
    }
    // Probation holds 10 entries at most; they are all there.
    assert_eq!((a.main.len(), a.probation.len()), (0, 10));
    assert_eq!(a.get(&3), Some(30));
    assert_eq!((a.main.len(), a.probation.len()), (1, 9));
    // A flood of first sightings churns probation only.
    for k in 100..1_000 {
      a.insert(k, k, 1, false);
    }
    assert_eq!(a.get(&3), Some(30), "the main map kept what came back");
    assert!(a.probation.len() <= 10 && a.main.len() == 1);
    // A key probation evicted is a ghost: stored again, it goes to the main map.
    let mut a: Admission<u64, u64> = Admission::new(true);
    a.reset(80, 80_000);
    // Probation's generations hold 5 entries each: the 11th sighting evicts the first 5.
    for k in 0..=10 {
      a.insert(k, k, 1, false);
    }
    assert_eq!(a.probation.len(), 6);
    a.insert(0, 7, 1, false);
    assert_eq!(a.main.get(&0), Some(7));
    a.insert(20, 7, 1, false);
    assert_eq!(a.main.get(&20), None, "never seen before: probation");
    // `seen` sends an entry to the main map at once.
    a.insert(5_000, 1, 1, true);
    assert_eq!(a.main.get(&5_000), Some(1));
  }

  /// Ids are handed out from 1, found by id, counted as hits or misses; a disabled cache keeps
  /// nothing (id 0).
  #[test]
  fn messages_are_found_by_id_and_by_content() {
    let mut cache = MessageCache::new();
    assert_eq!(cache.insert(cached(user("a")), false), 0, "disabled until its bounds are set");
    cache.reset(1_000, 1 << 20);
    let id = cache.insert(cached(user("hello")), false);
    assert!(id > 0);
    assert_eq!(
      cache.get(id, false).map(|c| c.message.content_text().into_owned()),
      Some("hello".into())
    );
    assert!(cache.get(id + 1, false).is_none());
    // By content: an equal message parsed afresh finds the held one; another format does not.
    let held = cached(user("same"));
    cache.insert_content(Arc::clone(&held), false);
    let found = cache.get_content(Format::OpenAi, Signals::default(), &user("same"));
    assert!(found.is_some_and(|f| Arc::ptr_eq(&f, &held)));
    assert!(cache.get_content(Format::Anthropic, Signals::default(), &user("same")).is_none());
    assert!(cache.get_content(Format::OpenAi, Signals::default(), &user("other")).is_none());
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses, stats.content_hits), (1, 1, 1));
    cache.reset(1_000, 1 << 20);
    assert!(cache.get(id, false).is_none(), "a reset empties it");
  }

  /// A JSON body's messages are found by their text, compared in full; the next body of the
  /// same conversation finds its leading messages in place in the outline of the last one.
  #[test]
  fn body_messages_are_found_by_text_and_in_place() {
    let mut cache = MessageCache::new();
    cache.reset(1_000, 1 << 20);
    let text = r#"{"role":"user","content":"hi"}"#;
    let key = ContentKey::of(text);
    let entry = Arc::new(BodyEntry { text: text.into(), cached: cached(user("hi")) });
    cache.insert_text(key, entry, false);
    assert!(cache.get_text(key, text).is_some());
    assert!(cache.get_text(key, r#"{"role":"user","content":"ho"}"#).is_none());
    let first = r#"[{"role":"user","content":"a"},{"role":"user","content":"b"}]"#;
    let (body, slot) = cache.parse_body(first).expect("a valid body");
    assert!(slot.is_none());
    let messages: Vec<BodyMessage> = body
      .messages()
      .iter()
      .map(|m| BodyMessage { cached: cached(user(m)), key: ContentKey::of(m), came_back: false })
      .collect();
    cache.keep_recent(&body, messages, Vec::new(), slot);
    let next = r#"[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]"#;
    let (body, slot) = cache.parse_body(next).expect("a valid body");
    assert_eq!(body.messages().len(), 3);
    let (recent, shared) = slot.expect("the last body is outlined");
    assert_eq!((shared, recent.messages.len()), (2, 2));
    assert_eq!(cache.stats().recent_body_hits, 2);
  }

  /// A kept layout is extended by the messages after it, and is the layout of all of them; its
  /// analysis is the one a fresh conversation finds.
  #[test]
  fn kept_layouts_are_extended_in_place() {
    let messages: Vec<Arc<Cached>> = [
      user("fix it"),
      call("1", "read_file", r#"{"path":"a.rs"}"#),
      result("1", "fn main() {}"),
      call("2", "write_file", r#"{"path":"a.rs","content":"x"}"#),
      result("2", "ok"),
    ]
    .into_iter()
    .map(cached)
    .collect();
    let encoding = Encoding::O200kBase;
    let mut memo = LayoutMemo::default();
    for end in 1..=messages.len() {
      let layout = memo.layout(&messages[..end], encoding).clone();
      let refs: Vec<&Message> = messages[..end].iter().map(|c| &c.message).collect();
      let fresh = Conversation::from_refs(refs.clone(), encoding);
      assert_eq!(layout.total_tokens(encoding), fresh.total_tokens());
      let kept = memo.analysed(&messages[..end], encoding);
      let given = kept.analysis.give(Conversation::with_layout(refs, encoding, kept.layout));
      assert_eq!(file_operations(&given), file_operations(&fresh));
    }
    assert_eq!(memo.extensions, 2 * messages.len() as u64 - 1);
    memo.clear();
    assert_eq!(memo.extensions, 0);
  }
}
