//! Reading the caller's messages: JavaScript objects to core [`Message`]s.
//!
//! Only the fields the core reads are copied across the boundary; the caller's objects are
//! kept as handles so that kept messages are returned as the very same objects, with every
//! other field intact. Inside nested objects only the keys some format needs are read, so an
//! app's own metadata is never copied nor walked. `arguments`/`input` objects are serialised with the caller's own
//! `JSON.stringify` (so a circular or 10,000-level object is a clear error, not a crash), and
//! every other nested value is read to a bounded depth.

use napi::bindgen_prelude::*;
use napi::{Env, JsValue, ValueType};
use serde_json::{Map, Value};

use std::sync::Arc;

use super::cache::{Cached, MessageCache};
use super::write::Objects;
use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::conversation::Conversation;
use crate::model::format::{Format, Signals};
use crate::model::json_body::{
  is_media_field, media_head, JSON_TEXT_FIELD, MAX_DEPTH, MESSAGE_FIELDS, NESTED_FIELDS,
  SERIALISED_FIELDS, TEXT_DATA_FIELD,
};
use crate::model::media::{encode_base64, LENGTH_SUFFIX, MEDIA_HEAD};
use crate::model::message::Message;
use crate::model::tokens::Encoding;

/// The caller's messages: their objects and what the core makes of them.
pub(crate) struct JsMessages<'env> {
  /// The caller's objects, in order.
  source: Source<'env>,
  /// The parsed messages, one per object, shared with the message cache.
  pub messages: Vec<Arc<Cached>>,
  /// The format they were read in (given, or detected).
  pub format: Format,
}

/// Where the caller's objects are held during a call.
enum Source<'env> {
  /// The plain array the scan read them into (the addon's own, never handed out): a handle is
  /// taken from it only where one is needed. A warm call finds most messages in the cache by
  /// their id alone and builds its result from the array in one call, so it never takes
  /// a handle to them one by one.
  Array(Array<'env>),
  /// One handle per message, taken as they were read (the scan could not read every element,
  /// so the caller's array is not read twice).
  Handles(Vec<Object<'env>>),
}

impl<'env> JsMessages<'env> {
  /// The caller's objects, as results are built from them.
  pub fn view(&self) -> Objects<'_, 'env> {
    match &self.source {
      Source::Array(array) => Objects::Array(array),
      Source::Handles(handles) => Objects::Handles(handles),
    }
  }

  /// The number of messages.
  pub fn len(&self) -> usize {
    self.messages.len()
  }

  /// The caller's object at `index`, or `None` past the end.
  pub fn object(&self, index: usize) -> Result<Option<Object<'env>>> {
    match &self.source {
      Source::Handles(handles) => Ok(handles.get(index).copied()),
      Source::Array(_) if index >= self.messages.len() => Ok(None),
      Source::Array(array) => element(array, index).map(Some),
    }
  }

  /// Every one of the caller's objects, in order.
  pub fn objects(&self) -> Result<Vec<Object<'env>>> {
    match &self.source {
      Source::Handles(handles) => Ok(handles.clone()),
      Source::Array(array) => (0..self.messages.len()).map(|i| element(array, i)).collect(),
    }
  }

  /// The parsed messages, by reference.
  pub fn refs(&self) -> Vec<&Message> {
    self.messages.iter().map(|c| &c.message).collect()
  }

  /// The conversation, analysed with counts in `encoding`.
  pub fn conversation(&self, encoding: Encoding) -> Conversation<'_> {
    Conversation::from_refs(self.refs(), encoding).with_format(self.format)
  }
}

/// Element `index` of the scan's array, a message object: the scan found every one of its
/// elements an object before the reader took it as a message.
fn element<'env>(array: &Array<'env>, index: usize) -> Result<Object<'env>> {
  let item = array
    .get::<Unknown>(index as u32)?
    .ok_or_else(|| {
      Error::new(
        Status::GenericFailure,
        format!(
          "context-trim: messages[{index}] was read, then missing from the addon's own copy of the array (an internal error: please report it with the messages)"
        ),
      )
    })?;
  // SAFETY: every element of the scan's array that the reader accepted is an object (the
  // reader refuses any other value, and the array is never changed after the scan).
  unsafe { item.cast::<Object>() }
}

/// Reads an array of messages in the detected format (see [`crate::model::format::detect`]).
pub(crate) fn read_messages<'env>(
  env: &'env Env,
  value: Unknown<'env>,
) -> Result<JsMessages<'env>> {
  read_messages_in(env, value, None)
}

/// Reads an array of messages in `format`, or in the detected format when it is `None`; a
/// message the format's parser reads but [`Format::check_message`] refuses (no `content` and no
/// tool calls, a tool message without `tool_call_id`) is an `INVALID_MESSAGE` error.
///
/// Messages read on an earlier call and unchanged since are taken from the message cache (see
/// `instance.rs`) without crossing the boundary again.
pub(crate) fn read_messages_in<'env>(
  env: &'env Env,
  value: Unknown<'env>,
  format: Option<Format>,
) -> Result<JsMessages<'env>> {
  read_messages_checked(env, value, format, Check::Strict)
}

/// Whether a message [`Format::check_message`] refuses is an error: `Lenient` lets it through,
/// for `validateConversation` and `repairConversation`, which report and repair such messages
/// (it is then not cached, so that an entry point that checks reads it again).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
  Strict,
  Lenient,
}

/// [`read_messages_in`], with the [`Check`] given.
pub(crate) fn read_messages_checked<'env>(
  env: &'env Env,
  value: Unknown<'env>,
  format: Option<Format>,
  check: Check,
) -> Result<JsMessages<'env>> {
  let array = as_array(value).map_err(|e| super::error::throw(env, e))?;
  let instance = super::instance::instance(env)?;
  let scanned = instance.scan.borrow_back(env)?.call(FnArgs::from((value,)))?;
  let ids: Vec<f64> =
    scanned.get::<Float64ArraySlice>(0)?.map(|ids| ids.to_vec()).unwrap_or_default();
  // The elements as the scan read them, in a plain array: read from it, and built from it.
  let elements = match scanned.get::<Unknown>(1)? {
    Some(v) if v.is_array().unwrap_or(false) && ids.len() == array.len() as usize => {
      // SAFETY: checked to be an array just above.
      Some(unsafe { v.cast::<Array>() }?)
    }
    _ => None,
  };
  let reader = Reader { check, ..Reader::new(env)? };
  let source = match elements {
    Some(elements) => Source::Array(elements),
    None => Source::Handles(Vec::new()),
  };
  let input = read_all(env, &reader, source, array, &ids, &mut instance.cache, format)
    .map_err(|e| super::error::throw(env, e))?;
  // Remember what was read afresh, so that the next call skips it. The arrays are copied into
  // V8's memory: an external buffer is freed by a finalizer that Node runs on a later turn of
  // the event loop, so a loop of calls that never yields would hold every one of them.
  if !input.fresh.is_empty() {
    let fresh_ids: Vec<f64> = input.fresh.iter().map(|f| f.id as f64).collect();
    let again: Vec<u8> = input.fresh.iter().map(|f| u8::from(f.again)).collect();
    let (objects, indices) = match &input.messages.source {
      // The scan's array holds them: the helper picks them by index.
      Source::Array(array) => {
        let indices: Vec<u32> = input.fresh.iter().map(|f| f.index as u32).collect();
        (*array, Some(Uint32ArraySlice::copy_from(env, &indices)?))
      }
      Source::Handles(handles) => {
        let mut objects = env.create_array(input.fresh.len() as u32)?;
        for (j, f) in input.fresh.iter().enumerate() {
          objects.set(j as u32, handles[f.index])?;
        }
        (objects, None)
      }
    };
    instance.remember.borrow_back(env)?.call(FnArgs::from((
      objects,
      Float64ArraySlice::copy_from(env, &fresh_ids)?,
      indices,
      Uint8ArraySlice::copy_from(env, &again)?,
    )))?;
  }
  Ok(input.messages)
}

struct ReadResult<'env> {
  messages: JsMessages<'env>,
  /// The messages read afresh.
  fresh: Vec<Fresh>,
}

/// A message read afresh.
struct Fresh {
  /// Its index.
  index: usize,
  /// Its new cache id.
  id: u64,
  /// Whether its content was found held: it came back, so the content index takes it.
  again: bool,
}

/// Reads every message: from the scan's array held in `source`, or, when `source` collects
/// handles, from `array`, the caller's.
fn read_all<'env>(
  env: &'env Env,
  reader: &Reader<'env>,
  mut source: Source<'env>,
  array: Array<'env>,
  ids: &[f64],
  cache: &mut MessageCache,
  format: Option<Format>,
) -> CoreResult<ReadResult<'env>> {
  let from = match &source {
    Source::Array(elements) => *elements,
    Source::Handles(_) => array,
  };
  let len = from.len() as usize;
  let item_at = |i: usize| {
    from
      .get::<Unknown>(i as u32)
      .map_err(|e| {
        CoreError::message(i, "", format!("could not be read: {}", exception_text(env, e)))
      })?
      .ok_or_else(|| CoreError::message(i, "", "must be an object, got undefined"))
  };
  let mut cached: Vec<Option<Arc<Cached>>> = Vec::with_capacity(len);
  let mut values: Vec<Option<Value>> = Vec::with_capacity(len);
  let mut signals = Vec::with_capacity(len);
  for i in 0..len {
    // A positive id: the object itself was read before; a negative one: an object with its
    // content was (the content index). The scan gives ids to objects only, so an element of
    // its array with an id is found in the cache without being taken from the array.
    let id = ids.get(i).copied().unwrap_or(0.0);
    let (item, hit) = match &mut source {
      Source::Array(_) if id != 0.0 => (None, cache.get(id.abs() as u64, id < 0.0)),
      Source::Array(_) => (Some(item_at(i)?), None),
      Source::Handles(handles) => {
        let item = item_at(i)?;
        let object = id != 0.0 && matches!(item.get_type(), Ok(ValueType::Object));
        let hit = if object { cache.get(id.abs() as u64, id < 0.0) } else { None };
        if hit.is_some() {
          // SAFETY: checked to be an object just above.
          handles.push(
            unsafe { item.cast::<Object>() }.map_err(|e| CoreError::message(i, "", e.reason))?,
          );
        }
        (Some(item), hit)
      }
    };
    match hit {
      Some(entry) => {
        signals.push(entry.signals);
        cached.push(Some(entry));
        values.push(None);
      }
      None => {
        let item = match item {
          Some(item) => item,
          None => item_at(i)?,
        };
        let (object, value) = reader.message(item, i)?;
        if let Source::Handles(handles) = &mut source {
          handles.push(object);
        }
        signals.push(Signals::of(&value));
        cached.push(None);
        values.push(Some(value));
      }
    }
  }
  let format = match format {
    Some(f) => f,
    None => crate::model::format::detect_from(&signals)?,
  };
  let mut messages = Vec::with_capacity(len);
  let mut fresh = Vec::new();
  for i in 0..len {
    // An object the scan knew was read on an earlier call (evicted since, or read in another
    // format): it comes back, so it is admitted to the main cache.
    let seen = ids.get(i).is_some_and(|&id| id != 0.0);
    if let Some(entry) = cached[i].take().filter(|e| e.format == format) {
      messages.push(entry);
      continue;
    }
    let value = match values[i].take() {
      Some(v) => v,
      // Cached in another format: read it again.
      None => {
        let item = match &source {
          // SAFETY: `handles[i]` is a live object handle of the current call.
          Source::Handles(handles) => unsafe {
            Unknown::from_raw_unchecked(env.raw(), handles[i].raw())
          },
          Source::Array(_) => item_at(i)?,
        };
        reader.message(item, i)?.1
      }
    };
    let message = format.parse_message(&value, i)?;
    if let Err(e) = format.check_message(&value, &message, i) {
      if reader.check == Check::Strict {
        return Err(e);
      }
      // Let through, never cached.
      messages.push(Arc::new(Cached { format, signals: signals[i], message }));
      continue;
    }
    // A new object with the content of one read before (a history parsed afresh on every
    // request) shares its parsed message, and with it everything memoised on it.
    let (entry, again) = match cache.get_content(format, signals[i], &message) {
      Some(entry) => (entry, true),
      None => {
        let entry = Arc::new(Cached { format, signals: signals[i], message });
        cache.insert_content(Arc::clone(&entry), seen);
        (entry, false)
      }
    };
    // Content that came back is the working set: its id (which the JavaScript index keeps)
    // goes to the main map, even for a new object.
    let id = cache.insert(Arc::clone(&entry), seen || again);
    if id != 0 {
      fresh.push(Fresh { index: i, id, again });
    }
    messages.push(entry);
  }
  Ok(ReadResult { messages: JsMessages { source, messages, format }, fresh })
}

/// Reads one message in `format` (detected from the message alone when `None`).
pub(crate) fn read_message<'env>(
  env: &'env Env,
  value: Unknown<'env>,
  format: Option<Format>,
) -> Result<(Object<'env>, Message)> {
  let read = || -> CoreResult<(Object<'env>, Message)> {
    let reader = Reader::new(env)
      .map_err(|e| CoreError::new(ErrorKind::InvalidMessages, "message", e.reason))?;
    let (object, value) = reader.message(value, 0)?;
    let format = match format {
      Some(f) => f,
      None => crate::model::format::detect(std::slice::from_ref(&value))?,
    };
    let message = format.parse_message(&value, 0)?;
    format.check_message(&value, &message, 0)?;
    Ok((object, message))
  };
  read().map_err(|e| super::error::throw(env, e))
}

fn as_array(value: Unknown<'_>) -> CoreResult<Array<'_>> {
  let is_array = value.is_array().unwrap_or(false);
  if !is_array {
    let got = js_type_name(&value);
    // A lone message where an array is expected is the common slip: say so.
    let hint = if got == "object" && looks_like_message(&value) {
      " (a single message: wrap it in an array, [message])"
    } else {
      ""
    };
    return Err(CoreError::new(
      ErrorKind::InvalidMessages,
      "messages",
      format!("must be an array, got {got}{hint}"),
    ));
  }
  // SAFETY: checked to be an array just above.
  unsafe { value.cast::<Array>() }
    .map_err(|e| CoreError::new(ErrorKind::InvalidMessages, "messages", e.reason))
}

/// Whether an object has a `role` property (a getter or proxy trap that throws reads as no).
fn looks_like_message(value: &Unknown<'_>) -> bool {
  // SAFETY: `value` is a live handle of the current call, and the caller checked it to be an
  // object (`js_type_name` said so).
  let Ok(object) = (unsafe { value.cast::<Object>() }) else { return false };
  match object.has_named_property("role") {
    Ok(found) => found,
    Err(e) => {
      // A throwing `has` trap leaves an exception pending: clear it, so that the error this
      // hint goes into is the one the caller sees.
      exception_text(&Env::from_raw(value.env()), e);
      false
    }
  }
}

/// A JavaScript-style type name for error messages.
pub(crate) fn js_type_name(value: &Unknown<'_>) -> &'static str {
  match value.get_type() {
    Ok(ValueType::Undefined) => "undefined",
    Ok(ValueType::Null) => "null",
    Ok(ValueType::Boolean) => "boolean",
    Ok(ValueType::Number) => "number",
    Ok(ValueType::String) => "string",
    Ok(ValueType::Symbol) => "symbol",
    Ok(ValueType::Function) => "function",
    Ok(ValueType::BigInt) => "bigint",
    Ok(ValueType::Object) if value.is_array().unwrap_or(false) => "array",
    Ok(ValueType::Object) => "object",
    _ => "unknown",
  }
}

struct Reader<'env> {
  env: &'env Env,
  stringify: Function<'env, Unknown<'env>, Unknown<'env>>,
  /// [`MESSAGE_FIELDS`] as JavaScript strings, made once per call: a property looked up by a
  /// C string is made a JavaScript string (and looked up in V8's string table) on every read.
  fields: Vec<napi::JsString<'env>>,
  /// Whether a message [`Format::check_message`] refuses is an error.
  check: Check,
}

impl<'env> Reader<'env> {
  fn new(env: &'env Env) -> Result<Self> {
    let json: Object = env.get_global()?.get_named_property("JSON")?;
    let stringify = json.get_named_property("stringify")?;
    let fields = MESSAGE_FIELDS.iter().map(|&key| env.create_string(key)).collect::<Result<_>>()?;
    Ok(Reader { env, stringify, fields, check: Check::Strict })
  }

  /// Reads the fields of one message that the core needs into a JSON object.
  fn message(&self, item: Unknown<'env>, index: usize) -> CoreResult<(Object<'env>, Value)> {
    let env = self.env;
    let js_err = |e: napi::Error| {
      CoreError::message(index, "", format!("could not be read: {}", exception_text(env, e)))
    };
    if item.get_type().map_err(js_err)? != ValueType::Object || item.is_array().unwrap_or(false) {
      return Err(CoreError::message(
        index,
        "",
        format!("must be an object, got {}", js_type_name(&item)),
      ));
    }
    // SAFETY: checked to be a non-array object just above.
    let object: Object = unsafe { item.cast() }.map_err(js_err)?;
    let mut map = Map::new();
    for (k, &key) in MESSAGE_FIELDS.iter().enumerate() {
      let v: Unknown = object.get_property_unchecked(self.fields[k]).map_err(|e| {
        CoreError::message(index, key, format!("could not be read: {}", exception_text(env, e)))
      })?;
      match v.get_type() {
        Ok(ValueType::Undefined) => continue,
        Ok(ValueType::Function | ValueType::Symbol | ValueType::BigInt) => {
          return Err(CoreError::message(index, key, format!("must not be a {}", js_type_name(&v))))
        }
        _ => {}
      }
      let value = match key {
        "content" if v.is_array().unwrap_or(false) => self.content(v),
        _ => self.value(v, 1),
      }
      .map_err(|(path, detail)| CoreError::message(index, format!("{key}{path}"), detail))?;
      map.insert(key.to_string(), value);
    }
    Ok((object, Value::Object(map)))
  }

  /// Reads a message's `content` array: [`Reader::value`], but a part of a type no format
  /// reads is read whole, as its `JSON.stringify` text under [`JSON_TEXT_FIELD`] (json_body's
  /// `content_view`), so that it is counted by that text.
  fn content(&self, v: Unknown<'env>) -> std::result::Result<Value, (String, String)> {
    let env = self.env;
    let read =
      |e: napi::Error| (String::new(), format!("could not be read: {}", exception_text(env, e)));
    // SAFETY: the caller checked it to be an array.
    let array: Array = unsafe { v.cast() }.map_err(read)?;
    let mut items = Vec::with_capacity(array.len() as usize);
    for i in 0..array.len() {
      let at = |(p, d): (String, String)| (format!("[{i}]{p}"), d);
      let Some(item) = array.get::<Unknown>(i).map_err(read).map_err(at)? else {
        items.push(Value::Null);
        continue;
      };
      match self.unknown_part_type(&item).map_err(read).map_err(at)? {
        Some(kind) => {
          let json = self.stringify(item).map_err(|d| (format!("[{i}]"), d))?;
          let mut part = Map::new();
          part.insert("type".into(), Value::String(kind));
          part.insert(JSON_TEXT_FIELD.into(), Value::String(json));
          items.push(Value::Object(part));
        }
        None => items.push(self.value(item, 2).map_err(at)?),
      }
    }
    Ok(Value::Array(items))
  }

  /// The `type` of a content part that no format reads
  /// ([`crate::model::format::is_known_part_type`]); `None` for any other value.
  fn unknown_part_type(&self, item: &Unknown<'env>) -> Result<Option<String>> {
    if item.get_type()? != ValueType::Object || item.is_array()? {
      return Ok(None);
    }
    // SAFETY: checked to be a non-array object just above.
    let object: Object = unsafe { item.cast() }?;
    let kind: Unknown = object.get_named_property_unchecked("type")?;
    if kind.get_type()? != ValueType::String {
      return Ok(None);
    }
    let kind = String::from_unknown(kind)?;
    Ok((!crate::model::format::is_known_part_type(&kind)).then_some(kind))
  }

  /// Reads a media value ([`is_media_field`]) as json_body's `view` does: a string whole when
  /// it has at most [`MEDIA_HEAD`] bytes, else its first [`MEDIA_HEAD`] bytes (never the rest:
  /// napi copies only what the buffer holds) and its length in UTF-16 code units; bytes (a
  /// `Uint8Array`, a `Buffer`, an `ArrayBuffer`) as the base64 text of their head and the
  /// length of their whole base64 text. `None` for any other value, read as any value is.
  fn media(
    &self,
    v: &Unknown<'env>,
  ) -> std::result::Result<Option<(String, Option<usize>)>, String> {
    let raw_env = self.env.raw();
    match v.get_type().map_err(|e| e.reason)? {
      ValueType::String => {
        let mut units = 0usize;
        // SAFETY: a live string handle of the current call; a null buffer asks for the length.
        let status = unsafe {
          napi::sys::napi_get_value_string_utf16(
            raw_env,
            v.raw(),
            std::ptr::null_mut(),
            0,
            &mut units,
          )
        };
        if status != napi::sys::Status::napi_ok {
          return Err("could not be read".into());
        }
        if units <= MEDIA_HEAD {
          let text = String::from_unknown(*v).map_err(|e| e.reason)?;
          let (head, len) = media_head(&text);
          return Ok(Some((head.to_string(), len)));
        }
        let mut buf = vec![0u8; MEDIA_HEAD + 1];
        let mut written = 0usize;
        // SAFETY: `buf` holds MEDIA_HEAD + 1 bytes; napi writes at most that, NUL included,
        // and never splits a character.
        let status = unsafe {
          napi::sys::napi_get_value_string_utf8(
            raw_env,
            v.raw(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut written,
          )
        };
        if status != napi::sys::Status::napi_ok {
          return Err("could not be read".into());
        }
        buf.truncate(written.min(MEDIA_HEAD));
        let head = String::from_utf8_lossy(&buf).into_owned();
        Ok(Some((head, Some(units))))
      }
      ValueType::Object => {
        let Some(bytes) = self.bytes(v) else { return Ok(None) };
        // The head's bytes: as many as MEDIA_HEAD base64 characters hold.
        let head = &bytes[..bytes.len().min(MEDIA_HEAD / 4 * 3)];
        let len = bytes.len().div_ceil(3) * 4;
        let text = encode_base64(head);
        let len = (len > text.len()).then_some(len);
        Ok(Some((text, len)))
      }
      _ => Ok(None),
    }
  }

  /// The bytes of a typed array (a `Buffer` is one) or an `ArrayBuffer`, borrowed for the call.
  fn bytes(&self, v: &Unknown<'env>) -> Option<&'env [u8]> {
    let env = self.env.raw();
    let mut data: *mut std::ffi::c_void = std::ptr::null_mut();
    let mut len = 0usize;
    if v.is_typedarray().ok()? {
      let mut kind = 0;
      let mut buffer = std::ptr::null_mut();
      let mut offset = 0usize;
      // SAFETY: a live typed array handle of the current call; valid out pointers.
      let status = unsafe {
        napi::sys::napi_get_typedarray_info(
          env,
          v.raw(),
          &mut kind,
          &mut len,
          &mut data,
          &mut buffer,
          &mut offset,
        )
      };
      (status == napi::sys::Status::napi_ok).then_some(())?;
      // Elements to bytes: 1 for the 8-bit arrays, 2, 4 or 8 for the others.
      len = len.saturating_mul(match kind {
        3 | 4 => 2,
        5..=7 => 4,
        8..=10 => 8,
        _ => 1,
      });
    } else if v.is_arraybuffer().ok()? {
      // SAFETY: a live ArrayBuffer handle of the current call; valid out pointers.
      let status =
        unsafe { napi::sys::napi_get_arraybuffer_info(env, v.raw(), &mut data, &mut len) };
      (status == napi::sys::Status::napi_ok).then_some(())?;
    } else {
      return None;
    }
    if data.is_null() || len == 0 {
      return Some(&[]);
    }
    // SAFETY: napi gave the pointer and byte length of the view's memory, which stays in place
    // for the synchronous call that reads it.
    Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })
  }

  /// Reads a nested value; an error is the path below the value (`[0].function`) and what
  /// went wrong there.
  fn value(&self, v: Unknown<'env>, depth: usize) -> std::result::Result<Value, (String, String)> {
    if depth > MAX_DEPTH {
      return Err((String::new(), format!("is nested more than {MAX_DEPTH} levels deep")));
    }
    let env = self.env;
    let read =
      |e: napi::Error| (String::new(), format!("could not be read: {}", exception_text(env, e)));
    Ok(match v.get_type().map_err(read)? {
      ValueType::Undefined | ValueType::Null => Value::Null,
      // Functions, symbols and other non-JSON values read as null, as JSON.stringify would.
      ValueType::Function | ValueType::Symbol | ValueType::External | ValueType::Unknown => {
        Value::Null
      }
      ValueType::Boolean => Value::Bool(v.coerce_to_bool().map_err(read)?),
      ValueType::Number => {
        let n = v.coerce_to_number().and_then(|n| n.get_double()).map_err(read)?;
        serde_json::Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
      }
      ValueType::BigInt => Value::Null,
      ValueType::String => Value::String(String::from_unknown(v).map_err(read)?),
      ValueType::Object if v.is_array().map_err(read)? => {
        // SAFETY: checked to be an array.
        let array: Array = unsafe { v.cast() }.map_err(read)?;
        let mut items = Vec::with_capacity(array.len() as usize);
        for i in 0..array.len() {
          let item: Option<Unknown> = array.get(i).map_err(read)?;
          items.push(match item {
            Some(item) => self.value(item, depth + 1).map_err(|(p, d)| (format!("[{i}]{p}"), d))?,
            None => Value::Null,
          });
        }
        Value::Array(items)
      }
      ValueType::Object => {
        // SAFETY: checked to be an object.
        let object: Object = unsafe { v.cast() }.map_err(read)?;
        // The keys as napi gives them (`Object::keys`' semantics), each read by its own
        // JavaScript string: no C string made and looked up again per key.
        let names = object.get_property_names().map_err(read)?;
        let mut map = Map::new();
        for k in 0..names.get_array_length_unchecked().map_err(read)? {
          let name: Unknown = names.get_element(k).map_err(read)?;
          let key = String::from_unknown(name).map_err(read)?;
          if !NESTED_FIELDS.contains(&key.as_str()) {
            continue;
          }
          let item: Unknown = object.get_property_unchecked(name).map_err(read)?;
          // Media keys (base64 data, URLs): their head and length ([`Reader::media`]); `data`
          // whole where the object's `type` is `text` (json_body's `is_media_field`).
          let text_typed = key == TEXT_DATA_FIELD && self.is_text_typed(&object).map_err(read)?;
          if is_media_field(&key, if text_typed { Some("text") } else { None }) {
            if let Some((head, len)) = self.media(&item).map_err(|d| (format!(".{key}"), d))? {
              if let Some(len) = len {
                map.insert(format!("{key}{LENGTH_SUFFIX}"), Value::from(len));
              }
              map.insert(key, Value::String(head));
              continue;
            }
          }
          let value = if SERIALISED_FIELDS.contains(&key.as_str())
            && matches!(item.get_type(), Ok(ValueType::Object))
          {
            Value::String(self.stringify(item).map_err(|d| (format!(".{key}"), d))?)
          } else {
            self.value(item, depth + 1).map_err(|(p, d)| (format!(".{key}{p}"), d))?
          };
          map.insert(key, value);
        }
        Value::Object(map)
      }
    })
  }

  /// Whether `object`'s `type` field is the string `text`.
  fn is_text_typed(&self, object: &Object<'env>) -> Result<bool> {
    let kind: Unknown = object.get_named_property_unchecked("type")?;
    Ok(kind.get_type()? == ValueType::String && String::from_unknown(kind)? == "text")
  }

  fn stringify(&self, v: Unknown<'env>) -> std::result::Result<String, String> {
    let out = self
      .stringify
      .call(v)
      .map_err(|e| format!("could not be serialized to JSON: {}", exception_text(self.env, e)))?;
    match out.get_type() {
      Ok(ValueType::String) => String::from_unknown(out).map_err(|e| e.reason),
      _ => Ok(String::new()),
    }
  }
}

/// `JSON.stringify` of message `index` (the caller's object), e.g. to archive it verbatim.
pub(crate) fn json_stringify<'env>(
  env: &'env Env,
  value: Unknown<'env>,
  index: usize,
) -> CoreResult<String> {
  let reader = Reader::new(env).map_err(|e| CoreError::message(index, "", e.reason))?;
  let not_json = |detail: String| {
    CoreError::message(index, "", format!("could not be serialized to JSON: {detail}"))
  };
  let out = reader.stringify.call(value).map_err(|e| not_json(exception_text(env, e)))?;
  match out.get_type() {
    Ok(ValueType::String) => String::from_unknown(out).map_err(|e| not_json(e.reason)),
    _ => Err(not_json("JSON.stringify returned undefined".into())),
  }
}

/// Reads a string argument, or explains what it got instead.
pub(crate) fn string_argument(value: &Unknown<'_>, name: &str) -> CoreResult<String> {
  if matches!(value.get_type(), Ok(ValueType::String)) {
    // SAFETY: `value` is a live handle of the current call, checked to be a string.
    return unsafe { String::from_napi_value(value.env(), value.raw()) }
      .map_err(|e| CoreError::new(ErrorKind::InvalidArgument, name, e.reason));
  }
  Err(CoreError::new(
    ErrorKind::InvalidArgument,
    name,
    format!("must be a string, got {}", js_type_name(value)),
  ))
}

/// The text of a failed napi call: the message of the JavaScript exception it left pending
/// (which is cleared, so that the caller gets one coded error instead), or napi's reason.
pub(crate) fn exception_text(env: &Env, err: napi::Error) -> String {
  let mut pending = false;
  // SAFETY: `env` is the live env of the current call; `pending` is a valid out pointer.
  let status = unsafe { napi::sys::napi_is_exception_pending(env.raw(), &mut pending) };
  if status != napi::sys::Status::napi_ok || !pending {
    return err.reason;
  }
  let mut raw = std::ptr::null_mut();
  // SAFETY: an exception is pending on this live env; `raw` is a valid out pointer.
  if unsafe { napi::sys::napi_get_and_clear_last_exception(env.raw(), &mut raw) }
    != napi::sys::Status::napi_ok
  {
    return err.reason;
  }
  // SAFETY: `raw` is the exception value just returned by napi for this env.
  let exception = unsafe { Unknown::from_raw_unchecked(env.raw(), raw) };
  let text = match exception.get_type() {
    Ok(ValueType::Object) => {
      // SAFETY: checked to be an object.
      let obj: Option<Object> = unsafe { exception.cast() }.ok();
      obj
        .and_then(|o| o.get_named_property::<Unknown>("message").ok())
        .and_then(|m| String::from_unknown(m).ok())
    }
    Ok(ValueType::String) => String::from_unknown(exception).ok(),
    _ => None,
  };
  text.unwrap_or(err.reason)
}
