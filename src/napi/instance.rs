//! Per-environment state of the addon (the main thread and each worker have their own): the
//! JavaScript helpers compiled once, and the cache of parsed messages.
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
//! - For JSON bodies ([`super::json`]), a map from each message's text to its parsed message,
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
//! noticed: replace the object, or empty the cache with `setMessageCacheCapacity`. Changing or deleting a field the
//! reader read is noticed at any depth it reads.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::Env;

use crate::model::format::{Format, Signals};
use crate::model::generations::GenerationalMap;
use crate::model::json_body::{
  Body, Outline, MAX_DEPTH, MESSAGE_FIELDS, NESTED_FIELDS, SERIALISED_FIELDS,
};
use crate::model::message::Message;

/// Default bound of the message cache, in messages.
pub(crate) const DEFAULT_MESSAGE_CACHE_CAPACITY: usize = 100_000;
/// Default bound of the message cache, in bytes of [`Message::footprint`].
pub(crate) const DEFAULT_MESSAGE_CACHE_BYTES: usize = 64 << 20;

/// The cache helpers' factory: called with the reader's lists (`json_body`'s `MESSAGE_FIELDS`,
/// `NESTED_FIELDS`, `SERIALISED_FIELDS` and `MAX_DEPTH`), so that what the helpers compare is
/// what the reader reads.
const CACHE_HELPERS: &str = r#"(function contextTrimMessageCache(FIELDS, NESTED, SERIALISED_FIELDS, MAX_DEPTH, KNOWN_PARTS) {
  const seen = new WeakMap();
  // Calls `f(value, acc)` on each message field the reader reads, in its order, and returns the
  // last `acc`. Each field is loaded at its own site rather than by a key from a list: V8
  // caches each site's lookup. The list is checked against the reader's once, here; `same` and
  // `sameContent`, the checks made on every message of every call, write the same loads out.
  const LOADED = 'role,content,tool_calls,tool_call_id,name,is_error,isError,_summary,isSummary';
  if (FIELDS.join(',') !== LOADED) throw new Error(`the cache helpers load ${LOADED}, the reader reads ${FIELDS}`);
  function fields(m, f, acc) {
    acc = f(m.role, acc);
    acc = f(m.content, acc);
    acc = f(m.tool_calls, acc);
    acc = f(m.tool_call_id, acc);
    acc = f(m.name, acc);
    acc = f(m.is_error, acc);
    acc = f(m.isError, acc);
    acc = f(m._summary, acc);
    return f(m.isSummary, acc);
  }
  // Appends to `out` every value the reader reads below `v`, to the depth it reads it: for an
  // array its length and elements, for an object how many of the NESTED keys it has, then each
  // such key and its value.
  function walk(v, depth, out) {
    out.push(v);
    if (v === null || typeof v !== 'object' || depth > 6) return;
    if (Array.isArray(v)) {
      out.push(v.length);
      for (let i = 0; i < v.length; i++) walk(v[i], depth + 1, out);
      return;
    }
    const count = out.length;
    out.push(0);
    for (const k of NESTED) {
      if (k in v) {
        out[count]++;
        out.push(k);
        walk(v[k], depth + 1, out);
      }
    }
  }
  function snapshot(m) {
    const out = [];
    fields(m, (v) => walk(v, 0, out), 0);
    return out;
  }
  // Whether `v` still reads as recorded in `snap` from position `at`; returns the next position,
  // or -1 on the first difference. Allocates nothing. Inside nested objects only the keys
  // recorded are read again (a recorded key deleted or given another value is a difference; a
  // key added in place to a nested object is not seen, as documented).
  function check(v, depth, snap, at) {
    if (at < 0 || snap[at] !== v) return -1;
    at++;
    if (v === null || typeof v !== 'object' || depth > 6) return at;
    if (Array.isArray(v)) {
      if (snap[at] !== v.length) return -1;
      at++;
      for (let i = 0; i < v.length && at >= 0; i++) at = check(v[i], depth + 1, snap, at);
      return at;
    }
    const count = snap[at++];
    for (let j = 0; j < count && at >= 0; j++) {
      const k = snap[at];
      at = check(v[k], depth + 1, snap, at + 1);
    }
    return at;
  }
  // `fields` with `check`, written out (as `sameContent` below): no closure per message.
  function same(m, snap) {
    let at = check(m.role, 0, snap, 0);
    at = check(m.content, 0, snap, at);
    at = check(m.tool_calls, 0, snap, at);
    at = check(m.tool_call_id, 0, snap, at);
    at = check(m.name, 0, snap, at);
    at = check(m.is_error, 0, snap, at);
    at = check(m.isError, 0, snap, at);
    at = check(m._summary, 0, snap, at);
    at = check(m.isSummary, 0, snap, at);
    return at === snap.length;
  }
  // The content index: messages whose content came back (a server parses the same history
  // afresh on every request), found by what the reader reads from them, compared here (strings
  // by value, V8's own comparison) so that an equal new object does not cross the boundary.
  // `record` mirrors the reader (read.rs `Reader::value`): inside a message, undefined and
  // non-JSON values read as null, object-valued arguments/input/value as their JSON.stringify
  // text, other objects by their enumerable NESTED keys (for-in, as napi lists them), at most
  // MAX_DEPTH deep. It returns the bytes of the strings recorded; it throws where the reader
  // would fail (too deep), so that such a message is never indexed. Only primitives are
  // recorded: the index holds strings, never the caller's objects.
  const NESTED_SET = new Set(NESTED);
  const SERIALISED = new Set(SERIALISED_FIELDS);
  const ARRAY = {}, OBJECT = {}, TEXT = {};
  // A message's content: an array of parts, each of a type no format reads recorded as its
  // JSON text (the reader reads such a part whole, read.rs `Reader::content`).
  const PARTS = {};
  const KNOWN = new Set(KNOWN_PARTS);
  function unknownPart(p) {
    if (p === null || typeof p !== 'object' || Array.isArray(p)) return false;
    const t = p.type;
    if (typeof t !== 'string' || KNOWN.has(t)) return false;
    return !(t === 'server_tool_use' || t === 'mcp_tool_use' || (t.endsWith('_tool_result') && t !== 'tool_result'));
  }
  // Bytes (a typed array, an ArrayBuffer) are read as media, by their head: never indexed.
  function binary(v) {
    return ArrayBuffer.isView(v) || v instanceof ArrayBuffer;
  }
  function record(v, depth, out, serialised) {
    if (depth > MAX_DEPTH) throw new RangeError('too deep');
    if (v === undefined || v === null) {
      out.push(null);
      return 0;
    }
    switch (typeof v) {
      case 'boolean':
      case 'number':
        out.push(v);
        return 8;
      case 'string':
        out.push(v);
        return v.length * 2;
      case 'object':
        break;
      default:
        out.push(null);
        return 0;
    }
    if (binary(v)) throw new TypeError('binary');
    if (serialised === PARTS) {
      if (Array.isArray(v)) {
        out.push(ARRAY, v.length);
        let bytes = 0;
        for (let i = 0; i < v.length; i++) bytes += record(v[i], depth + 1, out, unknownPart(v[i]));
        return bytes;
      }
      serialised = false;
    }
    if (serialised) {
      const text = JSON.stringify(v) ?? '';
      out.push(TEXT, text);
      return text.length * 2;
    }
    let bytes = 0;
    if (Array.isArray(v)) {
      out.push(ARRAY, v.length);
      for (let i = 0; i < v.length; i++) bytes += record(v[i], depth + 1, out, false);
      return bytes;
    }
    out.push(OBJECT, 0);
    const count = out.length - 1;
    for (const k in v) {
      if (!NESTED_SET.has(k)) continue;
      out[count]++;
      out.push(k);
      bytes += record(v[k], depth + 1, out, SERIALISED.has(k));
    }
    return bytes;
  }
  // Whether `v` reads as recorded in `snap` from `at`: the next position, or -1.
  function compare(v, depth, snap, at, serialised) {
    if (depth > MAX_DEPTH) return -1;
    const r = snap[at];
    // Each kind tested on its own (typeof compared with a literal compiles to a type check;
    // a switch on typeof calls a builtin), strings first: most values are.
    if (typeof v === 'string') return r === v ? at + 1 : -1;
    if (v === undefined || v === null) return r === null ? at + 1 : -1;
    if (typeof v === 'boolean') return r === v ? at + 1 : -1;
    if (typeof v === 'number') return typeof r === 'number' && Object.is(r, v) ? at + 1 : -1;
    if (typeof v !== 'object') return r === null ? at + 1 : -1;
    if (binary(v)) return -1;
    if (serialised === PARTS) {
      if (Array.isArray(v)) {
        if (r !== ARRAY || snap[at + 1] !== v.length) return -1;
        at += 2;
        for (let i = 0; i < v.length && at >= 0; i++) at = compare(v[i], depth + 1, snap, at, unknownPart(v[i]));
        return at;
      }
      serialised = false;
    }
    if (serialised) return r === TEXT && snap[at + 1] === (JSON.stringify(v) ?? '') ? at + 2 : -1;
    if (Array.isArray(v)) {
      if (r !== ARRAY || snap[at + 1] !== v.length) return -1;
      at += 2;
      for (let i = 0; i < v.length && at >= 0; i++) at = compare(v[i], depth + 1, snap, at, false);
      return at;
    }
    if (r !== OBJECT) return -1;
    const count = snap[at + 1];
    at += 2;
    let found = 0;
    for (const k in v) {
      if (!NESTED_SET.has(k)) continue;
      if (found === count || snap[at] !== k) return -1;
      found++;
      at = compare(v[k], depth + 1, snap, at + 1, SERIALISED.has(k));
      if (at < 0) return -1;
    }
    return found === count ? at : -1;
  }
  // A message field: absent (undefined) is recorded apart from null, and a function, symbol or
  // bigint (an error for the reader) is never recorded.
  function recordField(v, out, parts) {
    if (v === undefined) {
      out.push(undefined);
      return 0;
    }
    const t = typeof v;
    if (t === 'function' || t === 'symbol' || t === 'bigint') throw new TypeError('not data');
    return record(v, 1, out, parts);
  }
  function compareField(v, snap, at, parts) {
    if (at < 0) return -1;
    if (typeof v === 'string') return snap[at] === v ? at + 1 : -1;
    if (v === undefined) return at < snap.length && snap[at] === undefined ? at + 1 : -1;
    if (typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint') return -1;
    return compare(v, 1, snap, at, parts);
  }
  function recordMessage(m) {
    const out = [];
    // `fields`, with the content's parts recorded as the reader reads them (PARTS).
    let bytes = recordField(m.role, out, false);
    bytes += recordField(m.content, out, PARTS);
    bytes += recordField(m.tool_calls, out, false);
    bytes += recordField(m.tool_call_id, out, false);
    bytes += recordField(m.name, out, false);
    bytes += recordField(m.is_error, out, false);
    bytes += recordField(m.isError, out, false);
    bytes += recordField(m._summary, out, false);
    bytes += recordField(m.isSummary, out, false);
    return { out, bytes };
  }
  // `fields` with `compareField`, written out: no closure per message, and each call site
  // sees one function.
  function sameContent(m, snap) {
    let at = compareField(m.role, snap, 0, false);
    at = compareField(m.content, snap, at, PARTS);
    at = compareField(m.tool_calls, snap, at, false);
    at = compareField(m.tool_call_id, snap, at, false);
    at = compareField(m.name, snap, at, false);
    at = compareField(m.is_error, snap, at, false);
    at = compareField(m.isError, snap, at, false);
    at = compareField(m._summary, snap, at, false);
    at = compareField(m.isSummary, snap, at, false);
    return at === snap.length;
  }
  // Where to look a message up: its first string of 8 or more characters (its text, a tool
  // result's output), else an id it carries, else its role; a long text by its length, head
  // and tail (a Map hashes its whole key). Equal messages have equal probes.
  const PROBE_KEYS = ['text', 'content', 'output', 'value', 'thinking'];
  function short(text) {
    return text.length <= 64 ? text : `${text.length}:${text.slice(0, 40)}${text.slice(-16)}`;
  }
  function firstText(v, depth) {
    if (typeof v === 'string') return v.length >= 8 ? v : undefined;
    if (v === null || typeof v !== 'object' || depth > 4) return undefined;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const s = firstText(v[i], depth + 1);
        if (s !== undefined) return s;
      }
      return undefined;
    }
    for (const k of PROBE_KEYS) {
      if (k in v) {
        const s = firstText(v[k], depth + 1);
        if (s !== undefined) return s;
      }
    }
    return undefined;
  }
  function probeOf(m) {
    const text = firstText(m.content, 0);
    if (text !== undefined) return short(text);
    if (typeof m.tool_call_id === 'string') return m.tool_call_id;
    const calls = m.tool_calls;
    if (Array.isArray(calls) && calls.length > 0 && calls[0] !== null && typeof calls[0] === 'object' && typeof calls[0].id === 'string') return calls[0].id;
    return String(m.role);
  }
  // Two generations of probe -> [{id, snap, bytes}] (the newest first, at most 4 per probe),
  // each holding at most `bound` bytes of strings; a hit in the previous one moves to the
  // current one. 0 disables the index.
  let bound = 0;
  let current = new Map(), previous = new Map(), currentBytes = 0, generation = 0;
  // Indexes `entry` under `probe` in the current generation (each entry knows its probe and
  // the generation it was last indexed in).
  function index(probe, entry) {
    if (entry.bytes > bound) return;
    if (currentBytes + entry.bytes > bound) {
      previous = current;
      current = new Map();
      currentBytes = 0;
      generation++;
    }
    entry.probe = probe;
    entry.generation = generation;
    const list = current.get(probe);
    if (list === undefined) current.set(probe, [entry]);
    else {
      list.unshift(entry);
      if (list.length > 4) currentBytes -= list.pop().bytes;
    }
    currentBytes += entry.bytes;
  }
  // The entries the last few scans found by content, by position (a request and the next one
  // of the same conversation hold the same messages at the same places), the latest first.
  let recents = [];
  // The last scan's finds, the elements it read and the recent scan they followed.
  let latest = null, latestElements = null, latestFollowed = null;
  // Puts the finds `r` first among the recent ones, in place of `followed`.
  function lead(r, followed) {
    recents = [r, ...recents.filter((x) => x !== followed && x !== r)].slice(0, 4);
  }
  // The find of scan `r` at place `i` if `m` has its content, else null.
  function atPlace(r, i, m) {
    const e = i < r.length ? r[i] : undefined;
    return e !== undefined && sameContent(m, e.snap) ? e : null;
  }
  function lookUp(m) {
    const probe = probeOf(m);
    const list = current.get(probe);
    if (list !== undefined) {
      for (const e of list) if (sameContent(m, e.snap)) return e;
    }
    const old = previous.get(probe);
    if (old !== undefined) {
      for (const e of old) {
        if (sameContent(m, e.snap)) {
          index(probe, e);
          return e;
        }
      }
    }
    return null;
  }
  return {
    // Sets the content index's bound (bytes of strings per generation) and empties it.
    configure(bytes) {
      bound = bytes;
      current = new Map();
      previous = new Map();
      currentBytes = 0;
      recents = [];
      latest = latestElements = latestFollowed = null;
    },
    // [ids, elements]: for each message its cache id if it is remembered and unchanged (or,
    // negated, the id of a message with its content, from the content index), else 0; and a
    // plain array of the elements read, which the addon reads and builds its result from (so
    // the caller's array is read once), or null when reading one of them threw.
    scan(messages) {
      // Whatever throws here (an index getter, a proxy trap, a length that cannot be
      // allocated) leaves the message to be read afresh: the reader reports it with a code.
      let ids, elements;
      try {
        ids = new Float64Array(messages.length);
        elements = new Array(ids.length);
      } catch {
        return [new Float64Array(0), null];
      }
      // `recent`: the recent scan whose finds the messages match at their places, so far;
      // `found`: this scan's finds by content, made when a message is not found by identity.
      let recent = null, found = null, any = false;
      for (let i = 0; i < ids.length; i++) {
        let m;
        try {
          m = messages[i];
        } catch {
          elements = null;
          continue;
        }
        if (elements !== null) elements[i] = m;
        if (m === null || typeof m !== 'object') continue;
        try {
          const e = seen.get(m);
          if (e !== undefined && same(m, e.snapshot)) ids[i] = e.id;
          else if (bound > 0) {
            if (found === null) found = new Array(ids.length);
            let entry = recent !== null ? atPlace(recent, i, m) : null;
            for (let k = 0; entry === null && k < recents.length; k++) {
              if (recents[k] !== recent && (entry = atPlace(recents[k], i, m)) !== null) recent = recents[k];
            }
            // Found at its place: kept in the index's current generation, as a find there is.
            if (entry === null) entry = lookUp(m);
            else if (entry.generation !== generation) index(entry.probe, entry);
            if (entry !== null) {
              ids[i] = -entry.id;
              found[i] = entry;
              any = true;
            }
          }
        } catch {}
      }
      // The messages read afresh whose content came back join `found` (remember): a scan that
      // found nothing yet leads the recent ones from then.
      latest = found;
      latestElements = found !== null ? elements : null;
      latestFollowed = recent;
      if (any) lead(found, recent);
      return [ids, elements];
    },
    // Remembers objects[indices[k]] (or objects[k] without indices) under ids[k]; those whose
    // content came back (`again[k]`, set by the addon) go to the content index too.
    remember(objects, ids, indices, again) {
      for (let k = 0; k < ids.length; k++) {
        try {
          const m = objects[indices ? indices[k] : k];
          seen.set(m, { id: ids[k], snapshot: snapshot(m) });
          if (bound > 0 && again[k] === 1) {
            const { out, bytes } = recordMessage(m);
            const entry = { id: ids[k], snap: out, bytes };
            index(probeOf(m), entry);
            if (objects === latestElements) {
              latest[indices ? indices[k] : k] = entry;
              if (recents[0] !== latest) lead(latest, latestFollowed);
            }
          }
        } catch {}
      }
    },
  };
})"#;

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
  fn new() -> Self {
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

/// The cache helpers' factory's arguments (see [`CACHE_HELPERS`]).
type HelperLists =
  FnArgs<(Vec<&'static str>, Vec<&'static str>, Vec<&'static str>, u32, Vec<&'static str>)>;
/// The `scan` helper's arguments: the messages array (it returns `[ids, elements]`).
pub(crate) type ScanArgs<'env> = FnArgs<(Unknown<'env>,)>;
/// The `remember` helper's arguments: the objects, the ids of the fresh ones, when `objects`
/// holds others too the indices of the fresh ones, and per fresh one 1 when its content was
/// found held (it came back: the content index takes it).
pub(crate) type RememberArgs<'env> = FnArgs<(
  Array<'env>,
  Float64ArraySlice<'env>,
  Option<Uint32ArraySlice<'env>>,
  Uint8ArraySlice<'env>,
)>;
/// The `configure` helper's argument: the content index's bound, in bytes per generation.
pub(crate) type ConfigureArgs = FnArgs<(f64,)>;

/// The addon's state in one environment.
pub(crate) struct Instance {
  /// The result builder (see `write.rs`).
  pub build: FunctionRef<super::write::BuildArgs<'static>, Array<'static>>,
  /// `scan(messages) -> [Float64Array, Array | null]`: the cache ids (0 = read afresh) and a
  /// plain array of the elements (null when reading one threw).
  pub scan: FunctionRef<ScanArgs<'static>, Array<'static>>,
  /// `remember(objects, ids, indices, again)`.
  pub remember: FunctionRef<RememberArgs<'static>, Unknown<'static>>,
  /// `configure(bytes)`: the content index's bound.
  pub configure: FunctionRef<ConfigureArgs, Unknown<'static>>,
  /// `pick(source, indices)` (see `write.rs`).
  pub pick: FunctionRef<super::write::PickArgs<'static>, Array<'static>>,
  /// The `ClassifiedMessage` builder (see `priority.rs`).
  pub classified: FunctionRef<super::classify::ClassifiedArgs<'static>, Array<'static>>,
  /// The summarizer bridge (see `summary.rs`).
  pub summarize: FunctionRef<super::summary::SummarizeArgs<'static>, Unknown<'static>>,
  /// The unknown-option check's `watch(options, type)` (see `options.rs`).
  pub option_keys: FunctionRef<super::options::WatchArgs<'static>, Unknown<'static>>,
  /// The parsed messages.
  pub cache: MessageCache,
  /// Buffers of the JSON entry points, kept from call to call.
  pub scratch: Scratch,
  /// The layouts of the last conversations the synchronous strategies analysed.
  pub layout: LayoutMemo,
  /// The unknown `model` names warned about (see `model_warning.rs`).
  pub warned_models: std::collections::HashSet<String>,
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
/// messages of the call: what [`super::task::conversation`] gives the strategies, so that a
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

/// The buffers a JSON body is read into and written to, kept from call to call: a fresh one
/// the size of a body costs its pages afresh (the allocator hands large blocks back to the
/// system), more than the copy itself.
#[derive(Default)]
pub(crate) struct Scratch {
  /// A string body as UTF-8.
  pub input: Vec<u8>,
  /// The trimmed body.
  pub output: String,
  /// A string body's UTF-16 code units, read or written.
  pub units: Vec<u16>,
}

/// The largest buffer [`Scratch`] keeps, in bytes.
const SCRATCH_BYTES: usize = 32 << 20;

impl Scratch {
  /// Keeps `bytes`' allocation for the next string body, unless it is over [`SCRATCH_BYTES`].
  pub fn keep_input(&mut self, bytes: Vec<u8>) {
    if bytes.capacity() <= SCRATCH_BYTES {
      self.input = bytes;
    }
  }

  /// Keeps `text`'s allocation for the next trimmed body, unless it is over [`SCRATCH_BYTES`].
  pub fn keep_output(&mut self, text: String) {
    if text.capacity() <= SCRATCH_BYTES {
      self.output = text;
    }
  }

  /// Frees the UTF-16 buffer if it is over [`SCRATCH_BYTES`].
  pub fn bound_units(&mut self) {
    if self.units.capacity() * std::mem::size_of::<u16>() > SCRATCH_BYTES {
      self.units = Vec::new();
    }
  }
}

impl Instance {
  /// Sets the message cache's bounds and empties it, with its JavaScript content index, whose
  /// bound is a quarter of the byte bound per generation (so at most half of it in all), 0 when
  /// the cache is disabled.
  pub fn reset_cache(&mut self, env: &Env, capacity: usize, max_bytes: usize) -> Result<()> {
    self.cache.reset(capacity, max_bytes);
    self.layout.clear();
    let bound = if capacity == 0 { 0.0 } else { (max_bytes / 4) as f64 };
    self.configure.borrow_back(env)?.call(FnArgs::from((bound,)))?;
    Ok(())
  }
}

/// The addon's state in `env`, created on first use.
pub(crate) fn instance(env: &Env) -> Result<&'static mut Instance> {
  if env.get_instance_data::<Instance>()?.is_none() {
    let build: super::write::BuildFn = env.run_script(super::write::BUILD)?;
    let factory: Function<HelperLists, Object> = env.run_script(CACHE_HELPERS)?;
    let helpers = factory.call(FnArgs::from((
      MESSAGE_FIELDS.to_vec(),
      NESTED_FIELDS.to_vec(),
      SERIALISED_FIELDS.to_vec(),
      MAX_DEPTH as u32,
      crate::model::format::KNOWN_PART_TYPES.to_vec(),
    )))?;
    let scan: Function<ScanArgs, Array> = helpers.get_named_property("scan")?;
    let remember: Function<RememberArgs, Unknown> = helpers.get_named_property("remember")?;
    let summarize: super::summary::SummarizeFn = env.run_script(super::summary::SUMMARIZE)?;
    let pick: Function<super::write::PickArgs, Array> = env.run_script(super::write::PICK)?;
    let classified: Function<super::classify::ClassifiedArgs, Array> =
      env.run_script(super::classify::CLASSIFIED)?;
    let option_keys: Function<super::options::WatchArgs, Unknown> =
      env.run_script(super::options::OPTION_KEYS)?;
    let configure: Function<ConfigureArgs, Unknown> = helpers.get_named_property("configure")?;
    let mut state = Instance {
      option_keys: option_keys.create_ref()?,
      build: build.create_ref()?,
      scan: scan.create_ref()?,
      remember: remember.create_ref()?,
      configure: configure.create_ref()?,
      summarize: summarize.create_ref()?,
      classified: classified.create_ref()?,
      pick: pick.create_ref()?,
      cache: MessageCache::new(),
      scratch: Scratch::default(),
      layout: LayoutMemo::default(),
      warned_models: std::collections::HashSet::new(),
    };
    state.reset_cache(env, DEFAULT_MESSAGE_CACHE_CAPACITY, DEFAULT_MESSAGE_CACHE_BYTES)?;
    env.set_instance_data(state, (), |_| {})?;
  }
  match env.get_instance_data::<Instance>()? {
    Some(state) => Ok(state),
    None => Err(Error::new(Status::GenericFailure, "the addon's state could not be created")),
  }
}
