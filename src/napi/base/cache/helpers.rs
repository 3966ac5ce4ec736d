//! The message cache's JavaScript side, compiled once per environment
//! (`instance.rs`): the `WeakMap` from each message object to its cache id and an
//! identity snapshot of what was read from it; the content index of messages whose content came
//! back, found by a probe and compared by value; the finds of the last scans by position.
//!
//! See the cache's module documentation (`mod.rs`) for what each side holds.

use napi::bindgen_prelude::*;

/// The cache helpers' factory: called with the reader's lists (`json_body`'s `MESSAGE_FIELDS`,
/// `NESTED_FIELDS`, `SERIALISED_FIELDS` and `MAX_DEPTH`), so that what the helpers compare is
/// what the reader reads.
pub(crate) const CACHE_HELPERS: &str = r#"(function contextTrimMessageCache(FIELDS, NESTED, SERIALISED_FIELDS, MAX_DEPTH, KNOWN_PARTS) {
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
      for (let i = 0; i < v.length && at >= 0; i++) at = checked(v[i], depth + 1, snap, at);
      return at;
    }
    const count = snap[at++];
    for (let j = 0; j < count && at >= 0; j++) {
      const k = snap[at];
      at = checked(v[k], depth + 1, snap, at + 1);
    }
    return at;
  }
  // `check`, with a primitive (most values: a message's strings and absent fields) decided
  // without a call: V8 inlines this small function where it is called, never the recursive
  // `check`. A warm scan of the benchmark's 1,000 messages: 132-139 -> 108-117 µs.
  function checked(v, depth, snap, at) {
    if (at < 0 || snap[at] !== v) return -1;
    return v === null || typeof v !== 'object' ? at + 1 : check(v, depth, snap, at);
  }
  // `fields` with `checked`, written out (as `sameContent` below): no closure per message.
  function same(m, snap) {
    let at = checked(m.role, 0, snap, 0);
    at = checked(m.content, 0, snap, at);
    at = checked(m.tool_calls, 0, snap, at);
    at = checked(m.tool_call_id, 0, snap, at);
    at = checked(m.name, 0, snap, at);
    at = checked(m.is_error, 0, snap, at);
    at = checked(m.isError, 0, snap, at);
    at = checked(m._summary, 0, snap, at);
    at = checked(m.isSummary, 0, snap, at);
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

/// The cache helpers' factory's arguments (see [`CACHE_HELPERS`]).
pub(crate) type HelperLists =
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
