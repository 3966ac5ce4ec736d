//! Writing results: a core [`Plan`] applied to the caller's own objects.
//!
//! Kept messages are returned as the very same objects. A replaced message is a shallow copy of
//! the caller's own enumerable fields (symbol keys included), in their order, so every field the
//! caller had survives; an own `__proto__` key is copied as data, never as a prototype; the
//! caller's objects are never modified. The copy is made by assigning the fields to a new object
//! that already holds the hidden metadata (defining it on a bare object is several times faster
//! than on one with fields), or by object spread where assigning could differ (an own
//! `__proto__` key, a frozen `Object.prototype`). What is replaced keeps each format's shape: the whole `content` of an OpenAI
//! message; the `content` of each `tool_result` block of an Anthropic message (a string, or one
//! text block carrying the `cache_control` its own blocks had); the `output` of each
//! `tool-result` part of an AI SDK message (as `{type: 'text', value}`, `'error-text'` for an
//! error); of a message whose results are replaced one by one, only those blocks or parts,
//! each with its own text. A message the
//! plan inserts is a new object `{role, content}` with string content, a shape every supported
//! format accepts for `user` and `assistant` messages.
//!
//! The plan's metadata (`_truncated`, `_originalTokens`, `_summary`, `_superseded`, …) is set on
//! the written objects as non-enumerable properties: `m._truncated === true` reads it, while
//! `JSON.stringify`, `Object.keys` and spreads see only the provider's fields, so an output can be
//! sent as it is (Anthropic and strict OpenAI-compatible servers reject unknown keys). A replaced
//! message keeps the hidden metadata an earlier pass put on the caller's object.
//!
//! A result is built in one call of a JavaScript builder, from a plain array of the caller's
//! objects (the one the read took them from; an async call's resolution, which holds
//! references, makes one): the plan crosses as numbers, the new texts as strings.

use napi::bindgen_prelude::*;
use napi::Env;

use super::read::JsMessages;
use crate::model::format::Format;
use crate::plan::{Action, MetaValue, Plan, Step};

/// The result builder, compiled once per JavaScript environment.
pub(crate) const BUILD: &str = r#"(function () {
const HIDDEN = { value: undefined, writable: true, enumerable: false, configurable: true };
// The metadata names of each comma-joined list seen (a handful: one per kind of replacement).
const NAMES = new Map();
function names(keys) {
  let list = NAMES.get(keys);
  if (list === undefined) {
    list = keys.split(',');
    if (NAMES.size < 256) NAMES.set(keys, list);
  }
  return list;
}
// A copy's hidden metadata is defined first, on an empty object, and its fields assigned after:
// adding a non-enumerable property to an object that already has fields costs V8 a change of
// its shape (about 0.8 µs each, two per cut copy); on an empty object it follows a transition
// every copy shares. Where assigning could do what a spread does not (an own `__proto__` key,
// which a spread copies as data; a frozen Object.prototype, whose fields cannot be shadowed by
// assignment), the copy is a spread and its metadata defined after.
const ASSIGN_SAFE = !Object.isFrozen(Object.prototype);
const hasOwn = Object.prototype.hasOwnProperty;
// A tool result's new content: the text, in a text block that keeps the prompt-cache breakpoint
// when the result's own blocks had one (Anthropic `cache_control`, the last one's).
function resultContent(old, text) {
  if (Array.isArray(old)) {
    for (let i = old.length - 1; i >= 0; i--) {
      const b = old[i];
      if (b !== null && typeof b === 'object' && b.cache_control !== undefined) return [{ type: 'text', text, cache_control: b.cache_control }];
    }
  }
  return text;
}
// An AI SDK tool output's new value: text, still flagged an error when it was one.
function outputOf(old, text) {
  const kind = old !== null && typeof old === 'object' ? old.type : undefined;
  return { type: typeof kind === 'string' && kind.startsWith('error') ? 'error-text' : 'text', value: text };
}
// The text of the `k`-th tool result of a copy: `text` itself, or its item `k` when the results
// are replaced one by one (null: that result is kept).
function textOf(text, k) {
  return typeof text === 'string' ? text : text[k] ?? null;
}
function copyOf(o, text, format, list, value) {
  // Results replaced one by one are only ever those of a content array.
  let content = typeof text === 'string' ? text : o.content;
  if (Array.isArray(o.content)) {
    let k = 0;
    if (format === 'anthropic' && o.content.some((b) => b && b.type === 'tool_result')) {
      content = o.content.map((b) => {
        if (!b || b.type !== 'tool_result') return b;
        const t = textOf(text, k++);
        return t === null ? b : { ...b, content: resultContent(b.content, t) };
      });
    } else if (format === 'ai-sdk' && o.content.some((p) => p && p.type === 'tool-result')) {
      content = o.content.map((p) => {
        if (!p || p.type !== 'tool-result') return p;
        const t = textOf(text, k++);
        return t === null ? p : { ...p, output: outputOf(p.output, t) };
      });
    }
  }
  if (!ASSIGN_SAFE || hasOwn.call(o, '__proto__')) {
    const copy = { ...o, content };
    carry(o, copy);
    if (list !== null) hide(copy, list, value);
    return copy;
  }
  const copy = {};
  carry(o, copy);
  if (list !== null) hide(copy, list, value);
  Object.assign(copy, o);
  copy.content = content;
  // An enumerable field of `o` with a metadata name was assigned over it: the metadata wins,
  // still hidden, as when it is defined after a spread.
  if (list !== null) for (let i = 0; i < list.length; i++) copy[list[i]] = value(i);
  return copy;
}
// Metadata an earlier pass hid on `o` (a spread or an assignment copies only enumerable keys).
function carry(o, copy) {
  const own = Object.getOwnPropertyNames(o);
  if (own.length === Object.keys(o).length) return;
  for (const k of own) {
    if (k[0] === '_' && !Object.prototype.propertyIsEnumerable.call(o, k)) {
      HIDDEN.value = o[k];
      Object.defineProperty(copy, k, HIDDEN);
    }
  }
  HIDDEN.value = undefined;
}
function hide(object, list, value) {
  for (let i = 0; i < list.length; i++) {
    HIDDEN.value = value(i);
    Object.defineProperty(object, list[i], HIDDEN);
  }
  HIDDEN.value = undefined;
}
// The whole result in one call: `codes[i] >= 0` is `source[codes[i]]`, kept; `codes[i] < 0` is
// item `-codes[i] - 1`, whose four numbers in `items` are the source index it copies (or -1:
// a new message), the index of its role among the texts after the items' (new messages), the
// index in `keyLists` of its metadata names (or -1) and the index of its first value in
// `tags`/`numbers` (it has as many as names). Its text is `texts[item]`: a string, or an array
// of each tool result's new text (or null) when they are replaced one by one. A value's tag says
// what it is: 0 false, 1 true, 2 the number, 3 the text at that index after the items' texts.
function build(source, codes, texts, items, keyLists, tags, numbers, format) {
  const out = new Array(codes.length);
  const extra = items.length / 4;
  const value = (at) => (i) => {
    const tag = tags[at + i];
    return tag === 2 ? numbers[at + i] : tag === 3 ? texts[extra + numbers[at + i]] : tag === 1;
  };
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if (c >= 0) {
      out[i] = source[c];
      continue;
    }
    const j = -c - 1;
    const at = j * 4;
    const list = items[at + 2] >= 0 ? names(keyLists[items[at + 2]]) : null;
    const values = list !== null ? value(items[at + 3]) : null;
    if (items[at] >= 0) {
      out[i] = copyOf(source[items[at]], texts[j], format, list, values);
      continue;
    }
    const copy = {};
    if (list !== null) hide(copy, list, values);
    copy.role = texts[extra + items[at + 1]];
    copy.content = texts[j];
    out[i] = copy;
  }
  return out;
}
return build;
})()"#;

/// The PICK helper: a new array of `source[indices[i]]`.
pub(crate) const PICK: &str = r#"(function contextTrimPick(source, indices) {
  const out = new Array(indices.length);
  for (let i = 0; i < indices.length; i++) out[i] = source[indices[i]];
  return out;
})"#;

pub(crate) type PickArgs<'env> = FnArgs<(Array<'env>, Uint32ArraySlice<'env>)>;

/// The caller's message objects, as a result is built from them.
#[derive(Clone, Copy)]
pub(crate) enum Objects<'a, 'env> {
  /// One handle per message (an async call's, resolved from its references).
  Handles(&'a [Object<'env>]),
  /// A JavaScript array of the messages (the one they were read from, or a `ContextWindow`'s):
  /// picking from it and building from it are one call each.
  Array(&'a Array<'env>),
}

impl<'env> Objects<'_, 'env> {
  /// The number of messages.
  pub fn len(&self) -> usize {
    match self {
      Objects::Handles(h) => h.len(),
      Objects::Array(a) => a.len() as usize,
    }
  }

  /// A plain array of the objects: the one held, or a new one of the handles.
  pub fn array(&self, env: &'env Env) -> Result<Array<'env>> {
    match self {
      Objects::Array(a) => Ok(**a),
      Objects::Handles(_) => self.pick(env, &(0..self.len() as u32).collect::<Vec<_>>()),
    }
  }

  /// A new array of the objects at `indices` (each less than `len()`).
  pub fn pick(&self, env: &'env Env, indices: &[u32]) -> Result<Array<'env>> {
    if indices.is_empty() {
      return env.create_array(0);
    }
    match self {
      Objects::Handles(h) => {
        let mut out = env.create_array(indices.len() as u32)?;
        for (j, &i) in indices.iter().enumerate() {
          if let Some(object) = h.get(i as usize) {
            out.set(j as u32, object)?;
          }
        }
        Ok(out)
      }
      Objects::Array(a) => {
        let source = **a;
        let indices = Uint32ArraySlice::copy_from(env, indices)?;
        let pick = super::instance::instance(env)?.pick.borrow_back(env)?;
        pick.call(FnArgs::from((source, indices)))
      }
    }
  }
}

/// Builds the returned array of messages from the caller's objects and a plan.
pub(crate) fn apply_plan<'env>(
  env: &'env Env,
  input: &JsMessages<'env>,
  plan: &Plan,
) -> Result<Array<'env>> {
  apply_plan_to(env, input.view(), input.format, plan)
}

/// [`apply_plan`] on objects read in `format`.
pub(crate) fn apply_plan_to<'env>(
  env: &'env Env,
  objects: Objects<'_, 'env>,
  format: Format,
  plan: &Plan,
) -> Result<Array<'env>> {
  if plan.insertions().is_empty() && !plan.actions().iter().any(|a| matches!(a, Action::Replace(_)))
  {
    // Only kept and dropped messages: the kept objects, picked.
    let kept: Vec<u32> = (0..plan.actions().len())
      .filter(|&i| matches!(plan.action(i), Action::Keep))
      .map(|i| i as u32)
      .collect();
    return objects.pick(env, &kept);
  }
  build(env, &objects.array(env)?, objects.len(), format, plan)
}

/// [`apply_plan_to`] in one call of the builder (see [`BUILD`]): the plan as numbers, the new
/// texts as strings, the metadata as tags and numbers; the kept objects are taken from `source`
/// by the builder itself, so no message crosses the boundary one by one.
fn build<'env>(
  env: &'env Env,
  source: &Array<'env>,
  len: usize,
  format: Format,
  plan: &Plan,
) -> Result<Array<'env>> {
  let mut batch = Batch::default();
  let indices: Vec<u32> = (0..len as u32).collect();
  plan.walk(&indices, |step| match step {
    Step::Input(_, Action::Drop) => {}
    Step::Input(&i, Action::Keep) => batch.codes.push(i as i32),
    Step::Input(&i, Action::Replace(r)) => {
      let text = match &r.results {
        Some(results) => ItemText::Results(results),
        None => ItemText::Whole(&r.content),
      };
      batch.item(Some(i), None, text, &r.meta)
    }
    Step::Inserted(m) => {
      batch.item(None, Some(m.role.as_str()), ItemText::Whole(&m.content), &m.meta)
    }
  });
  let Batch { codes, items, item_texts, extra_texts, key_lists, tags, numbers } = batch;
  let mut js_texts = env.create_array((item_texts.len() + extra_texts.len()) as u32)?;
  for (k, text) in item_texts.iter().enumerate() {
    match text {
      ItemText::Whole(text) => js_texts.set(k as u32, *text)?,
      ItemText::Results(results) => {
        let mut each = env.create_array(results.len() as u32)?;
        for (r, result) in results.iter().enumerate() {
          each.set(r as u32, result.as_deref())?;
        }
        js_texts.set(k as u32, each)?;
      }
    }
  }
  for (k, text) in extra_texts.iter().enumerate() {
    js_texts.set((item_texts.len() + k) as u32, *text)?;
  }
  let mut js_keys = env.create_array(key_lists.len() as u32)?;
  for (k, keys) in key_lists.iter().enumerate() {
    js_keys.set(k as u32, keys.as_str())?;
  }
  let builder = super::instance::instance(env)?.build.borrow_back(env)?;
  builder.call(FnArgs::from((
    *source,
    Int32ArraySlice::copy_from(env, &codes)?,
    js_texts,
    Int32ArraySlice::copy_from(env, &items)?,
    js_keys,
    Uint8ArraySlice::copy_from(env, &tags)?,
    Float64ArraySlice::copy_from(env, &numbers)?,
    format.as_str(),
  )))
}

/// The builder's arguments (see [`BUILD`]).
pub(crate) type BuildArgs<'env> = FnArgs<(
  Array<'env>,
  Int32ArraySlice<'env>,
  Array<'env>,
  Int32ArraySlice<'env>,
  Array<'env>,
  Uint8ArraySlice<'env>,
  Float64ArraySlice<'env>,
  &'static str,
)>;
pub(crate) type BuildFn<'env> = Function<'env, BuildArgs<'env>, Array<'env>>;

/// The text of a builder's item: one for the whole content (or every tool result), or one per
/// tool result (`None`: kept).
enum ItemText<'p> {
  Whole(&'p str),
  Results(&'p [Option<std::sync::Arc<str>>]),
}

/// A plan encoded for the builder.
#[derive(Default)]
struct Batch<'p> {
  /// Per returned message: its index in the input (kept), or `-(item + 1)`.
  codes: Vec<i32>,
  /// Per item: its source index or -1, its role's index among the extra texts or -1, its key
  /// list's index or -1, the index of its first value.
  items: Vec<i32>,
  /// Each item's text, in item order.
  item_texts: Vec<ItemText<'p>>,
  /// The texts after the items' (roles and text values), indexed from the first of them.
  extra_texts: Vec<&'p str>,
  /// The distinct comma-joined metadata name lists.
  key_lists: Vec<String>,
  /// Per metadata value: 0 false, 1 true, 2 a number, 3 a text.
  tags: Vec<u8>,
  /// Per metadata value: the number, or the text's index among the extra texts.
  numbers: Vec<f64>,
}

impl<'p> Batch<'p> {
  /// Adds an item: a copy of input message `source` or a new message of `role`, with `text`
  /// and `meta`, returned next.
  fn item(
    &mut self,
    source: Option<u32>,
    role: Option<&'p str>,
    text: ItemText<'p>,
    meta: &'p [(&'static str, MetaValue)],
  ) {
    let j = self.item_texts.len();
    self.codes.push(-(j as i32) - 1);
    self.item_texts.push(text);
    let role = role.map_or(-1, |r| {
      self.extra_texts.push(r);
      self.extra_texts.len() as i32 - 1
    });
    let keys = if meta.is_empty() {
      -1
    } else {
      let mut joined = String::new();
      for (k, (key, _)) in meta.iter().enumerate() {
        debug_assert!(!key.is_empty() && !key.contains(','));
        if k > 0 {
          joined.push(',');
        }
        joined.push_str(key);
      }
      match self.key_lists.iter().position(|l| *l == joined) {
        Some(k) => k as i32,
        None => {
          self.key_lists.push(joined);
          self.key_lists.len() as i32 - 1
        }
      }
    };
    self.items.extend([source.map_or(-1, |i| i as i32), role, keys, self.tags.len() as i32]);
    for (_, value) in meta {
      let (tag, number) = match value {
        MetaValue::Bool(b) => (u8::from(*b), 0.0),
        MetaValue::Number(n) => (2, *n),
        MetaValue::Text(t) => {
          self.extra_texts.push(t);
          (3, (self.extra_texts.len() - 1) as f64)
        }
      };
      self.tags.push(tag);
      self.numbers.push(number);
    }
  }
}
