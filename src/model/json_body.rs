//! Request bodies given as JSON text: the messages read straight from the bytes a server
//! received (the trimmed body is written back from them by [`crate::output::json_body`]).
//!
//! A stateless server gets the whole history as a new request body on every call. Parsing it
//! into JavaScript objects and reading them back across the binding costs far more than the
//! trimming; here the body stays text. [`Body::parse`] finds each message's bytes (one pass of
//! serde_json over the text), [`message_view`] gives the fields of one message exactly as the
//! binding's object reader does (so the same bytes make the same [`crate::Message`], whichever
//! way they came in), and `Body::write` (in the output) writes the trimmed body: a kept message is its
//! original bytes, a shortened one is rewritten in its format's shape, and every byte of the
//! body outside the messages array is kept.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::model::media::{LENGTH_SUFFIX, MEDIA_HEAD};

/// Fields of a message the core reads, in every supported format.
pub(crate) const MESSAGE_FIELDS: &[&str] = &[
  "role",
  "content",
  "tool_calls",
  "tool_call_id",
  "name",
  "is_error",
  "isError",
  "_summary",
  "isSummary",
];
/// Keys read inside nested objects (content parts, tool calls, their functions, tool results'
/// outputs), across the supported formats. Other keys are never read, however large or deep.
pub(crate) const NESTED_FIELDS: &[&str] = &[
  "type",
  "text",
  "refusal",
  "id",
  "name",
  "function",
  "arguments",
  "input",
  "tool_use_id",
  "content",
  "is_error",
  "isError",
  "thinking",
  "toolCallId",
  "toolName",
  "output",
  "value",
  "providerExecuted",
  "approvalId",
  "source",
  "data",
  "image_url",
  "url",
  "detail",
  "input_audio",
  "format",
  "image",
  "mediaType",
  "media_type",
];
/// The nested key read whole only in some objects: `data`, read whole where the object's
/// `type` is `text` (the text source of an Anthropic `document`), elsewhere as media (an
/// image's or audio's base64 bytes: [`is_media_field`]).
pub(crate) const TEXT_DATA_FIELD: &str = "data";

/// Whether nested key `key` of an object whose `type` field is `kind` holds media (base64 data,
/// a data URL or a URL): a string there is read as its first [`MEDIA_HEAD`] characters and its
/// length (under `key#len`, [`LENGTH_SUFFIX`]), which is all the counts read of it.
pub(crate) fn is_media_field(key: &str, kind: Option<&str>) -> bool {
  matches!(key, "url" | "image_url" | "image") || (key == TEXT_DATA_FIELD && kind != Some("text"))
}

/// The key under which the readers put the JSON text of a content part of a type no format
/// reads ([`crate::model::format::is_known_part_type`]), read whole so that it is counted by
/// that text. No caller's key can be it: only [`NESTED_FIELDS`] are read.
pub(crate) const JSON_TEXT_FIELD: &str = "#json";

/// A media string as the readers read it ([`is_media_field`]): itself when it has at most
/// [`MEDIA_HEAD`] characters, else its head (cut at a character boundary) and its length in
/// UTF-16 code units (JavaScript's `length`, which both readers know without copying it).
pub(crate) fn media_head(text: &str) -> (&str, Option<usize>) {
  if text.len() <= MEDIA_HEAD {
    return (text, None);
  }
  let mut end = MEDIA_HEAD;
  while !text.is_char_boundary(end) {
    end -= 1;
  }
  (&text[..end], Some(text.encode_utf16().count()))
}
/// Object-valued fields read as their `JSON.stringify` text instead of being walked.
pub(crate) const SERIALISED_FIELDS: &[&str] = &["arguments", "input", "value"];
/// How deep nested values are read before the input is rejected as too deep.
pub(crate) const MAX_DEPTH: usize = 64;

/// A request body: a JSON array of messages, or an object with a `messages` array (an OpenAI
/// or Anthropic request, whose other fields are kept byte for byte).
#[derive(Debug)]
pub struct Body<'a> {
  pub(crate) text: &'a str,
  /// Where the messages array sits in `text`.
  pub(crate) array: std::ops::Range<usize>,
  /// Whether the body is an object (else it is the messages array itself).
  object: bool,
  /// Where each message sits in `text`, in order.
  pub(crate) spans: Vec<std::ops::Range<usize>>,
  /// Each message's JSON text, in order.
  pub(crate) messages: Vec<&'a str>,
}

/// Where the messages of an earlier body were, with a copy of its text: a later body that
/// starts with the same bytes (the next request of the same conversation, one turn longer)
/// has the same messages there, found without scanning them again ([`Body::parse_after`]).
#[derive(Debug, Default, Clone)]
pub struct Outline {
  text: String,
  array_start: usize,
  object: bool,
  spans: Vec<std::ops::Range<usize>>,
}

impl Outline {
  /// Makes this the outline of `body`, reusing its allocations; `shared` is how many messages
  /// `body` shares with it ([`Outline::shared_messages`]): the text up to their end is already
  /// the same, and is not copied again.
  pub fn set(&mut self, body: &Body<'_>, shared: usize) {
    let same = shared.checked_sub(1).map_or(0, |last| self.spans[last].end);
    debug_assert_eq!(self.text.as_bytes()[..same], body.text.as_bytes()[..same]);
    self.text.truncate(same);
    self.text.push_str(&body.text[same..]);
    self.array_start = body.array.start;
    self.object = body.object;
    self.spans.clear();
    self.spans.extend_from_slice(&body.spans);
  }

  /// The bytes of the text it holds.
  pub fn text_len(&self) -> usize {
    self.text.len()
  }

  /// How many of its leading messages `text` has at the same place, byte for byte. A message
  /// that is a number or a literal (not a message, but a body may hold one) must also be
  /// followed by the same byte: that byte is what ends it.
  pub fn shared_messages(&self, text: &str) -> usize {
    let bytes = self.text.as_bytes();
    let common = common_prefix(text.as_bytes(), bytes);
    let closed = |s: &std::ops::Range<usize>| matches!(bytes[s.end - 1], b'}' | b']' | b'"');
    self.spans.partition_point(|s| s.end < common || (s.end == common && closed(s)))
  }
}

/// The length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
  const CHUNK: usize = 256;
  let whole = a.chunks(CHUNK).zip(b.chunks(CHUNK)).take_while(|(x, y)| x == y).count() * CHUNK;
  let whole = whole.min(a.len()).min(b.len());
  whole + a[whole..].iter().zip(&b[whole..]).take_while(|(x, y)| x == y).count()
}

impl<'a> Body<'a> {
  /// Finds the messages of a body.
  ///
  /// One pass over the text that follows its structure (brackets, braces, commas, strings
  /// skipped to their closing quote) without decoding anything: the messages themselves are
  /// parsed only when the message cache does not hold their text, and a text it holds was
  /// parsed whole before. Outside the messages array, only the structure is checked (the body
  /// is returned as it was there).
  ///
  /// # Errors
  ///
  /// `INVALID_ARGUMENT` on `body` when the text is not JSON, or is neither an array nor an
  /// object with a `messages` array.
  pub fn parse(text: &'a str) -> Result<Body<'a>> {
    let mut scan = Scanner { bytes: text.as_bytes(), at: 0 };
    scan.skip_space();
    let object = scan.peek() == Some(b'{');
    let found = match scan.peek() {
      Some(b'[') => {
        let start = scan.at;
        scan.array_items().map(|items| Some(Ok((start..scan.at, items))))
      }
      Some(b'{') => scan.find_messages(),
      // Another JSON value: say which; anything else (nothing at all, a stray word) is not
      // JSON.
      Some(b'"' | b'n' | b't' | b'f' | b'-' | b'0'..=b'9') => {
        let got = json_type_name(&text.as_bytes()[scan.at..]);
        return Err(Body::invalid(format!(
          "must be an array of messages or an object with `messages`, got {got}"
        )));
      }
      _ => Err(Malformed(scan.at)),
    };
    Body::finish(text, scan, object, found)
  }

  /// [`Body::parse`] for a body that may start as one of `known` did: the messages the one
  /// sharing the most had at the same place ([`Outline::shared_messages`]) are taken from it,
  /// and the scan resumes after them. Returns the body and, when messages were so taken, which
  /// outline gave them and how many. The body is the one [`Body::parse`] gives: the bytes up
  /// to the end of those messages are the ones that outline was scanned from, and a scan reads
  /// them in order and nothing else.
  ///
  /// # Errors
  ///
  /// Those of [`Body::parse`].
  pub fn parse_after(
    text: &'a str,
    known: &[&Outline],
  ) -> Result<(Body<'a>, Option<(usize, usize)>)> {
    let best = known
      .iter()
      .enumerate()
      .map(|(k, o)| (o.shared_messages(text), k))
      .max_by_key(|&(shared, k)| (shared, std::cmp::Reverse(k)));
    let Some((shared, which)) = best.filter(|&(shared, _)| shared > 0) else {
      return Ok((Body::parse(text)?, None));
    };
    let known = known[which];
    let mut scan = Scanner { bytes: text.as_bytes(), at: known.spans[shared - 1].end };
    let mut items = known.spans[..shared].to_vec();
    let found = (|| {
      if scan.next(b']')? {
        scan.items(&mut items)?;
      }
      let mut found = Some(Ok((known.array_start..scan.at, items)));
      if known.object && scan.next(b'}')? {
        scan.members(|scan, key| scan.messages_member(key, &mut found))?;
      }
      Ok(found)
    })();
    match Body::finish(text, scan, known.object, found) {
      Ok(body) => Ok((body, Some((which, shared)))),
      // The error the whole scan reports, from the start.
      Err(_) => Ok((Body::parse(text)?, None)),
    }
  }

  fn invalid(detail: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, "body", detail)
  }

  /// The body from what the scan of `text` found, the cursor after the top-level value.
  fn finish(
    text: &'a str,
    mut scan: Scanner<'_>,
    object: bool,
    found: Scan<Option<Found>>,
  ) -> Result<Body<'a>> {
    let found = found.map_err(|e| Body::invalid(e.describe(text)))?;
    let (array, spans) = match found {
      Some(Ok(found)) => found,
      Some(Err(got)) => return Err(Body::invalid(format!("messages must be an array, got {got}"))),
      None => {
        return Err(Body::invalid(
          "must be an array of messages or an object with `messages`".into(),
        ))
      }
    };
    scan.skip_space();
    if scan.at < text.len() {
      return Err(Body::invalid(Malformed(scan.at).describe(text)));
    }
    let messages = spans.iter().map(|r| &text[r.clone()]).collect();
    Ok(Body { text, array, object, spans, messages })
  }

  /// The bytes of its text.
  pub fn text_len(&self) -> usize {
    self.text.len()
  }

  /// Each message's JSON text, in order.
  pub fn messages(&self) -> &[&'a str] {
    &self.messages
  }
}

/// Where the structure of a body breaks: a byte offset.
struct Malformed(usize);

impl Malformed {
  fn describe(&self, text: &str) -> String {
    let before = &text[..floor_boundary(text, self.0)];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    match text.get(self.0..).and_then(|t| t.chars().next()) {
      Some(c) => format!("is not valid JSON: unexpected {c:?} at line {line} column {column}"),
      None => format!("is not valid JSON: it ends early, at line {line} column {column}"),
    }
  }
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
  at = at.min(text.len());
  while !text.is_char_boundary(at) {
    at -= 1;
  }
  at
}

/// A cursor over a body's bytes that follows the JSON structure without decoding values.
struct Scanner<'a> {
  bytes: &'a [u8],
  at: usize,
}

type Scan<T> = std::result::Result<T, Malformed>;

impl Scanner<'_> {
  fn peek(&self) -> Option<u8> {
    self.bytes.get(self.at).copied()
  }

  fn skip_space(&mut self) {
    while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
      self.at += 1;
    }
  }

  fn expect(&mut self, byte: u8) -> Scan<()> {
    self.skip_space();
    if self.peek() != Some(byte) {
      return Err(Malformed(self.at));
    }
    self.at += 1;
    Ok(())
  }

  /// Skips a string (the cursor on its opening quote); returns its bytes, quotes included.
  fn string(&mut self) -> Scan<std::ops::Range<usize>> {
    let start = self.at;
    self.at += 1;
    loop {
      match memchr::memchr2(b'"', b'\\', &self.bytes[self.at..]) {
        None => return Err(Malformed(self.bytes.len())),
        Some(i) if self.bytes[self.at + i] == b'"' => {
          self.at += i + 1;
          return Ok(start..self.at);
        }
        // A backslash escapes the next byte (a `\uXXXX` escape's digits need no care).
        Some(i) => self.at += i + 2,
      }
      if self.at > self.bytes.len() {
        return Err(Malformed(self.bytes.len()));
      }
    }
  }

  /// Skips one value; returns its bytes.
  fn value(&mut self) -> Scan<std::ops::Range<usize>> {
    self.skip_space();
    let start = self.at;
    match self.peek() {
      Some(b'"') => {
        self.string()?;
      }
      Some(b'[' | b'{') => self.nested()?,
      Some(b't' | b'f' | b'n' | b'-' | b'0'..=b'9') => {
        while matches!(self.peek(), Some(b'a'..=b'z' | b'0'..=b'9' | b'-' | b'+' | b'.' | b'E')) {
          self.at += 1;
        }
        let token = &self.bytes[start..self.at];
        let number =
          token.iter().all(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'));
        if !(number || token == b"true" || token == b"false" || token == b"null") {
          return Err(Malformed(start));
        }
      }
      _ => return Err(Malformed(self.at)),
    }
    Ok(start..self.at)
  }

  /// Skips an array or object (the cursor on its `[` or `{`) with a stack of the brackets to
  /// close (no recursion: any depth is followed), checking that they match; inside, only
  /// strings are followed (the values are parsed if and when they are read).
  fn nested(&mut self) -> Scan<()> {
    let mut open = Vec::new();
    loop {
      match self.peek() {
        None => return Err(Malformed(self.bytes.len())),
        Some(b'"') => {
          self.string()?;
        }
        Some(b'[') => {
          open.push(b']');
          self.at += 1;
        }
        Some(b'{') => {
          open.push(b'}');
          self.at += 1;
        }
        Some(close @ (b']' | b'}')) => {
          if open.pop() != Some(close) {
            return Err(Malformed(self.at));
          }
          self.at += 1;
          if open.is_empty() {
            return Ok(());
          }
        }
        Some(_) => self.at += 1,
      }
    }
  }

  /// Skips an array (the cursor on its `[`); returns each item's bytes.
  fn array_items(&mut self) -> Scan<Vec<std::ops::Range<usize>>> {
    self.at += 1;
    let mut items = Vec::new();
    self.skip_space();
    if self.peek() == Some(b']') {
      self.at += 1;
      return Ok(items);
    }
    self.items(&mut items)?;
    Ok(items)
  }

  /// Skips the items of an array from the cursor on an item to past its closing `]`, adding
  /// each item's bytes to `items`.
  fn items(&mut self, items: &mut Vec<std::ops::Range<usize>>) -> Scan<()> {
    loop {
      items.push(self.value()?);
      if !self.next(b']')? {
        return Ok(());
      }
    }
  }

  /// After an array's item or an object's member: true past a `,` (another follows), false
  /// past the `close` that ends them (`]` or `}`).
  fn next(&mut self, close: u8) -> Scan<bool> {
    self.skip_space();
    match self.peek() {
      Some(b',') => {
        self.at += 1;
        Ok(true)
      }
      Some(c) if c == close => {
        self.at += 1;
        Ok(false)
      }
      _ => Err(Malformed(self.at)),
    }
  }

  /// Skips an object (the cursor on its `{`), calling `entry` with each key's bytes (quotes
  /// included), the cursor at its value, and the scanner, which must be left after the value.
  fn object(
    &mut self,
    entry: impl FnMut(&mut Self, std::ops::Range<usize>) -> Scan<()>,
  ) -> Scan<()> {
    self.at += 1;
    self.skip_space();
    if self.peek() == Some(b'}') {
      self.at += 1;
      return Ok(());
    }
    self.members(entry)
  }

  /// Skips the members of an object from the cursor before a key to past its closing `}`,
  /// as [`Scanner::object`] does.
  fn members(
    &mut self,
    mut entry: impl FnMut(&mut Self, std::ops::Range<usize>) -> Scan<()>,
  ) -> Scan<()> {
    loop {
      self.skip_space();
      if self.peek() != Some(b'"') {
        return Err(Malformed(self.at));
      }
      let key = self.string()?;
      self.expect(b':')?;
      self.skip_space();
      let before = self.at;
      entry(self, key)?;
      if self.at == before {
        self.value()?;
      }
      if !self.next(b'}')? {
        return Ok(());
      }
    }
  }

  /// Skips the top-level object (the cursor on its `{`); returns where its last `messages`
  /// array is and its items, or the type of its last `messages` when that is not an array
  /// (a repeated key counts last, as in `JSON.parse`).
  fn find_messages(&mut self) -> Scan<Option<Found>> {
    let mut found = None;
    self.object(|scan, key| scan.messages_member(key, &mut found))?;
    Ok(found)
  }

  /// The member of the top-level object whose key is `key` (the cursor on its value): a
  /// `messages` member is skipped and recorded in `found`, any other left to the caller.
  fn messages_member(
    &mut self,
    key: std::ops::Range<usize>,
    found: &mut Option<Found>,
  ) -> Scan<()> {
    if &self.bytes[key] != b"\"messages\"" {
      return Ok(());
    }
    self.skip_space();
    *found = Some(if self.peek() == Some(b'[') {
      let start = self.at;
      let items = self.array_items()?;
      Ok((start..self.at, items))
    } else {
      Err(json_type_name(&self.bytes[self.at..]))
    });
    Ok(())
  }
}

/// What [`Scanner::find_messages`] finds: the messages array and its items, or the type of
/// `messages` when it is not an array.
type Found = std::result::Result<Items, &'static str>;

/// Where an array is, and where each of its items is.
type Items = (std::ops::Range<usize>, Vec<std::ops::Range<usize>>);

/// The JavaScript type name of a JSON text, for error messages.
fn json_type_name(raw: &[u8]) -> &'static str {
  match raw.first() {
    Some(b'[') => "array",
    Some(b'{') => "object",
    Some(b'"') => "string",
    Some(b'n') => "null",
    Some(b't' | b'f') => "boolean",
    _ => "number",
  }
}

/// The fields of message `index` (its JSON text) that the core reads, exactly as the
/// binding's reader gives them for the object `JSON.parse` makes of the text: the
/// `MESSAGE_FIELDS` present; inside nested objects only the `NESTED_FIELDS`; an object or
/// array under a `SERIALISED_FIELDS` key as its `JSON.stringify` text; numbers as doubles.
///
/// # Errors
///
/// `INVALID_MESSAGE` naming the message and field when the text is not an object or is nested
/// deeper than `MAX_DEPTH`.
pub fn message_view(raw: &str, index: usize) -> Result<Value> {
  let e = match message_view_strict(raw, index, None) {
    Err(e) => e,
    view => return view,
  };
  let lone = escapes(raw).any(|(_, e)| matches!(e, Escape::Unit(0xd800..=0xdfff)));
  if !lone {
    return Err(e);
  }
  let Some(marks) = Marks::free_in(raw) else {
    return Err(Error::message(
      index,
      "",
      "could not be read: it has an escaped lone surrogate (\\ud800-\\udfff) and characters in \
       each of the 64 ranges of 2,048 code points of the private-use planes 15 and 16, one of \
       which the reader needs free to mark it; write the lone surrogate as \\ufffd"
        .to_string(),
    ));
  };
  match lone_surrogates_replaced(raw, LoneAs::Mark(marks)) {
    Some(marked) => message_view_strict(&marked, index, Some(marks)),
    None => Err(e),
  }
}

/// [`message_view`] of a text without lone surrogate escapes (serde_json rejects them), or
/// with them marked (`marked`: see [`LoneAs::Mark`]).
fn message_view_strict(raw: &str, index: usize, marked: Option<Marks>) -> Result<Value> {
  let unreadable =
    |e: serde_json::Error| Error::message(index, "", format!("could not be read: {e}"));
  if !raw.trim_start().starts_with('{') {
    let js: Js = serde_json::from_str(raw).map_err(unreadable)?;
    return Err(Error::message(index, "", format!("must be an object, got {}", js.type_name())));
  }
  // The message's fields as text first: a field no format reads is checked but never built,
  // whatever its depth (serde_json skips a value without recursion).
  let Entries(fields) = serde_json::from_str(raw).map_err(unreadable)?;
  let mut map = Map::new();
  for &key in MESSAGE_FIELDS {
    let Some((_, v)) = fields.iter().find(|(k, _)| k == key) else { continue };
    let value = match key {
      "content" => content_view(v.get(), marked),
      _ => read_js(v.get()).and_then(|js| view(&js, 1, marked)),
    }
    .map_err(|(path, detail)| Error::message(index, format!("{key}{path}"), detail))?;
    map.insert(key.to_string(), value);
  }
  Ok(Value::Object(map))
}

/// A value's JSON text built as the reader reads it ([`Seed::READ`]).
fn read_js(raw: &str) -> std::result::Result<Js, (String, String)> {
  Seed::READ
    .deserialize(&mut serde_json::Deserializer::from_str(raw))
    .map_err(|e| (String::new(), format!("could not be read: {e}")))
}

/// A message's `content` as the reader reads it: [`view`], but a part of a type no format reads
/// is read whole, as its JSON text under [`JSON_TEXT_FIELD`] (its `JSON.stringify` text; the
/// part's own bytes if it is too deep to build).
fn content_view(raw: &str, marked: Option<Marks>) -> std::result::Result<Value, (String, String)> {
  if !raw.trim_start().starts_with('[') {
    return view(&read_js(raw)?, 1, marked);
  }
  let items: Vec<&RawValue> =
    serde_json::from_str(raw).map_err(|e| (String::new(), format!("could not be read: {e}")))?;
  let mut out = Vec::with_capacity(items.len());
  for (i, item) in items.iter().enumerate() {
    let js = read_js(item.get()).map_err(|(p, d)| (format!("[{i}]{p}"), d))?;
    let unknown = match &js {
      Js::Obj(entries) => {
        entries.iter().rev().find(|(k, _)| k == "type").and_then(|(_, t)| match t {
          Js::Str(kind) if !crate::model::format::is_known_part_type(kind) => Some(kind.clone()),
          _ => None,
        })
      }
      _ => None,
    };
    out.push(match unknown {
      Some(kind) => {
        let whole = Seed::WHOLE.deserialize(&mut serde_json::Deserializer::from_str(item.get()));
        let text = match whole {
          Ok(whole) => {
            let mut s = String::new();
            whole.stringify(&mut s);
            unmarked(&s, true, marked).into_owned()
          }
          Err(_) => item.get().to_string(),
        };
        let mut part = Map::new();
        part.insert("type".into(), Value::String(unmarked(&kind, false, marked).into_owned()));
        part.insert(JSON_TEXT_FIELD.into(), Value::String(text));
        Value::Object(part)
      }
      None => view(&js, 2, marked).map_err(|(p, d)| (format!("[{i}]{p}"), d))?,
    });
  }
  Ok(Value::Array(out))
}

/// A nested value as the reader reads it; an error is the path below the value and what went
/// wrong there. With `marked`, its strings hold marked lone surrogates ([`LoneAs::Mark`]).
fn view(
  v: &Js,
  depth: usize,
  marked: Option<Marks>,
) -> std::result::Result<Value, (String, String)> {
  if depth > MAX_DEPTH {
    return Err((String::new(), format!("is nested more than {MAX_DEPTH} levels deep")));
  }
  Ok(match v {
    Js::Null => Value::Null,
    Js::Bool(b) => Value::Bool(*b),
    Js::Num(n) => serde_json::Number::from_f64(*n).map(Value::Number).unwrap_or(Value::Null),
    Js::Str(s) if marked.is_some() => Value::String(unmarked(s, false, marked).into_owned()),
    Js::Str(s) => Value::String(s.clone()),
    Js::Arr(items) => Value::Array(
      items
        .iter()
        .enumerate()
        .map(|(i, item)| view(item, depth + 1, marked).map_err(|(p, d)| (format!("[{i}]{p}"), d)))
        .collect::<std::result::Result<_, _>>()?,
    ),
    Js::Obj(entries) => {
      let mut map = Map::new();
      let kind = entries.iter().find(|(k, _)| k == "type").and_then(|(_, v)| match v {
        Js::Str(s) => Some(s.as_str()),
        _ => None,
      });
      for (key, item) in js_key_order(entries) {
        if !NESTED_FIELDS.contains(&key.as_str()) {
          continue;
        }
        if let (true, Js::Str(text)) = (is_media_field(key, kind), item) {
          let text = unmarked(text, false, marked);
          let (head, len) = media_head(&text);
          map.insert(key.clone(), Value::String(head.to_string()));
          if let Some(len) = len {
            map.insert(format!("{key}{LENGTH_SUFFIX}"), Value::from(len));
          }
          continue;
        }
        let value = match item {
          Js::Obj(_) | Js::Arr(_) if SERIALISED_FIELDS.contains(&key.as_str()) => {
            let mut s = String::new();
            item.stringify(&mut s);
            Value::String(unmarked(&s, true, marked).into_owned())
          }
          _ => view(item, depth + 1, marked).map_err(|(p, d)| (format!(".{key}{p}"), d))?,
        };
        map.insert(key.clone(), value);
      }
      Value::Object(map)
    }
  })
}

/// A JSON value as `JSON.parse` makes it: numbers are doubles, an object's keys keep their
/// order, and a repeated key keeps its first place and its last value.
#[derive(Debug, Clone, PartialEq)]
enum Js {
  Null,
  Bool(bool),
  Num(f64),
  Str(String),
  Arr(Vec<Js>),
  Obj(Vec<(String, Js)>),
}

impl Js {
  fn type_name(&self) -> &'static str {
    match self {
      Js::Null => "null",
      Js::Bool(_) => "boolean",
      Js::Num(_) => "number",
      Js::Str(_) => "string",
      Js::Arr(_) => "array",
      Js::Obj(_) => "object",
    }
  }

  /// Appends `JSON.stringify` of the value.
  fn stringify(&self, out: &mut String) {
    match self {
      Js::Null => out.push_str("null"),
      Js::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
      Js::Num(n) => push_js_number(out, *n),
      Js::Str(s) => push_json_string(out, s),
      Js::Arr(items) => {
        out.push('[');
        for (i, item) in items.iter().enumerate() {
          if i > 0 {
            out.push(',');
          }
          item.stringify(out);
        }
        out.push(']');
      }
      Js::Obj(entries) => {
        out.push('{');
        for (i, (key, item)) in js_key_order(entries).into_iter().enumerate() {
          if i > 0 {
            out.push(',');
          }
          push_json_string(out, key);
          out.push(':');
          item.stringify(out);
        }
        out.push('}');
      }
    }
  }
}

/// An object's entries in JavaScript's property order: array-index keys ascending, then the
/// other keys in the order they were added.
fn js_key_order(entries: &[(String, Js)]) -> Vec<&(String, Js)> {
  let mut indexed: Vec<(u32, &(String, Js))> =
    entries.iter().filter_map(|e| array_index(&e.0).map(|i| (i, e))).collect();
  if indexed.is_empty() {
    return entries.iter().collect();
  }
  indexed.sort_by_key(|(i, _)| *i);
  let mut out: Vec<&(String, Js)> = indexed.into_iter().map(|(_, e)| e).collect();
  out.extend(entries.iter().filter(|e| array_index(&e.0).is_none()));
  out
}

/// The key as an array index (a canonical integer below 2³² − 1), if it is one.
fn array_index(key: &str) -> Option<u32> {
  if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
    return None;
  }
  if key.len() > 1 && key.starts_with('0') {
    return None;
  }
  key.parse::<u64>().ok().filter(|&n| n < u64::from(u32::MAX)).map(|n| n as u32)
}

/// How [`lone_surrogates_replaced`] spells a lone surrogate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoneAs {
  /// `\ufffd`: what the binding's reader reads for one in a string.
  Replacement,
  /// A mark ([`Marks`]), one character per surrogate, that [`unmarked`] turns into U+FFFD in a
  /// string read, or back into its escape in a `JSON.stringify` text: an object's lone
  /// surrogate is written escaped there (`{"a":"\ud800"}`), and counted so.
  Mark(Marks),
}

/// Where [`LoneAs::Mark`] puts its marks: the 2,048 code points from `base`, one per
/// surrogate, in a range of the supplementary private-use planes (15 and 16) that no character
/// of the message falls in, so that a mark is never taken for a character of the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marks {
  base: u32,
}

impl Marks {
  /// The first code point of the private-use planes.
  const PLANES: u32 = 0xF_0000;
  /// How many code points a range holds: one per surrogate.
  const RANGE: u32 = 0x800;

  /// The highest range that no character of `raw` (JSON text: written as it is or escaped,
  /// in keys and values alike) falls in; `None` when one falls in each of the 64.
  fn free_in(raw: &str) -> Option<Marks> {
    let mut used = [false; 64];
    // Escapes are ASCII, so the characters written as they are and the escaped pairs are all.
    let written = raw.chars().map(u32::from);
    let escaped = escapes(raw).filter_map(|(_, e)| match e {
      Escape::Pair(code) => Some(code),
      _ => None,
    });
    for code in written.chain(escaped) {
      if let Some(k) = code.checked_sub(Self::PLANES) {
        used[(k / Self::RANGE) as usize] = true;
      }
    }
    (0..64u32)
      .rev()
      .find(|&k| !used[k as usize])
      .map(|k| Marks { base: Self::PLANES + k * Self::RANGE })
  }

  /// The mark of surrogate `unit`.
  fn of(self, unit: u16) -> u32 {
    self.base + u32::from(unit - 0xd800)
  }

  /// The surrogate `c` marks, if it is a mark.
  fn unit(self, c: char) -> Option<u16> {
    let offset = u32::from(c).checked_sub(self.base).filter(|&o| o < Self::RANGE)?;
    u16::try_from(0xd800 + offset).ok()
  }
}

/// A backslash escape of JSON text, as [`escapes`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
  /// `\uXXXX\uXXXX`: a high and a low surrogate, the character they make.
  Pair(u32),
  /// `\uXXXX` alone: a lone surrogate when in U+D800..=U+DFFF.
  Unit(u16),
  /// A backslash and one character (`\\`, `\"`, `\n`…).
  Char,
}

impl Escape {
  /// Its length in bytes.
  fn len(self) -> usize {
    match self {
      Escape::Pair(_) => 12,
      Escape::Unit(_) => 6,
      Escape::Char => 2,
    }
  }
}

/// The backslash escapes of JSON text `raw`, in order, each with where it starts: the one
/// reading of escapes that [`Marks::free_in`] and [`lone_surrogates_replaced`] share.
fn escapes(raw: &str) -> impl Iterator<Item = (usize, Escape)> + '_ {
  let bytes = raw.as_bytes();
  let mut from = 0;
  std::iter::from_fn(move || {
    let at = from + memchr::memchr(b'\\', bytes.get(from..)?)?;
    let escape = match (escaped_unit(bytes, at), escaped_unit(bytes, at + 6)) {
      (Some(high @ 0xd800..=0xdbff), Some(low @ 0xdc00..=0xdfff)) => {
        Escape::Pair(0x1_0000 + ((u32::from(high) - 0xd800) << 10) + (u32::from(low) - 0xdc00))
      }
      (Some(unit), _) => Escape::Unit(unit),
      _ => Escape::Char,
    };
    from = at + escape.len();
    Some((at, escape))
  })
}

/// The code unit of the `\uXXXX` escape at `at` in `bytes`, if there is one.
fn escaped_unit(bytes: &[u8], at: usize) -> Option<u16> {
  let hex = bytes.get(at..at + 6)?;
  if hex[0] != b'\\' || hex[1] != b'u' {
    return None;
  }
  u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
}

/// `raw` (JSON text) with every escaped lone surrogate (`\ud800` not followed by a low
/// surrogate's escape, or a low one not after a high one) spelled as `lone` says, or `None`
/// when it has none. `JSON.parse` takes a lone surrogate into the string, and the binding reads
/// such a string's UTF-8 with U+FFFD for it, as V8 writes it; serde_json rejects the escape.
pub(crate) fn lone_surrogates_replaced(raw: &str, lone: LoneAs) -> Option<String> {
  let mut out = String::new();
  let mut copied = 0;
  for (at, escape) in escapes(raw) {
    let Escape::Unit(unit @ 0xd800..=0xdfff) = escape else { continue };
    out.push_str(&raw[copied..at]);
    match lone {
      LoneAs::Replacement => out.push_str("\\ufffd"),
      LoneAs::Mark(marks) => {
        // The mark's own escape, a surrogate pair.
        let offset = marks.of(unit) - 0x1_0000;
        let (high, low) = (0xd800 + (offset >> 10), 0xdc00 + (offset & 0x3ff));
        out.push_str(&format!("\\u{high:04x}\\u{low:04x}"));
      }
    }
    copied = at + 6;
  }
  if copied == 0 {
    return None;
  }
  out.push_str(&raw[copied..]);
  Some(out)
}

/// `text` with each of `marks`' marks ([`LoneAs::Mark`]) as U+FFFD, or with `escaped` as the
/// escape `JSON.stringify` writes for its lone surrogate (`\ud800`); as it is without `marks`.
fn unmarked(text: &str, escaped: bool, marks: Option<Marks>) -> Cow<'_, str> {
  let Some(marks) = marks.filter(|m| text.chars().any(|c| m.unit(c).is_some())) else {
    return Cow::Borrowed(text);
  };
  let mut out = String::with_capacity(text.len());
  for c in text.chars() {
    match marks.unit(c) {
      Some(unit) if escaped => out.push_str(&format!("\\u{unit:04x}")),
      Some(_) => out.push('\u{fffd}'),
      None => out.push(c),
    }
  }
  Cow::Owned(out)
}

/// Appends a string as JSON, escaped as `JSON.stringify` escapes it.
pub(crate) fn push_json_string(out: &mut String, s: &str) {
  // serde_json escapes exactly what JSON.stringify does for well-formed strings: `"`, `\`,
  // and control characters (`\b \t \n \f \r`, others as lower-case `\u00xx`).
  match serde_json::to_string(s) {
    Ok(quoted) => out.push_str(&quoted),
    Err(_) => out.push_str("\"\""),
  }
}

/// Appends a double as JavaScript's `Number.prototype.toString` writes it (ECMA-262
/// Number::toString): the shortest digits that read back to the same double, in decimal
/// notation for exponents from -7 to 20 and in `d.ddde±n` notation otherwise.
fn push_js_number(out: &mut String, x: f64) {
  if !x.is_finite() {
    out.push_str("null");
    return;
  }
  if x == 0.0 {
    out.push('0');
    return;
  }
  if x < 0.0 {
    out.push('-');
  }
  // Rust's `{:e}` gives the shortest round-trip digits too: "1.2345e3", "5e-7".
  let sci = format!("{:e}", x.abs());
  let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
  let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
  let k = digits.len() as i64;
  let n = exponent.parse::<i64>().unwrap_or(0) + 1;
  if k <= n && n <= 21 {
    out.push_str(&digits);
    out.extend(std::iter::repeat_n('0', (n - k) as usize));
  } else if 0 < n && n <= 21 {
    out.push_str(&digits[..n as usize]);
    out.push('.');
    out.push_str(&digits[n as usize..]);
  } else if -6 < n && n <= 0 {
    out.push_str("0.");
    out.extend(std::iter::repeat_n('0', (-n) as usize));
    out.push_str(&digits);
  } else {
    out.push_str(&digits[..1]);
    if k > 1 {
      out.push('.');
      out.push_str(&digits[1..]);
    }
    let e = n - 1;
    let _ = write!(out, "e{}{}", if e >= 0 { '+' } else { '-' }, e.abs());
  }
}

impl<'de> Deserialize<'de> for Js {
  fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Js, D::Error> {
    Seed::WHOLE.deserialize(d)
  }
}

/// How a JSON value is built into a [`Js`]: whole, or as the reader reads it (inside objects
/// only the `NESTED_FIELDS`, their values read the same way, or whole under a
/// `SERIALISED_FIELDS` key for its `JSON.stringify` text; the other keys skipped without
/// being built, so without recursion whatever their depth).
#[derive(Clone, Copy)]
struct Seed {
  read: bool,
}

impl Seed {
  const WHOLE: Seed = Seed { read: false };
  const READ: Seed = Seed { read: true };
}

impl<'de> DeserializeSeed<'de> for Seed {
  type Value = Js;
  fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Js, D::Error> {
    d.deserialize_any(self)
  }
}

impl<'de> Visitor<'de> for Seed {
  type Value = Js;
  fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
    f.write_str("a JSON value")
  }
  fn visit_unit<E>(self) -> std::result::Result<Js, E> {
    Ok(Js::Null)
  }
  fn visit_bool<E>(self, b: bool) -> std::result::Result<Js, E> {
    Ok(Js::Bool(b))
  }
  fn visit_i64<E>(self, n: i64) -> std::result::Result<Js, E> {
    Ok(Js::Num(n as f64))
  }
  fn visit_u64<E>(self, n: u64) -> std::result::Result<Js, E> {
    Ok(Js::Num(n as f64))
  }
  fn visit_f64<E>(self, n: f64) -> std::result::Result<Js, E> {
    Ok(Js::Num(n))
  }
  fn visit_str<E>(self, s: &str) -> std::result::Result<Js, E> {
    Ok(Js::Str(s.to_string()))
  }
  fn visit_string<E>(self, s: String) -> std::result::Result<Js, E> {
    Ok(Js::Str(s))
  }
  fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Js, A::Error> {
    let mut items = Vec::new();
    while let Some(item) = seq.next_element_seed(self)? {
      items.push(item);
    }
    Ok(Js::Arr(items))
  }
  fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Js, A::Error> {
    let mut entries: Vec<(String, Js)> = Vec::new();
    while let Some(key) = map.next_key::<String>()? {
      let seed = if !self.read || SERIALISED_FIELDS.contains(&key.as_str()) {
        Seed::WHOLE
      } else if NESTED_FIELDS.contains(&key.as_str()) {
        Seed::READ
      } else {
        map.next_value::<serde::de::IgnoredAny>()?;
        continue;
      };
      let value = map.next_value_seed(seed)?;
      set_entry(&mut entries, key, value);
    }
    Ok(Js::Obj(entries))
  }
}

/// An object's entries with their values as JSON text, in order (a repeated key keeps its
/// first place and its last value, as `JSON.parse` does).
pub(crate) struct Entries<'a>(pub(crate) Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
  fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Entries<'a>, D::Error> {
    struct EntriesVisitor<'a>(std::marker::PhantomData<&'a ()>);
    impl<'de: 'a, 'a> Visitor<'de> for EntriesVisitor<'a> {
      type Value = Entries<'a>;
      fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
      }
      fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
      ) -> std::result::Result<Entries<'a>, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, &'a RawValue>()? {
          set_entry(&mut entries, key, value);
        }
        Ok(Entries(entries))
      }
    }
    d.deserialize_map(EntriesVisitor(std::marker::PhantomData))
  }
}

/// Adds an entry, or gives a repeated key its new value in its first place. A linear search up
/// to a few dozen keys; beyond that (an object no message format has) the repeated key is
/// looked for from the end, which is where a generated repeat usually is.
fn set_entry<V>(entries: &mut Vec<(String, V)>, key: String, value: V) {
  match entries.iter_mut().rev().take(64).find(|(k, _)| *k == key) {
    Some(slot) => slot.1 = value,
    None => entries.push((key, value)),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// A media string is read as its head and its length; a part of a type no format reads as
  /// its JSON text; both as the binding's object reader reads them (`counting.spec.ts`).
  #[test]
  fn views_keep_the_head_of_media_and_the_json_of_unknown_parts() {
    let long = "A".repeat(MEDIA_HEAD + 10);
    let raw = format!(
      r#"{{"role":"user","content":[{{"type":"image","source":{{"type":"base64","data":"{long}"}}}},{{"type":"weird","b":[1,2.5,"x"],"a":{{"z":null}}}},{{"type":"text","text":"hi","extra":1}}],"other":1}}"#
    );
    let view = message_view(&raw, 0).unwrap();
    let parts = view["content"].as_array().unwrap();
    let source = &parts[0]["source"];
    assert_eq!(source["data"].as_str().unwrap().len(), MEDIA_HEAD);
    assert_eq!(source[&format!("data{LENGTH_SUFFIX}")], MEDIA_HEAD + 10);
    assert_eq!(parts[1]["type"], "weird");
    assert_eq!(parts[1][JSON_TEXT_FIELD], r#"{"type":"weird","b":[1,2.5,"x"],"a":{"z":null}}"#);
    assert_eq!(parts[2], serde_json::json!({"type": "text", "text": "hi"}));
    assert_eq!(media_head("short"), ("short", None));
    let wide = "é".repeat(MEDIA_HEAD);
    let (head, len) = media_head(&wide);
    assert!(head.len() <= MEDIA_HEAD && head.len() % 2 == 0);
    assert_eq!(len, Some(MEDIA_HEAD));
  }

  fn js_string(x: f64) -> String {
    let mut s = String::new();
    push_js_number(&mut s, x);
    s
  }

  #[test]
  fn lone_surrogate_escapes_read_as_the_replacement_character() {
    let cases = [
      (r#"{"content":"a\ud800b"}"#, Some(r#"{"content":"a\ufffdb"}"#)),
      (
        r#"{"content":"\udc00\ud83d\ude00\ud83d"}"#,
        Some(r#"{"content":"\ufffd\ud83d\ude00\ufffd"}"#),
      ),
      (r#"{"content":"\\ud800 \\\ud800"}"#, Some(r#"{"content":"\\ud800 \\\ufffd"}"#)),
      (r#"{"\uDBFF":"\uDBFF\u0041"}"#, Some(r#"{"\ufffd":"\ufffd\u0041"}"#)),
      (r#"{"content":"\ud83d\ude00 \u00e9 \\"}"#, None),
    ];
    for (raw, want) in cases {
      assert_eq!(lone_surrogates_replaced(raw, LoneAs::Replacement).as_deref(), want, "{raw}");
    }
    let view = message_view(r#"{"role":"user","content":"x\ud800y"}"#, 3).expect("read");
    assert_eq!(view["content"], "x\u{fffd}y");
    // In an arguments object, as JSON.stringify writes it: the escape, lower-case; in a string,
    // U+FFFD; every surrogate of the range.
    let call = r#"{"role":"assistant","content":"\uDFFF a","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"a":"x\uD800\udbff\ud83d\ude00\udc00"}}}]}"#;
    let view = message_view(call, 0).expect("read");
    assert_eq!(view["content"], "\u{fffd} a");
    let arguments = &view["tool_calls"][0]["function"]["arguments"];
    assert_eq!(arguments, r#"{"a":"x\ud800\udbff😀\udc00"}"#);
    let bad = message_view(r#"{"role":"user","content":"x\ud800y}"#, 3).expect_err("unterminated");
    assert!(bad.to_string().contains("messages[3]"), "{bad}");
  }

  #[test]
  fn marks_are_never_taken_for_the_message_s_own_private_use_characters() {
    // Characters of the last private-use range, written and escaped (U+10F801 as a pair),
    // beside a lone surrogate: they stay what they are; the lone one reads as U+FFFD in a
    // string and as its escape in an arguments object's text.
    let raw = "{\"role\":\"assistant\",\"content\":\"\u{10f800}\\udbfe\\udc01 \\ud800\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":\"\u{10ffff}\\udbff\"}}}]}";
    let view = message_view(raw, 0).expect("read");
    assert_eq!(view["content"], "\u{10f800}\u{10f801} \u{fffd}");
    assert_eq!(view["tool_calls"][0]["function"]["arguments"], "{\"a\":\"\u{10ffff}\\udbff\"}");
    let marks = Marks::free_in(raw).expect("a free range");
    assert_eq!(marks.base, 0x10_F000, "the highest range without a character of the message");
    // With a character in each of the 64 ranges, nothing is free: the message is an error, as
    // serde_json has it.
    let crowded: String =
      (0..64u32).filter_map(|k| char::from_u32(0xF_0000 + k * 0x800 + 5)).collect();
    let raw = format!("{{\"role\":\"user\",\"content\":\"{crowded}\\ud800\"}}");
    assert_eq!(Marks::free_in(&raw), None);
    let refused = message_view(&raw, 2).expect_err("no range free").to_string();
    assert!(refused.contains("messages[2]") && refused.contains("as \\ufffd"), "{refused}");
  }

  #[test]
  fn numbers_are_written_as_javascript_writes_them() {
    let cases = [
      (1.0, "1"),
      (-0.0, "0"),
      (0.1, "0.1"),
      (1.5e-7, "1.5e-7"),
      (0.000001, "0.000001"),
      (1e21, "1e+21"),
      (1e20, "100000000000000000000"),
      (123456789.125, "123456789.125"),
      (-2.5e-300, "-2.5e-300"),
      (9007199254740993.0, "9007199254740992"),
      (1.7976931348623157e308, "1.7976931348623157e+308"),
    ];
    for (x, want) in cases {
      assert_eq!(js_string(x), want, "{x}");
    }
  }

  #[test]
  fn serialised_fields_read_as_json_stringify_text() {
    let raw = r#"{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"edit",
      "input":{"z":1.0,"a":"é\u00e9","2":[1e2,null],"1":true,"a":"last"}}],"extra":{"big":1}}"#;
    let v = message_view(raw, 0).unwrap();
    assert_eq!(
      v["content"][0]["input"],
      Value::String(r#"{"1":true,"2":[100,null],"z":1,"a":"last"}"#.into())
    );
    assert!(v.get("extra").is_none());
    assert_eq!(v["content"][0]["id"], "t1");
  }

  #[test]
  fn the_scan_follows_strings_escapes_and_nesting() {
    let text = " [ {\"a\":\"]},[\\\"\\\\\",\"b\":[1,{\"c\":null}]} , 2.5e-3,\"x\",true ]\n";
    let body = Body::parse(text).unwrap();
    assert_eq!(
      body.messages(),
      [r#"{"a":"]},[\"\\","b":[1,{"c":null}]}"#, "2.5e-3", r#""x""#, "true"]
    );
    let nested =
      r#"{"tools":[{"messages":[1]}],"messages":[{"role":"user"}],"x":{"messages":"no"}}"#;
    assert_eq!(Body::parse(nested).unwrap().messages(), [r#"{"role":"user"}"#]);
    for bad in ["[1 2]", "[\"open]", "[1,]", "[1] x", "{\"messages\":[1],}", "[tru]"] {
      assert!(Body::parse(bad).is_err(), "{bad}");
    }
    // Inside a message only brackets and strings are followed: the message's own parse, when
    // the cache does not hold its bytes, finds the rest.
    for bad in ["[{\"a\" 1}]", "[{1:2}]"] {
      let body = Body::parse(bad).unwrap();
      assert!(message_view(body.messages()[0], 0).is_err(), "{bad}");
    }
    assert_eq!(Body::parse("[]").unwrap().messages().len(), 0);
    // Any depth is followed without recursion; brackets must match.
    let deep = format!(
      "[{{\"role\":\"user\",\"content\":\"x\",\"meta\":{}1{}}}]",
      "[{\"a\":".repeat(200_000),
      "}]".repeat(200_000)
    );
    let body = Body::parse(&deep).unwrap();
    // A field no format reads is skipped whatever its depth, as the object reader skips it.
    assert_eq!(
      message_view(body.messages()[0], 0).unwrap(),
      serde_json::json!({"role": "user", "content": "x"})
    );
    assert!(Body::parse("[[}]").is_err());
    assert!(Body::parse(&"[".repeat(1_000_000)).is_err());
  }

  /// What [`Body::parse`] gives, to compare: the array, the messages, or the error.
  fn parsed(
    r: Result<Body<'_>>,
  ) -> std::result::Result<(std::ops::Range<usize>, Vec<String>), String> {
    r.map(|b| (b.array.clone(), b.messages().iter().map(|m| m.to_string()).collect()))
      .map_err(|e| e.to_string())
  }

  #[test]
  fn a_body_parsed_after_another_is_parsed_as_on_its_own() {
    let outline = |text: &str| {
      let mut o = Outline::default();
      o.set(&Body::parse(text).unwrap(), 0);
      o
    };
    let m = |i: usize| format!(r#"{{"role":"user","content":"m{i} \"q\" \\"}}"#);
    let list = |n: usize| (0..n).map(m).collect::<Vec<_>>().join(",");
    let cases: Vec<(String, Vec<String>)> = vec![
      // The next turn: one message more, in an array and in an object with fields after it.
      (
        format!("[{}]", list(3)),
        vec![format!("[{}]", list(4)), format!("[{}]", list(3)), format!("[{}]", list(2))],
      ),
      (
        format!(r#"{{"model":"x","messages":[{}],"stream":true}}"#, list(3)),
        vec![
          format!(r#"{{"model":"x","messages":[{}],"stream":true}}"#, list(5)),
          format!(r#"{{"model":"x","messages":[{}]}}"#, list(3)),
          // A later `messages` key counts, as in JSON.parse.
          format!(r#"{{"model":"x","messages":[{}],"messages":[{}]}}"#, list(3), list(1)),
          format!(r#"{{"model":"x","messages":[{}],"messages":7}}"#, list(3)),
          format!(r#"{{"model":"x","messages":[{}],}}"#, list(3)),
          format!(r#"{{"model":"y","messages":[{}]}}"#, list(3)),
        ],
      ),
      // Numbers and literals end at the next byte: `12` then `123` is not the same item.
      (
        "[12,true,3]".into(),
        vec![
          "[123,true,3]".into(),
          "[12,truex]".into(),
          "[12,true,34]".into(),
          "[12,true]".into(),
          "[12 , true , 3 ]".into(),
        ],
      ),
      // A message changed inside, whitespace, a broken tail, another body altogether.
      (
        format!("[{}]", list(3)),
        vec![
          format!("[{},{}]", list(2), m(9)),
          format!("[{} ,\n{}]", list(2), m(2)),
          format!("[{},", list(3)),
          format!("[{}] x", list(3)),
          format!("[{},{{\"role\":1 2}}]", list(3)),
          "{}".into(),
          "".into(),
          format!("[{}]", list(0)),
        ],
      ),
    ];
    for (before, afters) in &cases {
      let known = outline(before);
      for after in afters {
        let alone = parsed(Body::parse(after));
        let (again, shared) = match Body::parse_after(after, &[&outline("[]"), &known]) {
          Ok((body, used)) => (
            parsed(Ok(body)),
            used.map_or(0, |(which, n)| {
              assert_eq!(which, 1);
              n
            }),
          ),
          Err(e) => (Err(e.to_string()), 0),
        };
        assert_eq!(again, alone, "{before} then {after}");
        assert!(shared <= known.spans.len());
        // Outlining the new body over the old one keeps only the text they share.
        if let Ok(body) = Body::parse(after) {
          let mut over = known.clone();
          over.set(&body, shared);
          assert_eq!(over.text, *after);
          assert_eq!(over.spans, outline(after).spans);
        }
      }
    }
    // The messages found in place are the ones before the first difference.
    let known = outline(&format!("[{}]", list(3)));
    let used = |text: &str, known: &[&Outline]| Body::parse_after(text, known).unwrap().1;
    assert_eq!(used(&format!("[{}]", list(4)), &[&known]), Some((0, 3)));
    assert_eq!(used(&format!("[{},{}]", list(2), m(9)), &[&known]), Some((0, 2)));
    assert_eq!(used("[12]", &[&outline("[1]")]), None);
    // The outline sharing the most gives them; the first of equals.
    let two = outline(&format!("[{}]", list(2)));
    assert_eq!(used(&format!("[{}]", list(4)), &[&two, &known, &known]), Some((1, 3)));
    assert_eq!(used(&format!("[{}]", list(2)), &[&two, &known]), Some((0, 2)));
  }

  #[test]
  fn bad_bodies_and_messages_are_named() {
    let e = |t: &str| Body::parse(t).unwrap_err().to_string();
    assert!(e("[1,").contains("body"), "{}", e("[1,"));
    assert!(
      e(r#"{"messages": 3}"#).contains("messages must be an array, got number"),
      "{}",
      e(r#"{"messages": 3}"#)
    );
    assert!(e(r#""x""#).contains("got string"));
    assert!(e("12").contains("got number"));
    // Nothing, or no JSON at all, is said to be so (it read "got number").
    assert_eq!(e("  "), "body: is not valid JSON: it ends early, at line 1 column 3");
    assert_eq!(e("x"), "body: is not valid JSON: unexpected 'x' at line 1 column 1");
    let m = message_view("[1]", 4).unwrap_err().to_string();
    assert!(m.contains("4") && m.contains("must be an object, got array"), "{m}");
    let deep = format!(r#"{{"role":"user","content":{}1{}}}"#, "[".repeat(70), "]".repeat(70));
    let m = message_view(&deep, 0).unwrap_err().to_string();
    assert!(m.contains("nested more than 64"), "{m}");
  }
}
