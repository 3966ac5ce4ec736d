//! `trimByPriorityJson` and `trimWithPlaceholdersJson`: trimming a request body given as JSON
//! text (a string or the bytes of a `Buffer`), for servers that receive the whole history on
//! every request.
//!
//! Nothing is read from JavaScript objects: the body crosses the boundary once (a string is
//! copied into UTF-8; a `Uint8Array` is borrowed without a copy), serde_json finds each
//! message's text, and a message whose text was seen on an earlier call is taken from the
//! message cache by that text (a hash and a comparison), with its memoised counts. The result
//! is the trimmed body as text, built from the original bytes of the kept messages
//! (see [`crate::model::json_body`]).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{Env, JsString, JsValue, ValueType};
use napi_derive::napi;

use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::format::{detect_from, Format, Signals};
use crate::model::json_body::{message_view, Body};
use crate::model::message::Message;
use crate::napi::base::cache::{BodyEntry, BodyMessage, Cached, ContentKey, MessageCache, Rewrite};
use crate::napi::base::error;
use crate::napi::base::read::js_type_name;
use crate::napi::base::task::Operation;
use crate::napi::base::trim::{trim_op, Strategy};
use crate::output::json_body::{rewrite, written_units};
use crate::plan::Action;

/// The result of {@link trimByPriorityJson} and {@link trimWithPlaceholdersJson}.
#[napi(object, object_from_js = false)]
pub struct TrimJsonResult<'env> {
  /// The trimmed body, as JSON text: the body you gave with its messages array trimmed, and
  /// every byte outside that array unchanged. Kept messages are their original bytes;
  /// shortened messages (cut, or placeholders) are rewritten compactly with their other fields
  /// in order, as `JSON.stringify` writes the copies {@link trimByPriority} returns (without
  /// the hidden `_truncated`-style metadata, which `JSON.stringify` leaves out there too); an
  /// inserted summary is `{"role":"user","content":…}`. A string when the body was given as
  /// a string, else a `Buffer` of UTF-8 (typed as the `Uint8Array` it is, so that no Node
  /// types are needed; no string is made: a server sends it as it is).
  #[napi(ts_type = "string | Uint8Array")]
  pub body: Either<JsString<'env>, BufferSlice<'env>>,
  /// The indices (in the body's messages) of the messages dropped, in order.
  pub dropped: Vec<u32>,
  /// The indices of the messages returned shortened (cut, or replaced by a placeholder).
  pub replaced: Vec<u32>,
  /// Tokens before minus tokens after.
  pub saved_tokens: u32,
  /// With `summarizeDropped`, when something was dropped or replaced: the summary of it,
  /// starting with `[context-trim summary]`.
  pub summary: Option<String>,
  /// As {@link TrimResult.overBudget}.
  pub over_budget: bool,
  /// The tokens of the returned messages (an inserted summary included).
  pub total_tokens: u32,
}

/// {@link trimByPriority} on a request body given as JSON text: a JSON array of messages, or an
/// object with a `messages` array (an OpenAI or Anthropic request body; only `messages` is
/// counted and trimmed, the other fields are returned byte for byte). Give the body as you
/// received it, a string or a `Buffer`/`Uint8Array` of UTF-8 (borrowed, not copied): no
/// `JSON.parse`, no objects. The decisions are those {@link trimByPriority} makes on
/// `JSON.parse(body)` (its messages), with the same options. Messages seen on earlier calls
/// are recognised by their text, so a stateless server that gets the whole history on every
/// request pays for reading the new messages only. The `summarizer` option is not available
/// (it needs the async variant and your objects).
///
/// Errors: `INVALID_ARGUMENT` naming `body` when it is not a string or a `Uint8Array`, not
/// UTF-8, not JSON, or has no messages array; `INVALID_MESSAGE` naming the message's index
/// and field, as {@link trimByPriority}.
#[napi(
  catch_unwind,
  ts_generic_types = "B extends string | Uint8Array = string",
  ts_args_type = "body: B, options: TrimOptions",
  ts_return_type = "TrimJsonResult & { body: B extends string ? string : Uint8Array }"
)]
pub fn trim_by_priority_json<'env>(
  env: &'env Env,
  body: Unknown<'_>,
  options: Unknown<'_>,
) -> Result<TrimJsonResult<'env>> {
  trim_json(env, body, options, Strategy::ByPriority)
}

/// {@link trimWithPlaceholders} on a request body given as JSON text, as
/// {@link trimByPriorityJson} does for {@link trimByPriority}.
#[napi(
  catch_unwind,
  ts_generic_types = "B extends string | Uint8Array = string",
  ts_args_type = "body: B, options: TrimOptions",
  ts_return_type = "TrimJsonResult & { body: B extends string ? string : Uint8Array }"
)]
pub fn trim_with_placeholders_json<'env>(
  env: &'env Env,
  body: Unknown<'_>,
  options: Unknown<'_>,
) -> Result<TrimJsonResult<'env>> {
  trim_json(env, body, options, Strategy::WithPlaceholders)
}

fn trim_json<'env>(
  env: &'env Env,
  body: Unknown<'_>,
  options: Unknown<'_>,
  strategy: Strategy,
) -> Result<TrimJsonResult<'env>> {
  let throw = |e: CoreError| error::throw(env, e);
  let (mut op, format) = trim_op(env, options, strategy, false, None)?;
  let bad_body = |detail: String| throw(CoreError::new(ErrorKind::InvalidArgument, "body", detail));
  let state = crate::napi::base::instance::instance(env)?;
  let (cache, scratch) = (&mut state.cache, &mut state.scratch);
  let mut owned = String::new();
  // The string body's code units, when it has a lone surrogate.
  let mut lone_units: Option<Vec<u16>> = None;
  let borrowed: Uint8ArraySlice;
  let as_string = matches!(body.get_type(), Ok(ValueType::String));
  let text: &str = match body.get_type() {
    Ok(ValueType::String) => {
      let bytes = std::mem::take(&mut scratch.input);
      let read = crate::napi::base::strings::large_string(&body, bytes, &mut scratch.units);
      owned = read.map_err(|e| bad_body(format!("could not be read as UTF-8: {}", e.reason)))?;
      // A lone surrogate is U+FFFD in the UTF-8: keep the units to write it back as it was.
      if owned.contains('\u{FFFD}')
        && char::decode_utf16(scratch.units.iter().copied()).any(|c| c.is_err())
      {
        lone_units = Some(std::mem::take(&mut scratch.units));
      }
      scratch.bound_units();
      &owned
    }
    Ok(ValueType::Object) if body.is_typedarray().unwrap_or(false) => {
      borrowed = Uint8ArraySlice::from_unknown(body).map_err(|_| {
        bad_body("must be a string or a Uint8Array, got another typed array".into())
      })?;
      std::str::from_utf8(&borrowed).map_err(|e| bad_body(format!("is not UTF-8: {e}")))?
    }
    _ => {
      let got = js_type_name(&body);
      return Err(bad_body(format!("must be a string or a Uint8Array, got {got}")));
    }
  };
  let (parsed, recent) = cache.parse_body(text).map_err(throw)?;
  let (mut slot, shared) = match recent {
    Some((slot, shared)) => (Some(slot), shared),
    None => (None, 0),
  };
  let in_place = slot.as_ref().map_or(&[][..], |s| &s.messages[..shared]);
  let (messages, format) = read_body(&parsed, in_place, cache, format).map_err(throw)?;
  op.format = format;
  let refs: Vec<&Message> = messages.iter().map(|m| &m.cached.message).collect();
  // The messages found in place are the previous body's parsed ones: its kept layout extends.
  let kept = op.counts_in().map(|encoding| state.layout.analysed(&messages, encoding));
  let output = op.compute(&refs, kept);
  let plan = &output.trim.outcome.plan;
  // A message found in place that was rewritten the same way last time is written as then.
  // Both are in the order of the messages.
  let earlier = slot.as_mut().map(|s| std::mem::take(&mut s.rewrites)).unwrap_or_default();
  let mut earlier = earlier.into_iter().take_while(|w| w.index < shared).peekable();
  let mut rewrites = Vec::new();
  let mut written = std::mem::take(&mut scratch.output);
  let mut copies = Vec::new();
  parsed
    .write_with_copies(
      &mut written,
      plan,
      |out, i, raw, r| {
        while earlier.next_if(|w| w.index < i).is_some() {}
        let kept = earlier
          .next_if(|w| w.index == i)
          .filter(|w| w.format == format && w.content == r.content && w.results == r.results);
        let rewrite = match kept {
          Some(w) => w,
          None => Rewrite {
            index: i,
            format,
            content: r.content.clone(),
            results: r.results.clone(),
            json: rewrite(raw, r, format, i)?,
          },
        };
        out.push_str(&rewrite.json);
        rewrites.push(rewrite);
        Ok(())
      },
      lone_units.is_some().then_some(&mut copies),
    )
    .map_err(throw)?;
  drop(refs);
  cache.keep_recent(&parsed, messages, rewrites, slot.map(|slot| (slot, shared)));
  let indices = |f: fn(&Action) -> bool| -> Vec<u32> {
    (0..plan.actions().len()).filter(|&i| f(plan.action(i))).map(|i| i as u32).collect()
  };
  // Bytes are copied into a buffer V8 owns: an external buffer is freed by a finalizer that
  // Node runs on a later turn of the event loop, so a loop of calls that never yields held
  // every body it returned (8 GB after 60,000 calls on a 130 KB body).
  let body = if let Some(units) = &lone_units {
    // Kept messages and the text around the array are the string's own units, lone
    // surrogates included (see `written_units`).
    Either::A(env.create_string_utf16(written_units(&written, text, units, &copies))?)
  } else if as_string {
    let string = crate::napi::base::strings::new_large_string(env, &written, &mut scratch.units);
    scratch.bound_units();
    Either::A(string?)
  } else {
    Either::B(BufferSlice::copy_from(env, written.as_bytes())?)
  };
  let dropped = indices(|a| matches!(a, Action::Drop));
  let replaced = indices(|a| matches!(a, Action::Replace(_)));
  // The buffers are kept for the next call (a body's size again), but not a huge one.
  drop(parsed);
  scratch.keep_output(written);
  if as_string {
    scratch.keep_input(owned.into_bytes());
  }
  Ok(TrimJsonResult {
    body,
    dropped,
    replaced,
    saved_tokens: crate::napi::base::saturate(output.trim.outcome.saved_tokens),
    summary: output.summary.map(|s| s.text),
    over_budget: output.trim.outcome.over_budget,
    total_tokens: crate::napi::base::saturate(output.trim.outcome.total_tokens),
  })
}

/// The parsed messages of a body, in `format` or the detected one: the leading ones found in
/// place in a recent body (`in_place`), the others taken from the cache by their text when held
/// in that format, else parsed and cached.
fn read_body(
  body: &Body<'_>,
  in_place: &[BodyMessage],
  cache: &mut MessageCache,
  format: Option<Format>,
) -> CoreResult<(Vec<BodyMessage>, Format)> {
  let texts = body.messages();
  let mut held: Vec<Option<BodyMessage>> = Vec::with_capacity(texts.len());
  let mut views = Vec::with_capacity(texts.len());
  let mut signals = Vec::with_capacity(texts.len());
  for (i, text) in texts.iter().enumerate() {
    let found = match in_place.get(i) {
      Some(m) => {
        if !m.came_back {
          cache.came_back(m.key);
        }
        Some(BodyMessage { came_back: true, ..m.clone() })
      }
      None => {
        let key = ContentKey::of(text);
        cache.get_text(key, text).map(|e| BodyMessage {
          cached: Arc::clone(&e.cached),
          key,
          came_back: true,
        })
      }
    };
    match found {
      Some(m) => {
        signals.push(m.cached.signals);
        held.push(Some(m));
        views.push(None);
      }
      None => {
        let view = message_view(text, i)?;
        signals.push(Signals::of(&view));
        held.push(None);
        views.push(Some(view));
      }
    }
  }
  let format = match format {
    Some(f) => f,
    None => detect_from(&signals)?,
  };
  let mut out = Vec::with_capacity(texts.len());
  for (i, text) in texts.iter().enumerate() {
    if let Some(m) = held[i].take() {
      if m.cached.format == format {
        out.push(m);
        continue;
      }
    }
    // Held in another format (it came back: the main map), or new (probation).
    let seen = views[i].is_none();
    let view = match views[i].take() {
      Some(v) => v,
      None => message_view(text, i)?,
    };
    let message = format.parse_message(&view, i)?;
    format.check_message(&view, &message, i)?;
    let cached = Arc::new(Cached { format, signals: signals[i], message });
    let entry = BodyEntry { text: (*text).into(), cached: Arc::clone(&cached) };
    let key = ContentKey::of(text);
    cache.insert_text(key, Arc::new(entry), seen);
    out.push(BodyMessage { cached, key, came_back: seen });
  }
  Ok((out, format))
}
