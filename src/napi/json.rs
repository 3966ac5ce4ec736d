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
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use super::error;
use super::instance::{BodyEntry, Cached, ContentKey, MessageCache};
use super::priority::{trim_op, Strategy};
use super::read::js_type_name;
use super::task::Operation;
use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::format::{detect_from, Format, Signals};
use crate::model::json_body::{message_view, Body};
use crate::model::message::Message;
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
  pub body: Either<String, BufferSlice<'env>>,
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
  let owned: String;
  let borrowed: Uint8ArraySlice;
  let as_string = matches!(body.get_type(), Ok(ValueType::String));
  let text: &str = match body.get_type() {
    Ok(ValueType::String) => {
      owned = super::read::string_in_one_pass(&body)
        .map_err(|e| bad_body(format!("could not be read as UTF-8: {}", e.reason)))?;
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
  let parsed = Body::parse(text).map_err(throw)?;
  let cache = &mut super::instance::instance(env)?.cache;
  let (messages, format) = read_body(&parsed, cache, format).map_err(throw)?;
  op.format = format;
  let refs: Vec<&Message> = messages.iter().map(|c| &c.message).collect();
  let output = op.compute(&refs);
  let plan = &output.trim.outcome.plan;
  let written = parsed.write(plan, format).map_err(throw)?;
  let indices = |f: fn(&Action) -> bool| -> Vec<u32> {
    (0..plan.actions().len()).filter(|&i| f(plan.action(i))).map(|i| i as u32).collect()
  };
  // Bytes are copied into a buffer V8 owns: an external buffer is freed by a finalizer that
  // Node runs on a later turn of the event loop, so a loop of calls that never yields held
  // every body it returned (8 GB after 60,000 calls on a 130 KB body).
  let body = if as_string {
    Either::A(written)
  } else {
    Either::B(BufferSlice::copy_from(env, written.as_bytes())?)
  };
  Ok(TrimJsonResult {
    body,
    dropped: indices(|a| matches!(a, Action::Drop)),
    replaced: indices(|a| matches!(a, Action::Replace(_))),
    saved_tokens: super::saturate(output.trim.outcome.saved_tokens),
    summary: output.summary.map(|s| s.text),
    over_budget: output.trim.outcome.over_budget,
    total_tokens: super::saturate(output.trim.outcome.total_tokens),
  })
}

/// The parsed messages of a body, in `format` or the detected one: each taken from the cache
/// by its text when held in that format, else parsed and cached.
fn read_body(
  body: &Body<'_>,
  cache: &mut MessageCache,
  format: Option<Format>,
) -> CoreResult<(Vec<Arc<Cached>>, Format)> {
  let texts = body.messages();
  let mut keys = Vec::with_capacity(texts.len());
  let mut held = Vec::with_capacity(texts.len());
  let mut views = Vec::with_capacity(texts.len());
  let mut signals = Vec::with_capacity(texts.len());
  for (i, text) in texts.iter().enumerate() {
    let key = ContentKey::of(text);
    match cache.get_text(key, text) {
      Some(entry) => {
        signals.push(entry.cached.signals);
        held.push(Some(entry));
        views.push(None);
      }
      None => {
        let view = message_view(text, i)?;
        signals.push(Signals::of(&view));
        held.push(None);
        views.push(Some(view));
      }
    }
    keys.push(key);
  }
  let format = match format {
    Some(f) => f,
    None => detect_from(&signals)?,
  };
  let mut out = Vec::with_capacity(texts.len());
  for (i, text) in texts.iter().enumerate() {
    if let Some(entry) = held[i].take() {
      if entry.cached.format == format {
        out.push(Arc::clone(&entry.cached));
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
    let cached = Arc::new(Cached { format, signals: signals[i], message });
    let entry = BodyEntry { text: (*text).into(), cached: Arc::clone(&cached) };
    cache.insert_text(keys[i], Arc::new(entry), seen);
    out.push(cached);
  }
  Ok((out, format))
}
