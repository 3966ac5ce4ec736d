//! Option objects as JavaScript passes them, and their normalisation into core types.

mod cache_aware;
mod fields;
mod max_context;
mod truncation;

pub(crate) use cache_aware::*;
pub(crate) use fields::*;
pub(crate) use max_context::*;
pub(crate) use truncation::*;

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::format::Format;
use crate::model::tokens::Encoding;

/// How to count tokens.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct TokenOptions {
  /// A model name that picks the encoding: gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the o-series use
  /// `o200k_base`; gpt-4 and gpt-3.5 use `cl100k_base`. Compared in any case, and without a
  /// provider prefix (`openai/gpt-4`, `azure/gpt-4`). Unknown models use `o200k_base`, with a
  /// process warning (`CONTEXT_TRIM_UNKNOWN_MODEL`) the first time each name is seen.
  pub model: Option<String>,
  /// The encoding, which wins over `model`. `approximate` is one token per four characters,
  /// for providers whose tokenizer is not public.
  /// @default 'o200k_base'
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// `false` counts each message as its content, tool-call names and arguments only, with no
  /// reply priming (CursorClaw's budget); `true` adds the chat framing of the
  /// OpenAI cookbook (3 tokens a message, its role, its name, 1 per tool call, and 3 of reply
  /// priming a request), which is what OpenAI bills. See README's token counting.
  /// @default true
  pub framing: Option<bool>,
  /// The message format. `auto` detects it from format-specific shapes (tool calls, tool
  /// results, reasoning parts) and refuses to guess when two formats' shapes appear.
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// How a class counts tokens and reads messages, as its `options` getter reports it (every
/// default filled in): given back to the constructor, it counts and reads the same way.
#[napi(object, object_from_js = false)]
pub struct ResolvedTokenOptions {
  /// The encoding tokens are counted in.
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: &'static str,
  /// Whether messages are counted with the chat framing.
  pub framing: bool,
  /// The message format given (`auto`: detected), for the classes that take one.
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<&'static str>,
}

impl ResolvedTokenOptions {
  /// The counting of `encoding`, and `format` for a class that takes one (`Some(None)`: detect).
  pub(crate) fn new(encoding: Encoding, format: Option<Option<Format>>) -> Self {
    ResolvedTokenOptions {
      encoding: encoding.as_str(),
      framing: encoding.framed(),
      format: format.map(|f| f.map_or("auto", Format::as_str)),
    }
  }
}

/// The `format` option shared by every entry point that reads messages.
pub(crate) fn parse_format(format: Option<&str>) -> CoreResult<Option<Format>> {
  match format {
    None => Ok(None),
    Some(name) => Format::parse_option(name),
  }
}

impl TokenOptions {
  /// The message format these options select (`None` = detect).
  pub(crate) fn format(&self) -> CoreResult<Option<Format>> {
    parse_format(self.format.as_deref())
  }

  /// The encoding these options select.
  pub(crate) fn encoding(&self) -> CoreResult<Encoding> {
    Ok(
      Encoding::resolve(self.model.as_deref(), self.encoding.as_deref())?
        .with_framing(self.framing),
    )
  }
}

/// Reads an options argument: `undefined`/`null` give the defaults, an object is converted,
/// anything else (or a field of the wrong type) is an `INVALID_OPTION` error, and so is a key
/// that no field of `T` has (a misspelt option), at any depth of nested options objects.
pub(crate) fn read_options<T: FromNapiValue + Default>(
  env: &Env,
  value: Option<Unknown<'_>>,
  name: &str,
) -> Result<T> {
  read_checked(env, value, name, &[], |value, proxy| convert(env, value, proxy, name))
}

/// [`read_options`] for an entry point that rejects some fields of `T` (such as
/// `trimByPriority`, which takes `TrimOptions` without `placeholder`): an unknown key's error
/// lists the options that entry point accepts, without the `rejected` ones.
pub(crate) fn read_options_except<T: FromNapiValue + Default>(
  env: &Env,
  value: Option<Unknown<'_>>,
  name: &str,
  rejected: &[&str],
) -> Result<T> {
  read_checked(env, value, name, rejected, |value, proxy| convert(env, value, proxy, name))
}

/// [`read_options`] for one options object read as two option types (each key must be a field
/// of one of them), such as `simulate`'s, which takes a `CacheAwareTrimmer`'s options and its
/// own.
pub(crate) fn read_options_pair<A: FromNapiValue + Default, B: FromNapiValue + Default>(
  env: &Env,
  value: Option<Unknown<'_>>,
  name: &str,
) -> Result<(A, B)> {
  read_checked(env, value, name, &[], |value, proxy| {
    Ok((convert(env, value, proxy, name)?, convert(env, value, proxy, name)?))
  })
}

/// Reads an options argument with `read(original, proxy)`, then fails on a key no field read
/// (naming the options of the object, less the top-level ones in `rejected`).
fn read_checked<R: Default>(
  env: &Env,
  value: Option<Unknown<'_>>,
  name: &str,
  rejected: &[&str],
  read: impl FnOnce(&Unknown<'_>, Unknown<'_>) -> Result<R>,
) -> Result<R> {
  let Some(value) = value else { return Ok(R::default()) };
  match value.get_type()? {
    ValueType::Undefined | ValueType::Null => Ok(R::default()),
    ValueType::Object if !value.is_array()? => {
      let Some([proxy, unread]) = watch(env, value, std::any::type_name::<R>())? else {
        // Only keys known to be fields of `R`, none holding options of its own: read as it is.
        return read(&value, value);
      };
      let options = read(&value, proxy)?;
      match unknown_option(unread, rejected)? {
        Some(error) => Err(super::error::throw(env, error)),
        None => Ok(options),
      }
    }
    _ => Err(super::error::throw(
      env,
      CoreError::option(
        name,
        format!("must be an object, got {}", super::read::js_type_name(&value)),
      ),
    )),
  }
}

/// Converts an options object (through its `proxy`), a field of the wrong type reported as an
/// `INVALID_OPTION` error naming it.
fn convert<T: FromNapiValue>(
  env: &Env,
  value: &Unknown<'_>,
  proxy: Unknown<'_>,
  name: &str,
) -> Result<T> {
  T::from_unknown(proxy).map_err(|e| {
    let reason = super::read::exception_text(env, e);
    let error = field_type_error(value, &reason).unwrap_or_else(|| CoreError::option(name, reason));
    super::error::throw(env, error)
  })
}

/// napi-rs's message for a field of the wrong type (``Failed to convert napi value Null into
/// rust type `f64` on TruncationConfig.maxAge``, with one `on Struct.field` per level of
/// nesting) as the library words an invalid option, naming the field's path:
/// `maxAge: must be a number, got null`, `minKeep.user: must be a number, got string`; for a
/// list with a wrong entry, `policies: every entry must be a string`. `None` (napi-rs's
/// message is kept) for anything else: a getter that threw, a missing field, or a value of the
/// right JavaScript type that is out of range. The field is read a second time to name what it
/// holds.
fn field_type_error(object: &Unknown<'_>, reason: &str) -> Option<CoreError> {
  let mut pieces = reason.split(" on ");
  let head = pieces.next()?;
  // Innermost first: `MinKeep.user`, then `MaxContextTokensOptions.minKeep`.
  let mut path = Vec::new();
  for location in pieces {
    let (_, field) = location.split_once('.')?;
    if field.is_empty() || field.contains(['.', ' ']) {
      return None;
    }
    path.push(field);
  }
  if path.is_empty() {
    return None;
  }
  path.reverse();
  // napi-rs reads an array field's length first; anything else names the Rust type wanted
  // (for a list, that of the entry it could not convert).
  let rust = match head {
    "Failed to get Array length" => "Vec<_>",
    _ => head.split_once("rust type `")?.1.split_once('`')?.0,
  };
  let (wanted, js) = match rust {
    "bool" => ("a boolean", "boolean"),
    "String" | "&str" => ("a string", "string"),
    "f64" | "f32" | "i64" | "u64" | "i32" | "u32" | "i16" | "u16" | "i8" | "u8" | "usize"
    | "isize" => ("a number", "number"),
    r if r.starts_with("Vec<") => ("an array", "array"),
    _ => return None,
  };
  let mut value = *object;
  for field in &path {
    if !is_object(&value) {
      return None;
    }
    // SAFETY: checked just above to be an object (not an array).
    let parent: Object = unsafe { value.cast() }.ok()?;
    value = parent.get_named_property(field).ok()?;
  }
  let reason = match super::read::js_type_name(&value) {
    got if got == js => return None,
    "array" => format!("every entry must be {wanted}"),
    got => format!("must be {wanted}, got {got}"),
  };
  Some(CoreError::option(path.join("."), reason))
}

/// A field of an options object that is an options object itself, with its own such fields.
/// napi-rs reads a non-object given there as an empty object (every field absent), so
/// [`read_nested_options`] checks these fields first.
pub(crate) struct Nested {
  /// The field's name in JavaScript.
  pub name: &'static str,
  /// Its own fields that are options objects.
  pub fields: &'static [Nested],
}

/// [`read_options`] for an options type with options objects inside (`nested`): a non-object
/// given for one of them, however deep, is an `INVALID_OPTION` error naming its path
/// (`roles.minKeep: must be an object, got number`) instead of being read as absent.
pub(crate) fn read_nested_options<T: FromNapiValue + Default>(
  env: &Env,
  value: Option<Unknown<'_>>,
  name: &str,
  nested: &[Nested],
) -> Result<T> {
  check_nested_options(env, value.as_ref(), name, nested)?;
  read_options(env, value, name)
}

/// The check of [`read_nested_options`] alone: a non-object given for one of the `nested`
/// options objects, however deep, is an `INVALID_OPTION` error naming its path.
pub(crate) fn check_nested_options(
  env: &Env,
  value: Option<&Unknown<'_>>,
  name: &str,
  nested: &[Nested],
) -> Result<()> {
  let Some(value) = value else { return Ok(()) };
  check_nested(value, "", nested).map_err(|e| match e {
    NestedError::Core(e) => super::error::throw(env, e),
    NestedError::Read(e) => {
      let reason = super::read::exception_text(env, e);
      super::error::throw(env, CoreError::option(name, reason))
    }
  })
}

/// Why [`check_nested`] failed: a field of the wrong type, or a field that could not be read
/// (a getter that throws, reported as [`read_options`] reports it).
enum NestedError {
  Core(CoreError),
  Read(napi::Error),
}

fn check_nested(
  value: &Unknown<'_>,
  prefix: &str,
  nested: &[Nested],
) -> std::result::Result<(), NestedError> {
  if nested.is_empty() || !is_object(value) {
    // Not an object: `read_options` reports it.
    return Ok(());
  }
  // SAFETY: checked to be an object (not an array).
  let object: Object = unsafe { value.cast() }.map_err(NestedError::Read)?;
  for field in nested {
    let inner: Unknown = object.get_named_property(field.name).map_err(NestedError::Read)?;
    if is_nullish(&inner) {
      continue;
    }
    let path = format!("{prefix}{}", field.name);
    if !is_object(&inner) {
      let got = super::read::js_type_name(&inner);
      return Err(NestedError::Core(CoreError::option(
        path,
        format!("must be an object, got {got}"),
      )));
    }
    check_nested(&inner, &format!("{path}."), field.fields)?;
  }
  Ok(())
}

/// Whether a value is an object and not an array (what an options object must be).
fn is_object(value: &Unknown<'_>) -> bool {
  matches!(value.get_type(), Ok(ValueType::Object)) && !value.is_array().unwrap_or(true)
}

/// Whether a value is `undefined` or `null` (an option not given).
pub(crate) fn is_nullish(value: &Unknown<'_>) -> bool {
  matches!(value.get_type(), Ok(ValueType::Undefined | ValueType::Null))
}

/// Checks a numeric option: finite, an integer, at least `min`.
pub(crate) fn integer_option(name: &str, value: f64, min: f64) -> CoreResult<usize> {
  checked_integer(value, min).map_err(|detail| CoreError::option(name, detail))
}

/// Reads a numeric positional argument: a number, finite, an integer, at least `min`
/// (`INVALID_ARGUMENT` naming it otherwise).
pub(crate) fn integer_argument(value: &Unknown<'_>, name: &str, min: f64) -> CoreResult<usize> {
  let invalid = |detail: String| CoreError::new(ErrorKind::InvalidArgument, name, detail);
  if !matches!(value.get_type(), Ok(ValueType::Number)) {
    let got = super::read::js_type_name(value);
    return Err(invalid(format!("must be an integer of at least {min}, got {got}")));
  }
  // SAFETY: `value` is a live handle of the current call, checked to be a number.
  let number =
    unsafe { f64::from_napi_value(value.env(), value.raw()) }.map_err(|e| invalid(e.reason))?;
  checked_integer(number, min).map_err(invalid)
}

fn checked_integer(value: f64, min: f64) -> std::result::Result<usize, String> {
  if value.is_finite() && value.fract() == 0.0 && value >= min && value <= 9_007_199_254_740_991.0 {
    Ok(value as usize)
  } else {
    Err(format!("must be an integer of at least {min}, got {}", js_number(value)))
  }
}

pub(crate) use crate::error::js_number;

/// The JavaScript side of the unknown-option check, compiled once per environment:
/// `watch(options, type)` returns `[proxy, unread]`, where `proxy` records every key read from
/// `options` (and from the plain objects read from it, wrapped the same way), and `unread()`
/// returns `[path, knownKeys]` for the first own key of a converted object that was never read,
/// or `null`. napi-rs reads every field of an options struct, absent or not, so the keys read
/// from an object are exactly the fields of the struct it was converted to; an object nothing
/// was read from (held as a raw value, such as a pricing table) is left to its own reader.
///
/// The keys read from a converted object of a `type` with nothing unread are its fields: they
/// are learnt, and `watch` returns `null` (read the object as it is, no check is left to make)
/// for a plain object whose own keys (enumerable or not) are all learnt fields of its type, each holding a value
/// that is not itself a plain object (nested options, whose keys only the proxy checks) and
/// not behind a getter. The check reads no value twice and calls no getter; an agent loop's
/// options object is read without a proxy from its second call on.
pub(crate) const OPTION_KEYS: &str = r#"(function () {
  // Per options type (its Rust name): the fields learnt, as read by a converted object.
  const FIELDS = new Map();
  function plain(v) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
    const proto = Object.getPrototypeOf(v);
    return proto === Object.prototype || proto === null;
  }
  // Whether every own key of `options` (enumerable or not: napi-rs reads both) is a learnt field
  // of its type holding a data value that is no options object of its own.
  function onlyFields(options, fields) {
    if (!plain(options)) return false;
    const keys = Object.getOwnPropertyNames(options);
    for (let i = 0; i < keys.length; i++) {
      if (!fields.has(keys[i])) return false;
      const d = Object.getOwnPropertyDescriptor(options, keys[i]);
      if (d === undefined || d.get !== undefined || d.set !== undefined || plain(d.value)) return false;
    }
    return true;
  }
  return function contextTrimOptionKeys(options, type) {
    const learnt = FIELDS.get(type);
    if (learnt !== undefined && onlyFields(options, learnt)) return null;
    const nodes = [];
    const proxies = new Map();
    function wrap(target, path) {
      const made = proxies.get(target);
      if (made !== undefined) return made;
      const node = { path, target, read: new Set() };
      nodes.push(node);
      // The proxy's own target is an empty object, every trap reading `target`: a proxy of a
      // frozen object could not hand out a wrapped value for its read-only fields (a proxy must
      // return a non-configurable property's very value), so a frozen options object holding
      // options of its own would fail to convert. Descriptors are reported configurable, as the
      // empty target allows.
      const proxy = new Proxy({}, {
        get(_, k) {
          const v = Reflect.get(target, k, target);
          if (typeof k !== 'string') return v;
          node.read.add(k);
          return plain(v) ? wrap(v, path + k + '.') : v;
        },
        has(_, k) {
          if (typeof k === 'string') node.read.add(k);
          return Reflect.has(target, k);
        },
        ownKeys: () => Reflect.ownKeys(target),
        getOwnPropertyDescriptor(_, k) {
          const d = Reflect.getOwnPropertyDescriptor(target, k);
          if (d !== undefined) d.configurable = true;
          return d;
        },
        getPrototypeOf: () => Reflect.getPrototypeOf(target),
      });
      proxies.set(target, proxy);
      return proxy;
    }
    const proxy = wrap(options, '');
    function unread() {
      for (const n of nodes) {
        if (n.read.size === 0) continue;
        for (const k of Object.keys(n.target)) {
          if (!n.read.has(k)) return [n.path + k, [...n.read]];
        }
      }
      // Every key was read: what was read from the object itself is fields of its type (a
      // handful of types; the bound only guards the map).
      if (nodes[0].read.size > 0 && FIELDS.size < 256) {
        const fields = FIELDS.get(type) ?? new Set();
        for (const k of nodes[0].read) fields.add(k);
        FIELDS.set(type, fields);
      }
      return null;
    }
    return [proxy, unread];
  };
})()"#;

/// The arguments of the `watch` helper: the options object and its type's name.
pub(crate) type WatchArgs<'env> = FnArgs<(Unknown<'env>, &'static str)>;

/// Wraps `options` so that the keys read from it as a `type` are recorded (see
/// [`OPTION_KEYS`]); `None` when it holds only fields of `type` learnt before, none of them an
/// options object: then it is read as it is.
fn watch<'env>(
  env: &'env Env,
  options: Unknown<'env>,
  type_name: &'static str,
) -> Result<Option<[Unknown<'env>; 2]>> {
  let helper = super::instance::instance(env)?.option_keys.borrow_back(env)?;
  let pair: Unknown = helper.call((options, type_name).into())?;
  if is_nullish(&pair) {
    return Ok(None);
  }
  // SAFETY: the helper returns null or an array.
  let pair: Array = unsafe { pair.cast() }?;
  Ok(Some([pair.get_element(0)?, pair.get_element(1)?]))
}

/// The error for the first key of an options object that is no option, if there is one; the
/// options it names leave out the top-level ones the entry point rejects.
fn unknown_option(unread: Unknown<'_>, rejected: &[&str]) -> Result<Option<CoreError>> {
  // SAFETY: `unread` is the closure the helper just returned, a function.
  let unread: Function<(), Unknown> = unsafe { unread.cast() }?;
  let found = unread.call(())?;
  if is_nullish(&found) {
    return Ok(None);
  }
  let (path, mut known) = <(String, Vec<String>)>::from_unknown(found)?;
  if !path.contains('.') {
    known.retain(|k| !rejected.contains(&k.as_str()));
  }
  Ok(Some(unknown_option_error(&path, &known)))
}

/// `path: is not an option (did you mean …?)`, suggesting the known key nearest to the last
/// segment of `path` when it is close (ignoring case, an edit distance of at most a third of
/// its length, and at least 2, so that two swapped letters are close); else the list of keys.
pub(crate) fn unknown_option_error(path: &str, known: &[String]) -> CoreError {
  let key = path.rsplit('.').next().unwrap_or(path);
  let nearest = known
    .iter()
    .map(|k| (edit_distance(&k.to_lowercase(), &key.to_lowercase()), k))
    .filter(|(d, k)| *d <= (key.chars().count().max(k.chars().count()) / 3).max(2))
    .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
  let detail = match nearest {
    Some((_, k)) => format!("is not an option (did you mean {k}?)"),
    None => {
      let mut list: Vec<&str> = known.iter().map(String::as_str).collect();
      list.sort_unstable();
      format!("is not an option; the options here are {}", list.join(", "))
    }
  };
  CoreError::option(path, detail)
}

/// The Levenshtein distance between two strings, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
  let b: Vec<char> = b.chars().collect();
  let mut row: Vec<usize> = (0..=b.len()).collect();
  for (i, ca) in a.chars().enumerate() {
    let mut diagonal = row[0];
    row[0] = i + 1;
    for (j, cb) in b.iter().enumerate() {
      let above = row[j + 1];
      row[j + 1] = (diagonal + usize::from(ca != *cb)).min(above + 1).min(row[j] + 1);
      diagonal = above;
    }
  }
  row[b.len()]
}
